//! Reading a reply on the direct path (contract §5, §6): the head, then a JSON body or an event
//! stream whose messages are filed as they come (server requests to the reader thread, the
//! rest inline), and the status judged as the async path judges it: a 404 on a session means
//! it expired, a 401/403 runs authorization (§8), a modern server's error status may carry the
//! answer (§6), anything else fails the request with the server's words, masked (§9).

use super::direct::{Exchange, Step};
use super::inbox::Inbox;
use super::redact;
use super::reply::answers;
use super::streamable::HttpTransport;
use super::wire::{Body, Framing, Head};
use crate::jsonrpc::LineKind;
use crate::net::runtime;
use crate::request::RequestError;
use crate::transport::sse::{self, EventParser};
use std::io::ErrorKind;
use std::time::{Duration, Instant};

/// How long the rest of a stream is awaited once its response arrived (servers end the stream
/// right after it, §5); past it the connection is closed rather than kept.
const TAIL: Duration = Duration::from_millis(5);

impl HttpTransport {
    /// Reads until messages were filed, the reply ended, or `left` passed; once the response
    /// is in, only the end of its stream is awaited (at most [`TAIL`]).
    pub(super) fn read_on(&self, ex: &mut Exchange, id: u64, left: Duration) -> Step {
        let deadline = Instant::now() + left;
        let mut tail: Option<Instant> = None;
        loop {
            let until = tail.unwrap_or(deadline);
            let left = until.saturating_duration_since(Instant::now());
            let step = self.read_step(ex, Some(id), left);
            match step {
                Step::Filed | Step::More if ex.answered => {
                    let t = *tail.get_or_insert_with(|| Instant::now() + TAIL);
                    if Instant::now() >= t {
                        return step;
                    }
                }
                Step::More if !left.is_zero() => {}
                other => return other,
            }
        }
    }

    /// Processes what is buffered, else reads once (at most `left`).
    pub(super) fn read_step(&self, ex: &mut Exchange, id: Option<u64>, left: Duration) -> Step {
        let step = self.process(ex, id);
        if !matches!(step, Step::More) || left.is_zero() {
            return step;
        }
        ex.sock.read_timeout(left);
        let mut chunk = [0u8; 16 * 1024];
        match ex.sock.read(&mut chunk) {
            Ok(0) => self.at_eof(ex, id),
            Ok(n) => {
                ex.buf.extend_from_slice(&chunk[..n]);
                self.process(ex, id)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                Step::More
            }
            Err(e) => self.stream_failed(ex, &e.to_string()),
        }
    }

    /// The connection closed.
    fn at_eof(&self, ex: &mut Exchange, id: Option<u64>) -> Step {
        match ex.body.as_mut().map(Body::eof) {
            Some(Ok(())) => self.body_done(ex, id, false),
            Some(Err(e)) => self.stream_failed(ex, &e),
            None => Step::Fail(RequestError::Lost(format!(
                "{} ({})",
                self.quote(&ex.heads.at_eof(&ex.buf)),
                redact(&self.url)
            ))),
        }
    }

    /// The reply broke off (`why`).
    fn stream_failed(&self, ex: &mut Exchange, why: &str) -> Step {
        if ex.answered {
            return Step::Done { reuse: false };
        }
        if ex.sse.is_some() {
            return self.stream_ended(ex, Some(why));
        }
        Step::Fail(RequestError::Lost(format!(
            "reading the body failed: {why} ({})",
            redact(&self.url)
        )))
    }

    /// What the reply carried is refused (`why`: an event past maxMessageBytes, or broken
    /// framing): the request fails saying so, without a resume (it would bring the same again),
    /// and the connection is not reused.
    fn refused(&self, ex: &Exchange, why: &str) -> Step {
        if ex.answered {
            return Step::Done { reuse: false };
        }
        let why = self.quote(why);
        Step::Fail(RequestError::Lost(if ex.sse.is_some() {
            format!("the event stream failed before the response: {why}")
        } else {
            format!("reading the body failed: {why} ({})", redact(&self.url))
        }))
    }

