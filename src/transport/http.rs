//! Streamable HTTP transport (contract §5), with the legacy HTTP+SSE fallback. Every message is
//! a POST; a request's reply is JSON or an SSE stream (parsed by `sse-stream`), and a server
//! request arriving on that stream is answered by a separate POST while it stays open. Inbound
//! messages go through one reader thread per connection, like stdio, so the resolver runs
//! inline there and never blocks the async runtime.

use super::http_client::{describe, runtime};
use super::{block_sigpipe_on_this_thread, sse, Transport};
use crate::conn::{lock, Conn, Failure, Outbound};
use crate::secrets::Secrets;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use serde_json::Value;
use sse_stream::SseByteStream;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// How often in a row a request's stream is resumed (GET + Last-Event-ID) without receiving an
/// event before the call fails (§5); the call's timeout bounds the whole as well.
const MAX_RESUMES: usize = 10;
/// The `retry:` a stream is resumed after when the server sent none.
const DEFAULT_RETRY: Duration = Duration::from_millis(1000);
/// Backoff of the standalone GET stream (§5): from this floor, doubling, to the cap.
const GET_BACKOFF_FLOOR: Duration = Duration::from_millis(250);
const GET_BACKOFF_CAP: Duration = Duration::from_secs(30);
/// Messages queued for the reader thread at most; past it notifications are dropped and
/// counted, and other messages wait (the stream is read no further), as a stdio pipe does.
const INBOX_CAPACITY: usize = 1024;
/// Redirects followed at most (same origin only, §9).
const MAX_REDIRECTS: usize = 8;

/// What the reader thread is handed.
enum Inbox {
    /// A message (JSON text), and the request whose stream carried it.
    Message(String, Option<u64>),
    FailOne(u64, Failure),
    FailAll(Failure),
}

enum Mode {
    /// Before the initialize POST has been answered.
    Unknown,
    Streamable,
    /// Legacy HTTP+SSE: POST to this endpoint, everything comes back on the GET stream.
    Legacy(Url),
}

struct State {
    session: Option<String>,
    version: Option<String>,
    mode: Mode,
    /// The `initialize` params we sent, to re-initialize after a 404 on an expired session.
    init_params: Option<String>,
    /// How many times the session was re-established after a 404 (requests remember the one
    /// they were sent with, so concurrent 404s re-initialize once).
    generation: u64,
}

/// A streamable-HTTP (or legacy SSE) server connection.
pub struct HttpTransport {
    me: Weak<HttpTransport>,
    conn: Weak<Conn>,
    url: Url,
    http: reqwest::Client,
    headers: HeaderMap,
    timeout: Duration,
    max_bytes: usize,
    /// Configured header values, masked in every server text we quote (§9).
    secrets: Secrets,
    inbox: Mutex<Option<mpsc::Sender<Inbox>>>,
    state: Mutex<State>,
    tasks: Mutex<HashMap<u64, AbortHandle>>,
    background: Mutex<Vec<AbortHandle>>,
    /// The standalone GET stream's task (replaced when the session is re-established).
    get_stream: Mutex<Option<AbortHandle>>,
    closed: AtomicBool,
    reader: Mutex<Option<JoinHandle<()>>>,
    /// Serialises re-initialization after a 404.
    reinit: tokio::sync::Mutex<()>,
    /// Set while a re-initialization runs: new requests wait for it (and its GET stream).
    reinitializing: AtomicBool,
}

/// A URL without userinfo or query, safe for messages (headers and queries may hold secrets).
pub fn redact(url: &Url) -> String {
    format!(
        "{}://{}{}{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port().map(|p| format!(":{p}")).unwrap_or_default(),
        url.path()
    )
}

