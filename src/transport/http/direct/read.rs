//! Reading a reply on the direct client (contract §5, §6): the head (its status judged by
//! [`protocol::status_verdict`], as the async client judges it: a 404 on a session means it expired, a
//! 401/403 runs authorization (§8), a modern server's error status may carry the answer), then
//! the body read into messages by [`protocol::ReplyBody`] and filed as they come (server requests to
//! the reader thread, the rest inline); anything else fails the request with the server's
//! words, masked (§9).

use super::head::{Framing, Head};
use super::{Exchange, Step};
use crate::json::rpc::LineKind;
use crate::net::runtime;
use crate::request::RequestError;
use crate::transport::http::inbox::Inbox;
use crate::transport::http::protocol::{self, Sent, StatusVerdict, StreamEnd};
use crate::transport::http::transport::HttpTransport;
use crate::util::redact;
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
                Step::Filed | Step::More if ex.answered() => {
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
        match ex.framing.as_mut().map(super::body::BodyDecoder::eof) {
            Some(Ok(())) => self.body_done(ex, id, false),
            Some(Err(e)) => self.stream_failed(ex, &e),
            None => Step::Fail(RequestError::Lost(format!(
                "{} ({})",
                self.quote(&ex.heads.at_eof(&ex.buf)),
                redact(&self.url)
            ))),
        }
    }

    fn is_sse(ex: &Exchange) -> bool {
        ex.reply.as_ref().is_some_and(protocol::ReplyBody::is_sse)
    }

    /// The reply broke off (`why`).
    fn stream_failed(&self, ex: &mut Exchange, why: &str) -> Step {
        if ex.answered() {
            return Step::Done { reuse: false };
        }
        if Self::is_sse(ex) {
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
        if ex.answered() {
            return Step::Done { reuse: false };
        }
        let why = self.quote(why);
        Step::Fail(RequestError::Lost(if Self::is_sse(ex) {
            format!("the event stream failed before the response: {why}")
        } else {
            format!("reading the body failed: {why} ({})", redact(&self.url))
        }))
    }

    /// An event stream ended without the response: resumed on the async client when it can be
    /// (§5), else the call fails (MCP 2026-07-28 has no resumption, §6).
    fn stream_ended(&self, ex: &Exchange, error: Option<&str>) -> Step {
        let last_id = ex.reply.as_ref().and_then(|r| r.last_id.as_deref());
        match protocol::stream_end(ex.modern, last_id, error) {
            StreamEnd::Resume => Step::Resume,
            StreamEnd::Fail(e) => Step::Fail(RequestError::Lost(e)),
        }
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
                    ex.framing = Some(super::body::BodyDecoder::new(head.framing));
                    let sse = head.sse && (200..300).contains(&head.status) && id.is_some();
                    ex.reply = Some(protocol::ReplyBody::new(
                        id.unwrap_or(0),
                        sse,
                        self.max_bytes,
                    ));
                    ex.head = Some(head);
                }
            }
        }
        let (Some(framing), Some(reply)) = (ex.framing.as_mut(), ex.reply.as_mut()) else {
            return Step::More;
        };
        ex.decoded.clear();
        let used = match framing.decode(&ex.buf, &mut ex.decoded) {
            Ok(n) => n,
            // Broken framing: the connection is unusable, and nothing says a resume would fare
            // better.
            Err(e) => return self.refused(ex, &e),
        };
        ex.buf.drain(..used);
        let done = framing.done();
        let mut msgs = Vec::new();
        let fed = reply.feed(&ex.decoded, &mut msgs);
        let filed = !msgs.is_empty();
        if let Some(id) = id {
            for msg in msgs {
                self.file_now(msg, id);
            }
        }
        if let Err(e) = fed {
            if !reply.is_sse() {
                return Step::Fail(RequestError::Lost(e)); // a JSON body past maxMessageBytes
            }
            // An event past maxMessageBytes (or not text): a resume would bring it again.
            return self.refused(ex, &e);
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
        self.auth.note_nonce(head.dpop_nonce.as_deref());
        let sent = Sent {
            request: id.is_some(),
            opens_session: false, // initialize goes on the async client
            unknown: false,
            modern: ex.modern,
            had_session: ex.had_session,
        };
        match protocol::status_verdict(head.status, &sent) {
            StatusVerdict::Redirect => {
                // Redirects (same origin only, §9) are the async client's, for this server
                // from now on.
                if let Some(d) = &self.direct {
                    d.disable();
                }
                Some(Step::Handoff)
            }
            StatusVerdict::Denied => {
                // Judged once the body is in: authorization may not be the matter (§8).
                ex.denied = Some((head.challenge.clone(), head.dpop_nonce.clone()));
                None
            }
            StatusVerdict::SessionExpired if id.is_some() => {
                Some(Step::Fail(RequestError::SessionExpired(ex.generation)))
            }
            StatusVerdict::Taken => {
                // Our answer or notification was taken; its body, if any, is not ours to
                // read, and a connection with bytes after the head is not reused (they answer
                // nothing).
                let empty = head.framing == Framing::Length(0) && ex.buf.is_empty();
                Some(Step::Done {
                    reuse: empty && head.keep_alive,
                })
            }
            _ => None,
        }
    }

    /// A 401/403 runs authorization (§8) on this thread; Some(step) unless it is not an
    /// authorization matter.
    fn authorize(&self, ex: &mut Exchange, status: u16) -> Option<Step> {
        let (challenge, nonce) = ex.denied.take()?;
        if tokio::runtime::Handle::try_current().is_ok() {
            return Some(Step::Handoff); // never block a runtime thread: the async client asks
        }
        let mut rounds = crate::auth::Refusals::default();
        let auth = self.auth.clone();
        let (sent, carrier) = (ex.sent_with, ex.post.id);
        let verdict = runtime().block_on(async move {
            auth.on_denied(status, challenge, nonce, sent, &mut rounds, carrier)
                .await
        });
        match verdict {
            // A new token: sent again on the async client, which carries it.
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
        let ok = (200..300).contains(&status);
        let Some(id) = id else {
            return if ok {
                Step::Done { reuse }
            } else {
                Step::Fail(RequestError::Lost(protocol::status_error(status, "")))
            };
        };
        let Some(reply) = ex.reply.as_mut() else {
            return Step::Fail(RequestError::Lost("no reply body".into()));
        };
        if reply.is_sse() {
            return if reply.answered {
                Step::Done { reuse }
            } else {
                self.stream_ended(ex, None)
            };
        }
        if !ok {
            let (answering, text) = reply.answering_messages();
            if ex.modern && !answering.is_empty() {
                // A modern server answers errors with an HTTP status and a JSON-RPC body (§6).
                for msg in answering {
                    self.file_now(msg, id);
                }
                return Step::Done { reuse };
            }
            let quoted = if text.trim().is_empty() {
                String::new()
            } else {
                self.quote(&text)
            };
            return Step::Fail(RequestError::Lost(protocol::status_error(status, &quoted)));
        }
        match reply.json_messages(&|t| self.quote(t)) {
            Err(e) => Step::Fail(RequestError::Lost(e)),
            Ok((msgs, unanswered)) => {
                for msg in msgs {
                    self.file_now(msg, id);
                }
                match unanswered {
                    Some(e) => Step::Fail(RequestError::Lost(e)),
                    None => Step::Done { reuse },
                }
            }
        }
    }

    /// Files one message of request `id`'s reply (§5): a server request goes to the
    /// connection's reader thread, where the resolver runs inline (§4: one at a time per
    /// connection, and a cancel or disconnect never waits on it); responses and notifications
    /// are filed here.
    fn file_now(&self, msg: String, id: u64) {
        let request = crate::json::rpc::line_kind(msg.as_bytes()) == LineKind::Message
            && crate::json::scan::top_level(msg.as_bytes())
                .is_some_and(|t| t.method.is_some() && t.id.is_some_and(|i| i != b"null"));
        if request {
            self.filing.file_blocking(Inbox::Message(msg, Some(id)));
        } else if let Some(c) = self.inbound.upgrade() {
            c.message(msg.as_bytes(), Some(id));
        }
    }
}
