//! The async HTTP client (reqwest/hyper, on the runtime; contract §5, §6): what the direct
//! client does not take (`initialize` and the era probe, a redirect, a stream to resume, a
//! server whose connection could not be opened, a proxy) goes out here, each message on a task
//! of its own. Its status is judged by [`protocol::status_verdict`], the rules the direct client applies
//! too; its reply is read in [`super::async_reply`]. Before any session, `initialize` refused
//! with 400/404/405 switches the connection to the HTTP+SSE transport ([`super::legacy_sse`]).

use super::inbox::Inbox;
use super::legacy_sse::LegacySse;
use super::protocol::{self, Post, Sent, StatusVerdict};
use super::transport::{Dialect, HttpTransport};
use crate::net::{explain_reqwest, runtime};
use crate::request::RequestError;
use crate::util::{lock, redact};
use std::sync::Arc;
use std::time::Duration;

impl HttpTransport {
    /// Sends `out` on a task of its own (a request's is aborted when the request is given up).
    pub(super) fn spawn_deliver(&self, out: Post) {
        if self.is_closed() {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        let id = out.id;
        let task = runtime().spawn(async move { me.deliver(out).await });
        if let Some(id) = id {
            self.track(id, &task);
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
        if self.is_closed() {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        let task = runtime().spawn(async move {
            let r = me.follow(None, id, last_id, retry, timeout).await;
            lock(&me.tasks).remove(&id);
            if let Err(e) = r {
                me.filing
                    .file(Inbox::FailOne(id, RequestError::Lost(e)))
                    .await;
            }
        });
        self.track(id, &task);
    }

    /// ": <first bytes of the body, masked>" for error messages, or "".
    pub(super) async fn snippet(&self, resp: reqwest::Response) -> String {
        match tokio::time::timeout(Duration::from_secs(2), resp.bytes()).await {
            Ok(Ok(b)) if !b.is_empty() => format!(": {}", self.quote(&String::from_utf8_lossy(&b))),
            _ => String::new(),
        }
    }

    /// A GET for an event stream on the session, resuming after `last_event_id` when given.
    pub(super) fn get_events(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let req = self
            .http
            .get(self.url.clone())
            .headers(self.session_headers("GET"))
            .header(reqwest::header::ACCEPT, "text/event-stream");
        match last_event_id {
            Some(id) => req.header("last-event-id", id),
            None => req,
        }
    }

    /// A 401/403 runs authorization (§8): true when the request should be sent again, an error
    /// when the login failed; false when authorization is not the matter.
    pub(super) async fn denied(
        &self,
        resp: &reqwest::Response,
        sent_with: u64,
        rounds: &mut crate::auth::Refusals,
        id: Option<u64>,
    ) -> Result<bool, RequestError> {
        let header = |name| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let challenge = header(reqwest::header::WWW_AUTHENTICATE.as_str());
        let nonce = header("dpop-nonce");
        match self
            .auth
            .on_denied(
                resp.status().as_u16(),
                challenge,
                nonce,
                sent_with,
                rounds,
                id,
            )
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
            Ok(Ok(r)) => {
                self.auth.note_nonce(super::header_text(&r, "dpop-nonce"));
                Ok(r)
            }
        }
    }

    /// One outbound message, end to end; a request that fails is failed on its waiter.
    pub(super) async fn deliver(self: Arc<Self>, out: Post) {
        let id = out.id;
        let r = self.post(&out).await;
        if let Some(id) = id {
            lock(&self.tasks).remove(&id);
            if let Err(e) = r {
                self.filing.file(Inbox::FailOne(id, e)).await;
            }
        }
    }

    /// One POST in the current era (§5, §6), its status judged as the direct client judges it:
    /// a 401/403 runs authorization (§8) and the POST goes again; `initialize` (sent without a
    /// session id; its reply's `Mcp-Session-Id` is the session from then on) refused before any
    /// session with 400/404/405 switches to HTTP+SSE; a 404 on a session means it expired; a
    /// modern server's error status may carry the answer.
    async fn post(&self, out: &Post) -> Result<(), RequestError> {
        let mut rounds = crate::auth::Refusals::default();
        loop {
            if let Some(legacy) = self.legacy.get() {
                return legacy.post(&out.body, out.id).await;
            }
            self.auth.before_send().await.map_err(RequestError::Auth)?;
            let sent_with = self.auth.generation();
            let sent = {
                let st = lock(&self.state);
                Sent {
                    request: out.id.is_some(),
                    opens_session: out.opens_session,
                    unknown: matches!(st.mode, Dialect::Unknown),
                    modern: matches!(st.mode, Dialect::Modern),
                    had_session: st.session.is_some() && !out.opens_session,
                }
            };
            let generation = lock(&self.state).generation;
            let headers = self.post_headers(out, sent.modern)?;
            let req = self
                .http
                .post(self.url.clone())
                .headers(headers)
                .body(out.body.clone());
            let resp = self.send_bounded(req).await.map_err(RequestError::Lost)?;
            let status = resp.status().as_u16();
            match protocol::status_verdict(status, &sent) {
                StatusVerdict::Denied => {
                    if self.denied(&resp, sent_with, &mut rounds, out.id).await? {
                        continue;
                    }
                    return self.error_status(resp, out.id, sent.modern).await;
                }
                StatusVerdict::NotStreamable => {
                    // Kept for the failure text: a 400 may carry the real reason (a JSON-RPC
                    // error such as -32022 from a server of another protocol era).
                    let first = format!(
                        "initialize got HTTP {}{}",
                        resp.status(),
                        self.snippet(resp).await
                    );
                    let legacy = LegacySse::open(self.legacy_parts(), Some(&first))
                        .await
                        .map_err(RequestError::Lost)?;
                    let _ = self.legacy.set(legacy);
                    lock(&self.state).mode = Dialect::Legacy;
                    continue;
                }
                StatusVerdict::SessionExpired => {
                    return Err(RequestError::SessionExpired(generation))
                }
                StatusVerdict::Taken => return Ok(()), // notifications and responses: body ignored
                StatusVerdict::Redirect | StatusVerdict::Error => {
                    return self.error_status(resp, out.id, sent.modern).await
                }
                StatusVerdict::Read => {}
            }
            if out.opens_session {
                let mut st = lock(&self.state);
                st.session = super::session_of(&resp);
                st.mode = Dialect::Streamable;
                st.generation += 1;
            }
            let Some(id) = out.id else {
                return Ok(());
            };
            // MCP 2026-07-28 has no resumption, and a call is never re-sent (§6).
            let resumable = (!sent.modern).then_some(out.timeout);
            return self
                .read_reply(resp, id, resumable)
                .await
                .map_err(RequestError::Lost);
        }
    }

    /// An error status: the failure, quoting the body; a modern server answers with an error
    /// status and a JSON-RPC body, which is then the answer (§6).
    async fn error_status(
        &self,
        resp: reqwest::Response,
        id: Option<u64>,
        modern: bool,
    ) -> Result<(), RequestError> {
        let status = resp.status().as_u16();
        let (Some(id), true) = (id, modern) else {
            let quoted = self.snippet(resp).await;
            let quoted = quoted.strip_prefix(": ").unwrap_or("");
            return Err(RequestError::Lost(protocol::status_error(status, quoted)));
        };
        let mut body = protocol::ReplyBody::new(id, false, self.max_bytes);
        let bytes = self.read_body(resp).await.unwrap_or_default();
        let _ = body.feed(&bytes, &mut Vec::new());
        let (answering, text) = body.answering_messages();
        if answering.is_empty() {
            let quoted = if text.trim().is_empty() {
                String::new()
            } else {
                self.quote(&text)
            };
            return Err(RequestError::Lost(protocol::status_error(status, &quoted)));
        }
        for msg in answering {
            self.filing.file(Inbox::Message(msg, Some(id))).await;
        }
        Ok(())
    }

    pub(super) fn legacy_parts(&self) -> super::legacy_sse::Parts {
        super::legacy_sse::Parts {
            url: self.url.clone(),
            http: self.http.clone(),
            headers: self.headers.clone(),
            auth: self.auth.clone(),
            timeout: self.timeout,
            max_bytes: self.max_bytes,
            filing: self.filing.clone(),
            closed: self.closed.clone(),
            quote: {
                let me = self.me.clone();
                Box::new(move |t: &str| me.upgrade().map(|m| m.quote(t)).unwrap_or_default())
            },
        }
    }
}
