//! Streamable HTTP (contract §5): every message is a POST; a request's reply is JSON or an SSE
//! stream (parsed by `sse-stream`) resumed with `Last-Event-ID` when it closes early, and a
//! server request arriving on it is answered by a separate POST while it stays open. The
//! session id the server issues is echoed on every later request; a request the server answers
//! 404 on a session fails as expired, and the session above renews it. Requests go the direct
//! path ([`super::direct`]) when it applies, else a task of the async path; inbound messages of
//! the async path go through the connection's reader thread ([`super::inbox`]).

use super::inbox::{Inbox, INBOX_CAPACITY};
use super::{cut, redact, session_of, SESSION_HEADER};
use crate::net::explain_reqwest;
use crate::net::runtime;
use crate::request::RequestError;
use crate::transport::{Inbound, OutKind, Outgoing, Transport};
use crate::util::lock;
use crate::util::secrets::Secrets;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

const VERSION_HEADER: &str = "mcp-protocol-version";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// One outbound POST, with what the connection knew of it.
pub(super) struct Post {
    pub(super) body: String,
    pub(super) id: Option<u64>,
    /// The `initialize` request (legacy era).
    pub(super) opens_session: bool,
    pub(super) method: Option<String>,
    pub(super) routing: Option<Box<crate::transport::Routing>>,
    /// The request's timeout (the call's, §7; else the server's): writing it ends by then
    /// (issue 22), and a stream resumed after a `retry:` as long is not resumed.
    pub(super) timeout: Duration,
}

pub(super) enum Mode {
    /// MCP 2026-07-28: no session, the modern headers, no resumption (§6).
    Modern,
    /// Before the initialize POST has been answered.
    Unknown,
    Streamable,
    /// Legacy HTTP+SSE: POST to this endpoint, everything comes back on the GET stream.
    Legacy(Url),
}

pub(super) struct State {
    pub(super) session: Option<String>,
    pub(super) version: Option<String>,
    pub(super) mode: Mode,
    /// How many sessions the server has given us; a request remembers the one it was sent on
    /// (so concurrent 404s renew it once).
    pub(super) generation: u64,
}

/// A streamable-HTTP (or legacy SSE) server connection.
pub(crate) struct HttpTransport {
    pub(super) me: Weak<HttpTransport>,
    /// Where inbound messages and failures go (the connection above, issue 24).
    pub(super) inbound: Weak<dyn Inbound>,
    pub(super) url: Url,
    pub(super) http: reqwest::Client,
    pub(super) headers: HeaderMap,
    /// Authorization (§8): the bearer token, and what to do on 401/403.
    pub(super) auth: Arc<crate::auth::Auth>,
    pub(super) timeout: Duration,
    pub(super) max_bytes: usize,
    /// Configured header values, masked in every server text we quote (§9).
    secrets: Secrets,
    pub(super) inbox: Mutex<Option<mpsc::Sender<Inbox>>>,
    pub(super) state: Mutex<State>,
    tasks: Mutex<HashMap<u64, AbortHandle>>,
    pub(super) background: Mutex<Vec<AbortHandle>>,
    /// The standalone GET stream's task (replaced when the session is renewed).
    pub(super) get_stream: Mutex<Option<AbortHandle>>,
    pub(super) closed: AtomicBool,
    /// The reader thread, and what tells that it ended (its sender is dropped when it does):
    /// disconnect waits on that rather than polling (§3).
    reader: Mutex<Option<super::inbox::Reader>>,
    /// The direct path, for plain HTTP without a proxy (issue 18).
    pub(super) direct: Option<super::pool::Direct>,
}

/// `url` checked to be an http or https URL (`url` of a remote server's config entry, §2).
pub(crate) fn parse_url(url: &str) -> Result<Url, String> {
    let url = Url::parse(url).map_err(|e| format!("`url` is not a valid URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`url` must be http or https, got `{}`",
            url.scheme()
        ));
    }
    Ok(url)
}

/// A remote server as the session hands it to the transport: where it is, its configured
/// headers and network settings, the HTTP client for those, and the authorizer the session
/// built for it (§8).
pub(crate) struct Remote<'a> {
    pub(crate) server: &'a str,
    pub(crate) url: Url,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) net: &'a crate::config::NetSpec,
    pub(crate) http: reqwest::Client,
    pub(crate) auth: Arc<crate::auth::Auth>,
}