/// Starts a connection to `url`; messages flow once the session sends `initialize`.
pub fn connect(
    url: &str,
    headers: &[(String, String)],
    net: &crate::config::NetSpec,
    timeout: Duration,
    max_bytes: usize,
    conn: &Arc<Conn>,
) -> Result<Arc<HttpTransport>, String> {
    let url = Url::parse(url).map_err(|e| format!("`url` is not a valid URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`url` must be http or https, got `{}`",
            url.scheme()
        ));
    }
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
    let http = super::http_client::shared(net)?;
    let (tx, mut rx) = mpsc::channel::<Inbox>(INBOX_CAPACITY);
    let t = Arc::new_cyclic(|me| HttpTransport {
        me: me.clone(),
        conn: Arc::downgrade(conn),
        url,
        http,
        headers: map,
        timeout,
        max_bytes,
        secrets: Secrets::of_headers(headers),
        inbox: Mutex::new(Some(tx)),
        state: Mutex::new(State {
            session: None,
            version: None,
            mode: Mode::Unknown,
            init_params: None,
            generation: 0,
        }),
        tasks: Mutex::new(HashMap::new()),
        background: Mutex::new(Vec::new()),
        get_stream: Mutex::new(None),
        closed: AtomicBool::new(false),
        reader: Mutex::new(None),
        reinit: tokio::sync::Mutex::new(()),
        reinitializing: AtomicBool::new(false),
    });
    conn.set_per_call_clock(true);
    conn.attach(t.clone());
    let reader_conn = conn.clone();
    let h = std::thread::Builder::new()
        .name(format!("tn-http-{}", conn.server))
        .spawn(move || {
            block_sigpipe_on_this_thread();
            let run = std::panic::AssertUnwindSafe(|| {
                while let Some(item) = rx.blocking_recv() {
                    match item {
                        Inbox::Message(text, carrier) => {
                            reader_conn.on_line_carried(text.as_bytes(), carrier)
                        }
                        Inbox::FailOne(id, f) => reader_conn.fail_request(id, f),
                        Inbox::FailAll(f) => reader_conn.fail(f),
                    }
                }
            });
            if std::panic::catch_unwind(run).is_err() {
                reader_conn.fail(Failure::Lost(
                    "internal error: the reader thread panicked (a bug in toolnexus)".into(),
                ));
            }
        })
        .map_err(|e| format!("cannot start the reader thread: {e}"))?;
    *lock(&t.reader) = Some(h);
    Ok(t)
}

impl Outbound for HttpTransport {
    fn send(&self, message: &str) -> Result<(), String> {
        if self.closed.load(Ordering::Acquire) {
            return Err("the connection is closed".into());
        }
        let v: Value = serde_json::from_str(message).map_err(|e| e.to_string())?;
        let method = v.get("method").and_then(Value::as_str).map(str::to_string);
        let id = if method.is_some() {
            v.get("id").and_then(Value::as_u64)
        } else {
            None
        };
        if method.as_deref() == Some("initialize") {
            lock(&self.state).init_params = v.get("params").map(crate::json::to_text);
        }
        let me = self.me.upgrade().ok_or("the connection is closed")?;
        let body = message.to_string();
        let must_precede = method.as_deref() == Some("notifications/initialized");
        if must_precede && tokio::runtime::Handle::try_current().is_err() {
            // In order: `notifications/initialized` must reach the server before the requests
            // that follow it, so it is delivered before send returns. Other notifications (a
            // cancellation after a timeout) go out in the background: the caller has waited
            // long enough.
            runtime().block_on(me.deliver(body, None, method));
            return Ok(());
        }
        let task = runtime().spawn(async move { me.deliver(body, id, method).await });
        if let Some(id) = id {
            lock(&self.tasks).insert(id, task.abort_handle());
            if task.is_finished() {
                lock(&self.tasks).remove(&id);
            }
        }
        Ok(())
    }

    fn abandon(&self, id: u64) {
        if let Some(t) = lock(&self.tasks).remove(&id) {
            t.abort();
        }
    }
}

/// Whether the message `text` is the response to our request `id`.
fn answers(text: &str, id: u64) -> bool {
    crate::jsonrpc::line_kind(text.as_bytes()) == crate::jsonrpc::LineKind::Response(id)
}

/// Whether `text` is a notification (a `method` and no `id`): the only kind of message that may
/// be dropped when the reader falls behind (§5).
fn is_notification(text: &str) -> bool {
    crate::scan::top_level(text.as_bytes())
        .is_some_and(|t| t.method.is_some() && t.id.is_none_or(|id| id == b"null"))
}

