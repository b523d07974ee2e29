//! The direct path (contract §5, issue 18): over plain HTTP with no proxy, a request's POST is
//! written on the calling thread and its reply read on that same thread while the caller waits
//! for it ([`crate::conn::Conn`]'s wait drives it), on a kept-alive connection from a small
//! pool: no runtime task and no reader-thread hop, so a call costs about what a hand-written
//! client's does. Messages on the reply are filed inline, so an elicitation carried by a call's
//! stream reaches the resolver on the thread reading that stream. What this path does not
//! handle goes to the async path: a redirect or a 401/403 (the request is sent again there,
//! with authorization, §8), and a stream that ends before its response (resumed there, §5).

use super::pool::{Direct, Sock};
use super::reply::answers;
use super::streamable::{HttpTransport, Mode, Post};
use super::wire::{parse_head, Body, Head};
use super::{redact, MODERN_VERSION};
use crate::conn::{lock, RequestError};
use crate::transport::sse::{self, EventParser};
use std::io::{ErrorKind, Write};
use std::time::{Duration, Instant};

/// How long the rest of a stream is awaited once its response arrived (servers end the stream
/// right after it, §5); past it the connection is closed rather than kept.
const TAIL: Duration = Duration::from_millis(5);

/// One request on the direct path, from its write to the end of its reply.
pub(super) struct Exchange {
    sock: Sock,
    /// The request's bytes while nothing has come back on a kept-alive connection (one the
    /// server closed meanwhile gets the request again on a fresh connection).
    resend: Option<Vec<u8>>,
    buf: Vec<u8>,
    head: Option<Head>,
    body: Option<Body>,
    decoded: Vec<u8>,
    sse: Option<EventParser>,
    answered: bool,
    last_id: Option<String>,
    retry: Option<u64>,
    /// What the async path needs to take over.
    post: Post,
    modern: bool,
    /// The session the request was sent on, and whether it had one (a 404 then means the
    /// session expired, §5).
    generation: u64,
    had_session: bool,
    /// The token generation the request carried (§8).
    sent_with: u64,
}