    /// An event stream ended without the response: resumed on the async path when it can be
    /// (§5), else the call fails (MCP 2026-07-28 has no resumption, §6).
    fn stream_ended(&self, ex: &Exchange, error: Option<&str>) -> Step {
        if ex.modern {
            return Step::Fail(RequestError::Lost(
                "the response stream ended before the response (MCP 2026-07-28 has no resumption; the call is not sent again)".into(),
            ));
        }
        if ex.last_id.is_some() {
            return Step::Resume;
        }
        Step::Fail(RequestError::Lost(match error {
            Some(e) => format!("the event stream failed before the response: {e}"),
            None => "the server closed the event stream before the response".into(),
        }))
    }

    /// Takes what the buffer holds: the head, then the body's messages.
    fn process(&self, ex: &mut Exchange, id: Option<u64>) -> Step {
        if ex.head.is_none() {
            match ex.heads.take(&mut ex.buf) {
                Ok(None) => return Step::More,
                Err(e) => return Step::Fail(RequestError::Lost(self.quote(&e))),
                Ok(Some(head)) => {
                    if let Some(step) = self.on_head(ex, &head, id) {
                        return step;
                    }
                    ex.body = Some(Body::new(head.framing));
                    if head.sse && (200..300).contains(&head.status) && id.is_some() {
                        ex.sse = Some(EventParser::new(self.max_bytes));
                    }
                    ex.head = Some(head);
                }
            }
        }
        let Some(body) = ex.body.as_mut() else {
            return Step::More;
        };
        let start = ex.decoded.len();
        let used = match body.decode(&ex.buf, &mut ex.decoded) {
            Ok(n) => n,
            // Broken framing: the connection is unusable, and nothing says a resume would fare
            // better.
            Err(e) => return self.refused(ex, &e),
        };
        ex.buf.drain(..used);
        let done = body.done();
        let mut filed = false;
        if let Some(parser) = ex.sse.as_mut() {
            let mut events = Vec::new();
            let fed = parser.feed(&ex.decoded[start..], &mut events);
            ex.decoded.clear();
            for ev in events {
                if let Some(i) = ev.id {
                    ex.last_id = Some(i);
                }
                if let Some(r) = ev.retry {
                    ex.retry = Some(r);
                }
                let Some(data) = ev.data else { continue };
                for msg in sse::messages(&data) {
                    filed = true;
                    if let Some(id) = id {
                        ex.answered |= answers(&msg, id);
                        self.file_now(msg, id);
                    }
                }
            }
            if let Err(e) = fed {
                // An event past maxMessageBytes (or not text): a resume would bring it again.
                return self.refused(ex, &e);
            }
        } else if ex.decoded.len() > self.max_bytes {
            return Step::Fail(RequestError::Lost(format!(
                "the reply is longer than maxMessageBytes ({} bytes)",
                self.max_bytes
            )));
        }
        if done {
            let reuse = ex.head.as_ref().is_some_and(|h| h.keep_alive) && ex.buf.is_empty();
            return self.body_done(ex, id, reuse);
        }
        if filed {
            Step::Filed
        } else {
            Step::More
        }
    }

    /// A head that decides the exchange by itself (None: read the body).
    fn on_head(&self, ex: &mut Exchange, head: &Head, id: Option<u64>) -> Option<Step> {
        let s = head.status;
        if matches!(s, 301 | 302 | 303 | 307 | 308) {
            // Redirects (same origin only, §9) are the async path's, for this server from now on.
            if let Some(d) = &self.direct {
                d.disable();
            }
            return Some(Step::Handoff);
        }
        if matches!(s, 401 | 403) {
            // Judged once the body is in: authorization may not be the matter (§8).
            ex.denied = Some((head.challenge.clone(), head.dpop_nonce.clone()));
            return None;
        }
        if s == 404 && !ex.modern && ex.had_session && id.is_some() {
            return Some(Step::Fail(RequestError::SessionExpired(ex.generation)));
        }
        if id.is_none() && (200..300).contains(&s) {
            // Our answer or notification was taken; its body, if any, is not ours to read, and
            // a connection with bytes after the head is not reused (they answer nothing).
            let empty = head.framing == Framing::Length(0) && ex.buf.is_empty();
            return Some(Step::Done {
                reuse: empty && head.keep_alive,
            });
        }
        None
    }