/// Follows redirects only within the configured origin (§9): configured headers and tokens are
/// never sent to another origin, and the failure names the origin that was refused.
pub(super) fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(Url::origin);
        if first.as_ref().is_some_and(|o| *o != attempt.url().origin()) {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(format!(
                "the server redirected to another origin ({to}); refused, so that configured headers never leave the configured origin"
            ))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// A pseudo-random fraction in [0, 1) for backoff jitter (no need for a real generator).
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// What the first GET of the standalone stream got (§5).
enum GetOpen {
    /// 200 with an event stream.
    Up(reqwest::Response),
    /// 405, or another 4xx: the server offers no stream; it is left alone.
    Refused,
    /// A network error or a 5xx: tried again later.
    Failed(String),
}

impl HttpTransport {
    /// Hands a message to the reader thread. When it is behind by [`INBOX_CAPACITY`] messages,
    /// a notification is dropped (and counted); anything else waits for room.
    async fn file(&self, item: Inbox) {
        let Some(tx) = lock(&self.inbox).clone() else {
            return;
        };
        match tx.try_send(item) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(item)) => {
                if let Inbox::Message(text, _) = &item {
                    if is_notification(text) {
                        if let Some(conn) = self.conn.upgrade() {
                            conn.count_dropped();
                        }
                        return;
                    }
                }
                let _ = tx.send(item).await;
            }
        }
    }

    /// `text` cut to its first bytes with every configured header value masked (§9).
    fn quote(&self, text: &str) -> String {
        cut(&self.secrets.mask(text.trim()), 200)
    }

    /// ": <first bytes of the body, masked>" for error messages, or "".
    async fn snippet(&self, resp: reqwest::Response) -> String {
        match tokio::time::timeout(Duration::from_secs(2), resp.bytes()).await {
            Ok(Ok(b)) if !b.is_empty() => format!(": {}", self.quote(&String::from_utf8_lossy(&b))),
            _ => String::new(),
        }
    }

    fn post(&self, url: Url, body: &str, with_session: bool) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .post(url)
            .headers(self.headers.clone())
            .header(ACCEPT, ACCEPT_BOTH)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        if with_session {
            req = self.session_headers(req);
        }
        req
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
    fn get_events(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let req = self
            .session_headers(
                self.http
                    .get(self.url.clone())
                    .headers(self.headers.clone()),
            )
            .header(ACCEPT, "text/event-stream");
        match last_event_id {
            Some(id) => req.header("last-event-id", id),
            None => req,
        }
    }

    async fn send_bounded(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, String> {
        match tokio::time::timeout(self.timeout, req.send()).await {
            Err(_) => Err(format!(
                "no HTTP response from {} within {} ms",
                redact(&self.url),
                self.timeout.as_millis()
            )),
            Ok(Err(e)) => Err(format!("{} ({})", describe(e), redact(&self.url))),
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// One outbound message, end to end; a request that fails is failed on its waiter.
    async fn deliver(self: Arc<Self>, body: String, id: Option<u64>, method: Option<String>) {
        let r = self.deliver_inner(&body, id, method.as_deref()).await;
        if let Some(id) = id {
            lock(&self.tasks).remove(&id);
            if let Err(e) = r {
                self.file(Inbox::FailOne(id, Failure::Lost(e))).await;
            }
        }
    }

    async fn deliver_inner(
        &self,
        body: &str,
        id: Option<u64>,
        method: Option<&str>,
    ) -> Result<(), String> {
        let is_init = method == Some("initialize");
        if id.is_some() && !is_init && self.reinitializing.load(Ordering::Acquire) {
            // The session is being re-established: wait until its GET stream is open again
            // (§5), so a question the server sends at the start of this call is not lost.
            let _ = tokio::time::timeout(self.timeout, self.reinit.lock()).await;
        }
        let mut retried = false;
        loop {
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
                return self.post_legacy(endpoint, body).await;
            }
            let resp = self
                .send_bounded(self.post(self.url.clone(), body, !is_init))
                .await?;
            let status = resp.status();
            if is_init && unknown && matches!(status.as_u16(), 400 | 404 | 405) {
                // Kept for the failure text: a 400 may carry the real reason (a JSON-RPC error
                // such as -32022 from a server of another protocol era).
                let first = format!("initialize got HTTP {status}{}", self.snippet(resp).await);
                self.open_legacy(&first).await?;
                continue;
            }
            if status == StatusCode::NOT_FOUND && had_session && !is_init && !retried {
                retried = true;
                self.reinitialize(generation).await?;
                continue;
            }
            if !status.is_success() {
                return Err(format!("HTTP {status}{}", self.snippet(resp).await));
            }
            if is_init {
                let mut st = lock(&self.state);
                st.session = session_of(&resp);
                st.mode = Mode::Streamable;
            }
            let Some(id) = id else {
                return Ok(()); // notifications and responses: 202, body ignored
            };
            return self.read_reply(resp, id).await;
        }
    }

    /// Reads the reply to request `id`: a JSON body, or an SSE stream resumed with
    /// `Last-Event-ID` when it closes before the response.
    async fn read_reply(&self, resp: reqwest::Response, id: u64) -> Result<(), String> {
        if is_sse(&resp) {
            return self.follow_stream(resp, id).await;
        }
        let bytes = self.read_body(resp).await?;
        let text = String::from_utf8_lossy(&bytes);
        if text.trim().is_empty() {
            return Err("the server sent an empty reply to a request".into());
        }
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            return Err(format!(
                "the server's reply is not JSON ({e}): {}",
                self.quote(&text)
            ));
        }
        let mut answered = false;
        for msg in sse::messages(&text) {
            answered |= answers(&msg, id);
            self.file(Inbox::Message(msg, Some(id))).await;
        }
        if answered {
            Ok(())
        } else {
            Err(format!(
                "the server's reply does not answer the request: {}",
                self.quote(&text)
            ))
        }
    }

    async fn read_body(&self, mut resp: reqwest::Response) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            match tokio::time::timeout(self.timeout, resp.chunk()).await {
                Err(_) => {
                    return Err(format!(
                        "the reply body stalled for {} ms",
                        self.timeout.as_millis()
                    ))
                }
                Ok(Err(e)) => return Err(describe(e)),
                Ok(Ok(None)) => return Ok(out),
                Ok(Ok(Some(chunk))) => {
                    if out.len() + chunk.len() > self.max_bytes {
                        return Err(format!(
                            "the reply is longer than maxMessageBytes ({} bytes)",
                            self.max_bytes
                        ));
                    }
                    out.extend_from_slice(&chunk);
                }
            }
        }
    }

    /// Reads a request's event stream until its response (§5): a stream that closes before it
    /// is resumed with GET + `Last-Event-ID` (the last event id seen on any of its streams)
    /// after exactly the server's `retry:`, again and again while streams end empty, at most
    /// [`MAX_RESUMES`] times in a row; the caller's timeout bounds it all.
    async fn follow_stream(&self, mut resp: reqwest::Response, id: u64) -> Result<(), String> {
        let mut last_id: Option<String> = None;
        let mut retry = DEFAULT_RETRY;
        let mut empty_resumes = 0;
        loop {
            let end = self.consume_sse(resp, Some(id)).await;
            if end.answered {
                return Ok(());
            }
            if self.closed.load(Ordering::Acquire) {
                return Err("the connection is closed".into());
            }
            if let Some(r) = end.retry {
                retry = Duration::from_millis(r);
            }
            if end.last_id.is_some() {
                last_id = end.last_id;
                empty_resumes = 0;
            } else if last_id.is_some() {
                empty_resumes += 1;
            }
            let Some(last) = last_id.as_deref() else {
                return Err(match end.error {
                    Some(e) => format!("the event stream failed before the response: {e}"),
                    None => "the server closed the event stream before the response".into(),
                });
            };
            if empty_resumes >= MAX_RESUMES {
                return Err(format!(
                    "the event stream was resumed {MAX_RESUMES} times in a row without receiving anything"
                ));
            }
            tokio::time::sleep(retry).await;
            resp = self.send_bounded(self.get_events(Some(last))).await?;
            if !resp.status().is_success() || !is_sse(&resp) {
                return Err(format!(
                    "resuming the event stream failed: HTTP {}{}",
                    resp.status(),
                    self.snippet(resp).await
                ));
            }
        }
    }

    /// Reads SSE events, filing each message (carried by `id`), until the response to `id`
    /// arrived or the stream ended.
    async fn consume_sse(&self, resp: reqwest::Response, id: Option<u64>) -> StreamEnd {
        let mut end = StreamEnd::default();
        let mut events = SseByteStream::new(sse::capped(resp.bytes_stream(), self.max_bytes));
        while let Some(item) = events.next().await {
            let ev = match item {
                Ok(ev) => ev,
                Err(sse_stream::Error::Body(inner)) => {
                    end.error = Some(inner.to_string());
                    break;
                }
                Err(e) => {
                    end.error = Some(e.to_string());
                    break;
                }
            };
            if let Some(i) = ev.id {
                end.last_id = Some(i);
            }
            if let Some(r) = ev.retry {
                end.retry = Some(r);
            }
            let Some(data) = ev.data else { continue };
            for msg in sse::messages(&data) {
                end.delivered = true;
                let ours = id.is_some_and(|id| answers(&msg, id));
                self.file(Inbox::Message(msg, id)).await;
                if ours {
                    end.answered = true;
                }
            }
            if end.answered {
                break;
            }
        }
        end
    }

    /// One GET for the standalone stream, bounded by the timeout.
    async fn open_get(&self) -> GetOpen {
        let resp = match self.send_bounded(self.get_events(None)).await {
            Ok(r) => r,
            Err(e) => return GetOpen::Failed(e),
        };
        let status = resp.status();
        if status.is_success() && is_sse(&resp) {
            GetOpen::Up(resp)
        } else if status.is_server_error() {
            GetOpen::Failed(format!("HTTP {status}{}", self.snippet(resp).await))
        } else {
            GetOpen::Refused
        }
    }

    /// Opens the standalone GET stream and waits for the server's answer (§5: servers drop
    /// requests they send while none is open, so it is open before the first call). Then it
    /// runs in the background, reconnecting with backoff. Returns a warning for the status
    /// when the stream could not be opened for another reason than the server offering none.
    async fn open_server_stream(self: Arc<Self>) -> Option<String> {
        let first = self.open_get().await;
        let warning = match &first {
            GetOpen::Failed(e) => Some(format!(
                "the standalone GET stream could not be opened ({e}); server messages outside a call may be lost until it reconnects"
            )),
            _ => None,
        };
        if let GetOpen::Refused = first {
            return None; // 405: the server offers no stream
        }
        let me = self.clone();
        let task = runtime().spawn(async move { me.run_get_stream(first).await });
        if let Some(old) = lock(&self.get_stream).replace(task.abort_handle()) {
            old.abort();
        }
        warning
    }

    /// The standalone stream's life (§5): read it; when it ends, reconnect after
    /// max(`retry:`, backoff) with jitter, the backoff doubling from 250 ms to 30 s and reset
    /// only by a stream that delivered a message; a server that refuses (4xx) is left alone.
    async fn run_get_stream(&self, mut next: GetOpen) {
        let mut backoff = GET_BACKOFF_FLOOR;
        let mut retry = Duration::ZERO;
        while !self.closed.load(Ordering::Acquire) {
            match next {
                GetOpen::Up(resp) => {
                    let end = self.consume_sse(resp, None).await;
                    if let Some(r) = end.retry {
                        retry = Duration::from_millis(r);
                    }
                    if end.delivered {
                        backoff = GET_BACKOFF_FLOOR;
                    }
                }
                GetOpen::Refused => return,
                GetOpen::Failed(_) => {}
            }
            let base = retry.max(backoff);
            tokio::time::sleep(base + base.mul_f64(jitter() / 4.0)).await;
            backoff = (backoff * 2).min(GET_BACKOFF_CAP);
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            next = self.open_get().await;
        }
    }

    /// Legacy HTTP+SSE (2024-11-05): GET the stream, wait for its `endpoint` event, then POST
    /// every message there; every reply comes back on the GET stream. `first` says what the
    /// streamable-HTTP attempt got, for the failure text.
    async fn open_legacy(&self, first: &str) -> Result<(), String> {
        let req = self
            .http
            .get(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "text/event-stream");
        let resp = self
            .send_bounded(req)
            .await
            .map_err(|e| format!("{first}, and the legacy HTTP+SSE fallback failed: {e}"))?;
        if !resp.status().is_success() || !is_sse(&resp) {
            return Err(format!(
                "{first}, and the legacy HTTP+SSE GET got HTTP {}",
                resp.status()
            ));
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        let me = self.me.upgrade().ok_or("the connection is closed")?;
        let task = runtime().spawn(async move {
            let mut tx = Some(tx);
            let mut events = SseByteStream::new(sse::capped(resp.bytes_stream(), me.max_bytes));
            while let Some(Ok(ev)) = events.next().await {
                let Some(data) = ev.data else { continue };
                if ev.event.as_deref() == Some("endpoint") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(data);
                    }
                    continue;
                }
                for msg in sse::messages(&data) {
                    me.file(Inbox::Message(msg, None)).await;
                }
            }
            if !me.closed.load(Ordering::Acquire) {
                me.file(Inbox::FailAll(Failure::Lost(
                    "the legacy HTTP+SSE event stream ended".into(),
                )))
                .await;
            }
        });
        lock(&self.background).push(task.abort_handle());
        let endpoint = match tokio::time::timeout(self.timeout, rx).await {
            Ok(Ok(e)) => e,
            _ => {
                return Err(format!(
                    "{first}; the legacy HTTP+SSE stream sent no `endpoint` event within {} ms",
                    self.timeout.as_millis()
                ))
            }
        };
        let endpoint = self
            .url
            .join(endpoint.trim())
            .map_err(|e| format!("the legacy `endpoint` event is not a URL: {e}"))?;
        if endpoint.origin() != self.url.origin() {
            // The configured headers (secrets) would go to another host.
            return Err(format!(
                "the legacy `endpoint` event names another origin ({}); refused",
                redact(&endpoint)
            ));
        }
        if let Some(conn) = self.conn.upgrade() {
            conn.set_per_call_clock(false);
        }
        lock(&self.state).mode = Mode::Legacy(endpoint);
        Ok(())
    }

    async fn post_legacy(&self, endpoint: Url, body: &str) -> Result<(), String> {
        let resp = self.send_bounded(self.post(endpoint, body, false)).await?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(format!(
                "HTTP {}{}",
                resp.status(),
                self.snippet(resp).await
            ))
        }
    }

    /// After a 404 on a request sent with session `generation`: initialize once more without a
    /// session id, unless another request already did (then just retry). The old id stays in
    /// use until the new one is known; the standalone GET stream is open again before any
    /// new request goes out (§5).
    async fn reinitialize(&self, generation: u64) -> Result<(), String> {
        let _one_at_a_time = self.reinit.lock().await;
        if lock(&self.state).generation != generation {
            return Ok(());
        }
        self.reinitializing.store(true, Ordering::Release);
        let r = self.reinitialize_locked().await;
        self.reinitializing.store(false, Ordering::Release);
        r
    }

    async fn reinitialize_locked(&self) -> Result<(), String> {
        let params = lock(&self.state)
            .init_params
            .clone()
            .unwrap_or_else(|| "{}".into());
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":"toolnexus-reinitialize","method":"initialize","params":{params}}}"#
        );
        let resp = self
            .send_bounded(self.post(self.url.clone(), &body, false))
            .await?;
        if !resp.status().is_success() {
            return Err(format!(
                "the session expired (HTTP 404) and re-initializing failed: HTTP {}{}",
                resp.status(),
                self.snippet(resp).await
            ));
        }
        let session = session_of(&resp);
        // The reply itself is not needed; read it so the server sees it consumed.
        if is_sse(&resp) {
            let mut events = SseByteStream::new(sse::capped(resp.bytes_stream(), self.max_bytes));
            while let Ok(Some(Ok(ev))) = tokio::time::timeout(self.timeout, events.next()).await {
                if ev
                    .data
                    .is_some_and(|d| d.contains("toolnexus-reinitialize"))
                {
                    break;
                }
            }
        } else {
            let _ = self.read_body(resp).await;
        }
        {
            let mut st = lock(&self.state);
            st.session = session;
            st.generation += 1;
        }
        let note = crate::jsonrpc::notification_text("notifications/initialized", None);
        let resp = self
            .send_bounded(self.post(self.url.clone(), &note, true))
            .await?;
        if !resp.status().is_success() {
            return Err(format!(
                "re-initializing failed at notifications/initialized: HTTP {}",
                resp.status()
            ));
        }
        if let Some(me) = self.me.upgrade() {
            let _ = me.open_server_stream().await;
        }
        Ok(())
    }
}

#[derive(Default)]
struct StreamEnd {
    answered: bool,
    /// At least one message arrived.
    delivered: bool,
    last_id: Option<String>,
    retry: Option<u64>,
    error: Option<String>,
}

fn is_sse(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

fn session_of(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let end = (0..=max)
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}…", &s[..end])
}

impl Transport for HttpTransport {
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
                    .headers(self.headers.clone()),
            );
            let bound = self.timeout.min(Duration::from_secs(2));
            let _ =
                runtime().block_on(async move { tokio::time::timeout(bound, req.send()).await });
        }
        lock(&self.inbox).take();
        if let Some(h) = lock(&self.reader).take() {
            let deadline = std::time::Instant::now() + Duration::from_secs(1);
            while !h.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }

    fn diagnostics(&self) -> String {
        String::new()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted() {
        let u = Url::parse("https://u:p@h.test:8443/mcp?k=secret#f").unwrap();
        assert_eq!(redact(&u), "https://h.test:8443/mcp");
    }

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("ééé", 3), "é…");
        assert_eq!(cut("abc", 5), "abc");
    }
}