/// Starts a connection to a remote server; messages flow once the session sends `initialize`.
pub(crate) fn connect(
    remote: Remote<'_>,
    bounds: super::Bounds,
    inbound: &Arc<dyn Inbound>,
) -> Result<Arc<HttpTransport>, String> {
    let super::Bounds {
        timeout,
        max_bytes,
        pool_idle,
    } = bounds;
    let Remote {
        server,
        url,
        headers,
        net,
        http,
        auth,
    } = remote;
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("`headers.{k}` is not a valid HTTP header name"))?;
        // Never echo the value: it came from ${ENV} and may be a secret.
        let mut value = HeaderValue::from_str(v)
            .map_err(|_| format!("the value of `headers.{k}` is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    let (tx, rx) = mpsc::channel::<Inbox>(INBOX_CAPACITY);
    let direct = super::pool::Direct::for_url(&url, net, pool_idle);
    let t = Arc::new_cyclic(|me| HttpTransport {
        me: me.clone(),
        inbound: Arc::downgrade(inbound),
        url,
        http,
        headers: map,
        auth,
        timeout,
        max_bytes,
        secrets: Secrets::of_headers(headers),
        inbox: Mutex::new(Some(tx)),
        state: Mutex::new(State {
            session: None,
            version: None,
            mode: Mode::Unknown,
            generation: 0,
        }),
        tasks: Mutex::new(HashMap::new()),
        background: Mutex::new(Vec::new()),
        get_stream: Mutex::new(None),
        closed: AtomicBool::new(false),
        reader: Mutex::new(None),
        direct,
    });
    let reader = super::inbox::start_reader(server, inbound, rx)?;
    *lock(&t.reader) = Some(reader);
    Ok(t)
}

impl HttpTransport {
    /// Sends one message: on the direct path when it applies (requests; answers given while
    /// reading a reply there; ordered messages), else requests and background messages on a
    /// task of their own, an ordered message before returning.
    fn dispatch(&self, msg: &Outgoing<'_>) -> Result<(), String> {
        if self.closed.load(Ordering::Acquire) {
            return Err("the connection is closed".into());
        }
        let timeout = msg.timeout.unwrap_or(self.timeout);
        let mut out = Post {
            body: msg.text.to_string(),
            id: None,
            opens_session: false,
            method: None,
            routing: msg.routing.cloned().map(Box::new),
            timeout,
        };
        let ordered = match msg.kind {
            OutKind::Request { id, method } => {
                out.id = Some(id);
                out.opens_session = method == "initialize";
                out.method = Some(method.to_string());
                false
            }
            OutKind::Notification { method, ordered } => {
                out.method = Some(method.to_string());
                ordered
            }
            OutKind::Response { ordered } => ordered,
        };
        let direct = out.id.is_some() || ordered || super::direct::answers_direct();
        if direct {
            out = match self.send_direct(out, ordered) {
                Ok(()) => return Ok(()),
                Err(out) => out,
            };
        }
        if ordered && tokio::runtime::Handle::try_current().is_err() {
            let me = self.me.upgrade().ok_or("the connection is closed")?;
            runtime().block_on(me.deliver(out));
            return Ok(());
        }
        // Other notifications (a cancellation after a timeout) go out in the background: the
        // caller has waited long enough.
        self.spawn_deliver(out);
        Ok(())
    }

    /// Sends `out` on a task of its own (a request's is aborted when the request is given up).
    pub(super) fn spawn_deliver(&self, out: Post) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        let id = out.id;
        let task = runtime().spawn(async move { me.deliver(out).await });
        if let Some(id) = id {
            self.track(id, &task);
        }
    }

    /// Remembers request `id`'s task, so that giving the request up aborts it.
    fn track(&self, id: u64, task: &tokio::task::JoinHandle<()>) {
        lock(&self.tasks).insert(id, task.abort_handle());
        if task.is_finished() {
            lock(&self.tasks).remove(&id);
        }
    }

    /// Resumes request `id`'s event stream after `last_id` on a task of its own (§5).
    pub(super) fn spawn_resume(
        &self,
        id: u64,
        last_id: Option<String>,
        retry: Option<u64>,
        timeout: Duration,
    ) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        let task = runtime().spawn(async move {
            let r = me.follow(None, id, last_id, retry, timeout).await;
            lock(&me.tasks).remove(&id);
            if let Err(e) = r {
                me.file(Inbox::FailOne(id, RequestError::Lost(e))).await;
            }
        });
        self.track(id, &task);
    }

    /// `text` cut to its first bytes with every configured header value masked (§9).
    pub(super) fn quote(&self, text: &str) -> String {
        cut(&self.auth.mask(&self.secrets.mask(text.trim())), 200)
    }

    /// ": <first bytes of the body, masked>" for error messages, or "".
    pub(super) async fn snippet(&self, resp: reqwest::Response) -> String {
        match tokio::time::timeout(Duration::from_secs(2), resp.bytes()).await {
            Ok(Ok(b)) if !b.is_empty() => format!(": {}", self.quote(&String::from_utf8_lossy(&b))),
            _ => String::new(),
        }
    }

    pub(super) fn post(&self, url: Url, body: &str, with_session: bool) -> reqwest::RequestBuilder {
        let headers = self.request_headers("POST", &url);
        let mut req = self
            .http
            .post(url)
            .headers(headers)
            .header(ACCEPT, ACCEPT_BOTH)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if with_session {
            req = self.session_headers(req);
        }
        req
    }

    /// The configured headers, plus the authorization of this request when there is a token
    /// (§8: a bearer token, or a DPoP token and a proof for `method` and `url`); both only ever
    /// go to the server's origin (§9).
    pub(super) fn request_headers(&self, method: &str, url: &Url) -> HeaderMap {
        let mut h = self.headers.clone();
        for (k, v) in self.auth.authorization(method, url) {
            h.insert(k, v);
        }
        h
    }

    fn session_headers(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let st = lock(&self.state);
        if let Some(s) = &st.session {
            req = req.header(SESSION_HEADER, s);
        }
        if let Some(v) = &st.version {
            req = req.header(VERSION_HEADER, v);
        }
        req
    }

    /// A GET for an event stream on the session, resuming after `last_event_id` when given.
    pub(super) fn get_events(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let req = self
            .session_headers(
                self.http
                    .get(self.url.clone())
                    .headers(self.request_headers("GET", &self.url)),
            )
            .header(ACCEPT, "text/event-stream");
        match last_event_id {
            Some(id) => req.header("last-event-id", id),
            None => req,
        }
    }

    /// A 401/403 runs authorization (§8): true when the request should be sent again, an error
    /// when the login failed; false for any other status.
    pub(super) async fn denied(
        &self,
        resp: &reqwest::Response,
        sent_with: u64,
        rounds: &mut crate::auth::Rounds,
        id: Option<u64>,
    ) -> Result<bool, RequestError> {
        let status = resp.status().as_u16();
        if !matches!(status, 401 | 403) {
            return Ok(false);
        }
        let challenge = resp
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let nonce = resp
            .headers()
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        match self
            .auth
            .on_denied(status, challenge, nonce, sent_with, rounds, id)
            .await
        {
            crate::auth::Denied::Retry => Ok(true),
            crate::auth::Denied::Fail(why) => Err(RequestError::Auth(why)),
            crate::auth::Denied::Pass => Ok(false),
        }
    }

    pub(super) async fn send_bounded(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, String> {
        match tokio::time::timeout(self.timeout, req.send()).await {
            Err(_) => Err(format!(
                "no HTTP response from {} within {} ms",
                redact(&self.url),
                self.timeout.as_millis()
            )),
            Ok(Err(e)) => Err(format!("{} ({})", explain_reqwest(e), redact(&self.url))),
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// One outbound message, end to end; a request that fails is failed on its waiter.
    pub(super) async fn deliver(self: Arc<Self>, out: Post) {
        let id = out.id;
        let r = if matches!(lock(&self.state).mode, Mode::Modern) {
            self.deliver_modern(&out).await
        } else {
            self.deliver_inner(&out).await
        };
        if let Some(id) = id {
            lock(&self.tasks).remove(&id);
            if let Err(e) = r {
                self.file(Inbox::FailOne(id, e)).await;
            }
        }
    }

    /// `opens_session`: the `initialize` request, sent without a session id; its reply's
    /// `Mcp-Session-Id` is the session from then on. Before any session, a 400/404/405 to it
    /// means an HTTP+SSE server (the fallback, [`super::legacy_sse`]).
    async fn deliver_inner(&self, out: &Post) -> Result<(), RequestError> {
        let (body, id, opens_session) = (out.body.as_str(), out.id, out.opens_session);
        let mut rounds = crate::auth::Rounds::default();
        loop {
            self.auth.before_send().await.map_err(RequestError::Auth)?;
            let sent_with = self.auth.generation();
            let (legacy, unknown, had_session, generation) = {
                let st = lock(&self.state);
                let legacy = match &st.mode {
                    Mode::Legacy(ep) => Some(ep.clone()),
                    _ => None,
                };
                (
                    legacy,
                    matches!(st.mode, Mode::Unknown),
                    st.session.is_some(),
                    st.generation,
                )
            };
            if let Some(endpoint) = legacy {
                return self
                    .post_legacy(endpoint, body)
                    .await
                    .map_err(RequestError::Lost);
            }
            let resp = self
                .send_bounded(self.post(self.url.clone(), body, !opens_session))
                .await
                .map_err(RequestError::Lost)?;
            let status = resp.status();
            if self.denied(&resp, sent_with, &mut rounds, id).await? {
                continue;
            }
            if opens_session && unknown && matches!(status.as_u16(), 400 | 404 | 405) {
                // Kept for the failure text: a 400 may carry the real reason (a JSON-RPC error
                // such as -32022 from a server of another protocol era).
                let first = format!("initialize got HTTP {status}{}", self.snippet(resp).await);
                self.open_legacy(&first).await.map_err(RequestError::Lost)?;
                continue;
            }
            if status == StatusCode::NOT_FOUND && had_session && !opens_session {
                return Err(RequestError::SessionExpired(generation));
            }
            if !status.is_success() {
                return Err(RequestError::Lost(format!(
                    "HTTP {status}{}",
                    self.snippet(resp).await
                )));
            }
            if opens_session {
                let mut st = lock(&self.state);
                st.session = session_of(&resp);
                st.mode = Mode::Streamable;
                st.generation += 1;
            }
            let Some(id) = id else {
                return Ok(()); // notifications and responses: 202, body ignored
            };
            return self
                .read_reply(resp, id, Some(out.timeout))
                .await
                .map_err(RequestError::Lost);
        }
    }
}

impl Transport for HttpTransport {
    fn send(&self, msg: &Outgoing<'_>) -> Result<(), String> {
        self.dispatch(msg)
    }

    fn abandon(&self, id: u64) {
        if let Some(t) = lock(&self.tasks).remove(&id) {
            t.abort();
        }
        if let Some(d) = &self.direct {
            d.end(id);
        }
    }

    fn drive(&self, id: u64, left: Duration) -> bool {
        self.drive_direct(id, left)
    }

    fn interrupt(&self, id: u64) {
        if let Some(d) = &self.direct {
            d.end(id);
        }
    }

    fn set_era(&self, era: crate::transport::Era) {
        let mut st = lock(&self.state);
        match era {
            crate::transport::Era::Modern => st.mode = Mode::Modern,
            crate::transport::Era::Legacy => {
                if matches!(st.mode, Mode::Modern) {
                    st.mode = Mode::Unknown;
                }
            }
        }
    }

    fn cancels_by_closing(&self) -> bool {
        matches!(lock(&self.state).mode, Mode::Modern)
    }

    fn clock_per_call(&self) -> bool {
        !matches!(lock(&self.state).mode, Mode::Legacy(_))
    }

    fn carries_server_requests(&self) -> bool {
        let st = lock(&self.state);
        match st.mode {
            Mode::Legacy(_) => true,
            Mode::Streamable => st.session.is_some(),
            Mode::Modern | Mode::Unknown => false,
        }
    }

    fn session_generation(&self) -> u64 {
        lock(&self.state).generation
    }

    fn shutdown(&self, _grace: Duration) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for (_, t) in lock(&self.tasks).drain() {
            t.abort();
        }
        for t in lock(&self.background).drain(..) {
            t.abort();
        }
        if let Some(t) = lock(&self.get_stream).take() {
            t.abort();
        }
        if let Some(d) = &self.direct {
            d.close();
        }
        let session = {
            let st = lock(&self.state);
            match st.mode {
                Mode::Streamable => st.session.clone(),
                _ => None,
            }
        };
        if session.is_some() {
            // With the session id and the protocol version, like every request after initialize.
            let req = self.session_headers(
                self.http
                    .delete(self.url.clone())
                    .headers(self.request_headers("DELETE", &self.url)),
            );
            let bound = self.timeout.min(Duration::from_secs(2));
            let _ =
                runtime().block_on(async move { tokio::time::timeout(bound, req.send()).await });
        }
        lock(&self.inbox).take();
        let reader = lock(&self.reader).take();
        if let Some((h, ended)) = reader {
            // Bounded: a resolver may still hold the reader thread.
            let _ = ended.recv_timeout(Duration::from_secs(1));
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }

    fn negotiated(&self, version: &str) {
        lock(&self.state).version = Some(version.to_string());
    }

    fn open_server_stream(&self) -> Option<String> {
        if !matches!(lock(&self.state).mode, Mode::Streamable) {
            return None; // legacy HTTP+SSE: its one stream is already open
        }
        let me = self.me.upgrade()?;
        runtime().block_on(me.open_server_stream())
    }
}