    /// A 401/403 runs authorization (§8) on this thread; Some(step) unless it is not an
    /// authorization matter.
    fn authorize(&self, ex: &mut Exchange, status: u16) -> Option<Step> {
        let (challenge, nonce) = ex.denied.take()?;
        if tokio::runtime::Handle::try_current().is_ok() {
            return Some(Step::Handoff); // never block a runtime thread: the async path asks
        }
        let mut rounds = crate::auth::Rounds::default();
        let auth = self.auth.clone();
        let (sent, carrier) = (ex.sent_with, ex.post.id);
        let verdict = runtime().block_on(async move {
            auth.on_denied(status, challenge, nonce, sent, &mut rounds, carrier)
                .await
        });
        match verdict {
            // A new token: sent again on the async path, which carries it.
            crate::auth::Denied::Retry => Some(Step::Handoff),
            crate::auth::Denied::Fail(why) => Some(Step::Fail(RequestError::Auth(why))),
            crate::auth::Denied::Pass => None,
        }
    }

    /// The whole body is in: a JSON reply or an error status is judged now (§5, §6).
    fn body_done(&self, ex: &mut Exchange, id: Option<u64>, reuse: bool) -> Step {
        let status = ex.head.as_ref().map_or(0, |h| h.status);
        if let Some(step) = self.authorize(ex, status) {
            return step;
        }
        let code = reqwest::StatusCode::from_u16(status)
            .map(|c| c.to_string())
            .unwrap_or_else(|_| status.to_string());
        let Some(id) = id else {
            return if (200..300).contains(&status) {
                Step::Done { reuse }
            } else {
                Step::Fail(RequestError::Lost(format!("HTTP {code}")))
            };
        };
        if ex.sse.is_some() {
            return if ex.answered {
                Step::Done { reuse }
            } else {
                self.stream_ended(ex, None)
            };
        }
        let text = String::from_utf8_lossy(&ex.decoded).into_owned();
        if !(200..300).contains(&status) {
            if ex.modern {
                // A modern server answers errors with an HTTP status and a JSON-RPC body (§6).
                let mut answered = false;
                for msg in sse::messages(&text) {
                    if answers(&msg, id) {
                        answered = true;
                        self.file_now(msg, id);
                    }
                }
                if answered {
                    return Step::Done { reuse };
                }
            }
            let quoted = if text.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", self.quote(&text))
            };
            return Step::Fail(RequestError::Lost(format!("HTTP {code}{quoted}")));
        }
        if text.trim().is_empty() {
            return Step::Fail(RequestError::Lost(
                "the server sent an empty reply to a request".into(),
            ));
        }
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&ex.decoded) {
            return Step::Fail(RequestError::Lost(format!(
                "the server's reply is not JSON ({e}): {}",
                self.quote(&text)
            )));
        }
        for msg in sse::messages(&text) {
            ex.answered |= answers(&msg, id);
            self.file_now(msg, id);
        }
        if ex.answered {
            Step::Done { reuse }
        } else {
            Step::Fail(RequestError::Lost(format!(
                "the server's reply does not answer the request: {}",
                self.quote(&text)
            )))
        }
    }

    /// Files one message of request `id`'s reply (§5): a server request goes to the
    /// connection's reader thread, where the resolver runs inline (§4: one at a time per
    /// connection, and a cancel or disconnect never waits on it); responses and notifications
    /// are filed here.
    fn file_now(&self, msg: String, id: u64) {
        let request = crate::jsonrpc::line_kind(msg.as_bytes()) == LineKind::Message
            && crate::scan::top_level(msg.as_bytes())
                .is_some_and(|t| t.method.is_some() && t.id.is_some_and(|i| i != b"null"));
        if request {
            self.file_blocking(Inbox::Message(msg, Some(id)));
        } else if let Some(c) = self.inbound.upgrade() {
            c.message(msg.as_bytes(), Some(id));
        }
    }
}