thread_local! {
    /// Set while this thread reads a reply on the direct path: an answer it gives there (an
    /// inline resolver's) goes out directly too, before reading on.
    static READING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is reading a reply on the direct path.
pub(super) fn reading() -> bool {
    READING.with(std::cell::Cell::get)
}

/// How a step of reading ended.
enum Step {
    /// Messages were filed; the caller looks at its reply before reading on.
    Filed,
    /// The reply is complete; the connection may carry another request.
    Done {
        reuse: bool,
    },
    /// Not for this path: the async path sends the request again.
    Handoff,
    /// A 401/403 (§8): the async path runs authorization with the challenge, then sends the
    /// request again.
    Denied(u16, Option<String>),
    /// The stream ended before the response: the async path resumes it.
    Resume,
    Fail(RequestError),
    /// Nothing complete in the buffer.
    More,
}

impl HttpTransport {
    /// Whether `out` goes the direct way, and what it needs to know of the session: the era,
    /// the session generation and whether there is one.
    fn direct_route(&self, out: &Post) -> Option<(bool, u64, bool)> {
        if !self.direct.as_ref()?.enabled() {
            return None;
        }
        if out.opens_session || self.auth.flow_due() {
            return None;
        }
        let st = lock(&self.state);
        match st.mode {
            Mode::Modern => Some((true, st.generation, false)),
            Mode::Streamable => Some((false, st.generation, st.session.is_some())),
            Mode::Unknown | Mode::Legacy(_) => None,
        }
    }

    /// The request's bytes: the POST with the configured headers, the bearer token (§8), and
    /// the session's or the era's headers (§5, §6).
    fn request_bytes(&self, out: &Post, modern: bool, d: &Direct) -> Result<Vec<u8>, RequestError> {
        let mut h = Vec::with_capacity(512 + out.body.len());
        let _ = write!(
            h,
            "POST {} HTTP/1.1\r\nhost: {}\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            d.target,
            d.authority,
            out.body.len()
        );
        let mut header = |name: &[u8], value: &[u8]| {
            h.extend_from_slice(name);
            h.extend_from_slice(b": ");
            h.extend_from_slice(value);
            h.extend_from_slice(b"\r\n");
        };
        // The configured headers, plus the bearer token when there is one (§8).
        for (k, v) in self.headers.iter() {
            header(k.as_str().as_bytes(), v.as_bytes());
        }
        if let (_, Some(bearer)) = self.auth.bearer() {
            header(b"authorization", bearer.as_bytes());
        }
        if modern {
            header(b"mcp-protocol-version", MODERN_VERSION.as_bytes());
            if let Some(m) = &out.method {
                header(b"mcp-method", m.as_bytes());
            }
            if let Some(r) = &out.routing {
                if let Some(name) = &r.name {
                    header(b"mcp-name", super::modern::header_value(name)?.as_bytes());
                }
                for (k, v) in &r.params {
                    reqwest::header::HeaderName::from_bytes(format!("mcp-param-{k}").as_bytes())
                        .map_err(|_| RequestError::Lost(format!("`{k}` is not a header name")))?;
                    let name = format!("mcp-param-{}", k.to_ascii_lowercase());
                    header(name.as_bytes(), super::modern::header_value(v)?.as_bytes());
                }
            }
        } else {
            let st = lock(&self.state);
            if let Some(s) = &st.session {
                header(super::SESSION_HEADER.as_bytes(), s.as_bytes());
            }
            if let Some(v) = &st.version {
                header(b"mcp-protocol-version", v.as_bytes());
            }
        }
        h.extend_from_slice(b"\r\n");
        h.extend_from_slice(out.body.as_bytes());
        Ok(h)
    }

    /// Sends `out` the direct way when that applies (else gives it back for the async way).
    /// A request's reply is read later by its caller ([`HttpTransport::drive_direct`]); a
    /// message without a reply of ours is sent and its status read before this returns.
    pub(super) fn send_direct(&self, out: Post) -> Result<(), Post> {
        let (Some((modern, generation, had_session)), Some(d)) =
            (self.direct_route(&out), self.direct.as_ref())
        else {
            return Err(out);
        };
        let conn = self.conn.upgrade();
        let id = out.id;
        let sent_with = self.auth.bearer().0;
        let bytes = match self.request_bytes(&out, modern, d) {
            Ok(b) => b,
            Err(e) => {
                if let (Some(id), Some(c)) = (id, &conn) {
                    c.fail_request(id, e);
                }
                return Ok(());
            }
        };
        let (sock, reused) = match self.write_request(d, &bytes, id) {
            Ok(x) => x,
            Err(tls) => {
                // No connection could be opened and written: the async path tries, and says
                // why in its words when it cannot either. After a TLS failure it keeps the
                // server (it may want HTTP/2, which the direct path does not offer).
                if let Some(id) = id {
                    d.forget(id);
                }
                if tls {
                    d.disable();
                }
                return Err(out);
            }
        };
        let mut ex = Exchange {
            sock,
            resend: reused.then_some(bytes),
            buf: Vec::new(),
            head: None,
            body: None,
            decoded: Vec::new(),
            sse: None,
            answered: false,
            last_id: None,
            retry: None,
            post: out,
            modern,
            generation,
            had_session,
            sent_with,
        };
        match id {
            Some(id) => d.release(id, ex),
            None => {
                // Our answer to a server request, or a notification: its status, here.
                let deadline = Instant::now() + self.timeout;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match self.read_step(d, &mut ex, None, left) {
                        Step::Filed | Step::More if !left.is_zero() => continue,
                        Step::Done { reuse: true } => d.put_idle(ex.sock),
                        Step::Handoff => self.spawn_deliver(ex.post),
                        Step::Denied(status, challenge) => {
                            self.spawn_after_denial(ex.post, status, challenge, ex.sent_with)
                        }
                        _ => {}
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// Writes `bytes` on a kept-alive connection, or a new one (also when writing on a
    /// kept-alive one fails: the server may have closed it). Request `id` is in this thread's
    /// hands from before the write, so a cancel during it closes the socket. Err(true) when
    /// TLS failed on the new connection.
    fn write_request(
        &self,
        d: &Direct,
        bytes: &[u8],
        id: Option<u64>,
    ) -> Result<(Sock, bool), bool> {
        if let Some(mut s) = d.take_idle() {
            if let Some(id) = id {
                d.hold(id, &s.tcp);
            }
            if s.write_all(bytes).is_ok() {
                return Ok((s, true));
            }
        }
        let mut s = d.open(self.timeout).map_err(|_| false)?;
        if let Some(id) = id {
            d.hold(id, &s.tcp);
        }
        // The TLS handshake happens on the first write.
        s.write_all(bytes)
            .map_err(|e| super::tls_failure(&e).is_some())?;
        Ok((s, false))
    }

    /// Reads on request `id`'s reply for at most `left`, filing what arrives (§5). False when
    /// `id` is not on the direct path (its caller just waits).
    pub(super) fn drive_direct(&self, id: u64, left: Duration) -> bool {
        let Some(d) = self.direct.as_ref() else {
            return false;
        };
        let mut ex = {
            let mut t = lock(&d.table);
            let Some(ex) = t.parked.remove(&id) else {
                return false;
            };
            t.busy.insert(id, ex.sock.tcp.clone());
            ex
        };
        READING.with(|r| r.set(true));
        let step = self.read_on(d, &mut ex, id, left);
        READING.with(|r| r.set(false));
        match step {
            Step::Done { reuse } => {
                d.forget(id);
                if reuse {
                    d.put_idle(ex.sock);
                }
            }
            Step::Handoff => {
                d.forget(id);
                self.spawn_deliver(ex.post);
            }
            Step::Denied(status, challenge) => {
                d.forget(id);
                self.spawn_after_denial(ex.post, status, challenge, ex.sent_with);
            }
            Step::Resume => {
                d.forget(id);
                self.spawn_resume(id, ex.last_id, ex.retry);
            }
            Step::Fail(e) => {
                d.forget(id);
                if let Some(c) = self.conn.upgrade() {
                    c.fail_request(id, e);
                }
            }
            // Answered, and the stream goes on past the tail: the connection is not kept.
            Step::Filed | Step::More if ex.answered => d.forget(id),
            Step::Filed | Step::More => d.release(id, ex),
        }
        true
    }

    /// Reads until messages were filed, the reply ended, or `left` passed; once the response
    /// is in, only the end of its stream is awaited (at most [`TAIL`]).
    fn read_on(&self, d: &Direct, ex: &mut Exchange, id: u64, left: Duration) -> Step {
        let deadline = Instant::now() + left;
        let mut tail: Option<Instant> = None;
        loop {
            let until = tail.unwrap_or(deadline);
            let left = until.saturating_duration_since(Instant::now());
            let step = self.read_step(d, ex, Some(id), left);
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

    /// Processes what is buffered, else reads once (at most `left`; after the response only
    /// [`TAIL`]).
    fn read_step(&self, d: &Direct, ex: &mut Exchange, id: Option<u64>, left: Duration) -> Step {
        let step = self.process(ex, id);
        if !matches!(step, Step::More) {
            return step;
        }
        if left.is_zero() {
            return Step::More;
        }
        ex.sock.read_timeout(left);
        let mut chunk = [0u8; 16 * 1024];
        match ex.sock.read(&mut chunk) {
            Ok(0) => self.at_eof(d, ex, id),
            Ok(n) => {
                ex.resend = None;
                ex.buf.extend_from_slice(&chunk[..n]);
                self.process(ex, id)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Step::More,
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted) => Step::More,
            Err(e) => {
                if ex.resend.is_some() {
                    return self.at_eof(d, ex, id);
                }
                self.stream_failed(ex, &e.to_string())
            }
        }
    }

    /// The connection closed.
    fn at_eof(&self, d: &Direct, ex: &mut Exchange, id: Option<u64>) -> Step {
        if let Some(bytes) = ex.resend.take() {
            // A kept-alive connection the server had closed: once more on a fresh one.
            return match self.write_request(d, &bytes, id) {
                Ok((sock, _)) => {
                    ex.sock = sock;
                    Step::More
                }
                // Nothing reached the server: the async path sends it.
                Err(_) => Step::Handoff,
            };
        }
        match ex.body.as_mut().map(Body::eof) {
            Some(Ok(())) => self.body_done(ex, id, false),
            Some(Err(e)) => self.stream_failed(ex, &e),
            None => self.stream_failed(ex, "the server closed the connection without a reply"),
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
            match parse_head(&ex.buf) {
                Ok(None) => return Step::More,
                Err(e) => return Step::Fail(RequestError::Lost(e)),
                Ok(Some((head, used))) => {
                    ex.buf.drain(..used);
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
            Err(e) => return self.stream_failed(ex, &e),
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
                        self.file_now(&msg, id);
                    }
                }
            }
            if let Err(e) = fed {
                return self.stream_failed(ex, &e);
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
    fn on_head(&self, ex: &Exchange, head: &Head, id: Option<u64>) -> Option<Step> {
        let s = head.status;
        if matches!(s, 401 | 403) {
            return Some(Step::Denied(s, head.challenge.clone()));
        }
        if matches!(s, 301 | 302 | 303 | 307 | 308) {
            // Redirects (same origin only, §9) are the async path's.
            return Some(Step::Handoff);
        }
        if id.is_none() && head.sse {
            // An event stream in reply to our answer or notification: nothing of ours is on
            // it; not read, and the connection is not kept.
            return Some(Step::Done { reuse: false });
        }
        if s == 404 && !ex.modern && ex.had_session && id.is_some() {
            return Some(Step::Fail(RequestError::SessionExpired(ex.generation)));
        }
        None
    }

    /// The whole body is in: a JSON reply or an error status is judged now (§5, §6).
    fn body_done(&self, ex: &mut Exchange, id: Option<u64>, reuse: bool) -> Step {
        let status = ex.head.as_ref().map_or(0, |h| h.status);
        let Some(id) = id else {
            return if (200..300).contains(&status) {
                Step::Done { reuse }
            } else {
                Step::Fail(RequestError::Lost(format!("HTTP {status}")))
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
        let code = reqwest::StatusCode::from_u16(status)
            .map(|c| c.to_string())
            .unwrap_or_else(|_| status.to_string());
        if !(200..300).contains(&status) {
            if ex.modern {
                // A modern server answers errors with an HTTP status and a JSON-RPC body (§6).
                let mut answered = false;
                for msg in sse::messages(&text) {
                    if answers(&msg, id) {
                        answered = true;
                        self.file_now(&msg, id);
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
            self.file_now(&msg, id);
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

    /// Files one message of request `id`'s reply on this thread (§5).
    fn file_now(&self, msg: &str, id: u64) {
        if let Some(c) = self.conn.upgrade() {
            c.on_line_carried(msg.as_bytes(), Some(id));
        }
    }
}
