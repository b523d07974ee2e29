//! The direct HTTP/1.1 client (contract §5): for `http`/`https` servers
//! reached without a proxy, a request's POST is written on the calling thread and its reply read
//! on that same thread while the caller waits for it (the connection's wait drives it), on a
//! kept-alive connection from a small pool ([`pool`]): no runtime task and no thread hop, so a
//! call costs about what a hand-written client's does. It speaks the protocol the async client
//! speaks ([`super::protocol`]: the same headers, status rules and body reading). Responses and notifications on the reply are filed inline; a
//! server request there (an elicitation) goes to the connection's reader thread, where the
//! resolver runs inline as on every transport (§4), and whose answer goes out directly too.
//! What this path does not handle goes to the async path: a redirect, a connection that cannot
//! be opened, and a stream that ends before its response (resumed there, §5). Nothing is ever
//! sent twice: an idle connection is checked before it is written to, and a request ended
//! elsewhere (cancelled, timed out, disconnected) is not written at all.

pub(crate) mod body;
mod exchange;
pub(crate) mod head;
mod inflight;
pub(crate) mod pool;
mod read;
mod socket;

use super::protocol::Post;
use super::transport::{Dialect, HttpTransport};
use crate::request::RequestError;
use crate::util::lock;
use exchange::Exchange;
use pool::DirectPath;
use socket::{OpenError, Sock, WriteFailed};
use std::io::Write;
use std::time::{Duration, Instant};

/// How long the async path takes a server's requests after a connection to it could not be
/// opened.
const PAUSE_AFTER_CONNECT_FAILURE: Duration = Duration::from_secs(5);

/// How a step of reading ended.
pub(super) enum Step {
    /// Messages were filed; the caller looks at its reply before reading on.
    Filed,
    /// The reply is complete; the connection may carry another request.
    Done {
        reuse: bool,
    },
    /// Not for this path: the async path sends the request again (nothing was processed).
    Handoff,
    /// The stream ended before the response: the async path resumes it.
    Resume,
    Fail(RequestError),
    /// Nothing complete in the buffer.
    More,
}

/// Why a request was not (wholly) written.
enum Unsent {
    /// The request ended elsewhere first (or the transport is closing).
    Ended,
    /// No connection could be opened and written, and nothing of the request reached the
    /// server; `tls` when TLS failed.
    Failed { tls: bool },
    /// The request's deadline passed (writing it, or opening a connection for it).
    TimedOut,
    /// The connection broke after part of the request went out: the server may have read it,
    /// so it is never sent again (§6).
    Broken(WriteFailed),
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
            Dialect::Modern => Some((true, st.generation, false)),
            Dialect::Streamable => Some((false, st.generation, st.session.is_some())),
            Dialect::Unknown | Dialect::Legacy => None,
        }
    }

    /// The request's bytes: the POST with the headers the protocol gives it in this era
    /// ([`protocol::each_header`], as the async client sends them).
    fn request_bytes(
        &self,
        out: &Post,
        modern: bool,
        d: &DirectPath,
    ) -> Result<Vec<u8>, RequestError> {
        let mut h = Vec::with_capacity(512 + out.body.len());
        let _ = write!(
            h,
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-length: {}\r\n",
            d.target,
            d.authority,
            out.body.len()
        );
        self.each_post_header(out, modern, &mut |k, v| {
            h.extend_from_slice(k.as_bytes());
            h.extend_from_slice(b": ");
            h.extend_from_slice(v);
            h.extend_from_slice(b"\r\n");
        })?;
        h.extend_from_slice(b"\r\n");
        h.extend_from_slice(out.body.as_bytes());
        Ok(h)
    }

    /// Sends `out` the direct way when that applies (else gives it back for the async way),
    /// writing by `deadline` (every phase of a request ends by the call's deadline).
    /// A request's reply is read later by its caller ([`HttpTransport::drive_direct`]); for a
    /// message without a reply of ours the status is read before this returns.
    pub(super) fn send_direct(&self, out: Post, ordered: bool) -> Result<(), Post> {
        let (Some((modern, generation, had_session)), Some(d)) =
            (self.direct_route(&out), self.direct.as_ref())
        else {
            return Err(out);
        };
        let id = out.id;
        if let Some(id) = id {
            if !d.inflight.claim(id) {
                return Err(out); // closing: the async path says so
            }
            // A cancel that came before the claim found nothing to end: nothing is sent (§7).
            if !self.inbound.upgrade().is_some_and(|c| c.is_pending(id)) {
                d.inflight.forget(id);
                return Ok(());
            }
        }
        let sent_with = self.auth.generation();
        let bytes = match self.request_bytes(&out, modern, d) {
            Ok(b) => b,
            Err(e) => {
                if let Some(id) = id {
                    d.inflight.forget(id);
                    if let Some(c) = self.inbound.upgrade() {
                        c.fail_one(id, e);
                    }
                }
                return Ok(());
            }
        };
        let deadline = Instant::now() + out.timeout;
        let sock = match self.open_and_write(d, &bytes, id, deadline) {
            Ok(s) => s,
            Err(Unsent::Failed { tls }) => {
                // Nothing of it reached the server: the async path tries, and says why in its
                // words when it cannot either. After a TLS failure it keeps the server (it may
                // want HTTP/2).
                if tls {
                    d.disable();
                } else {
                    d.pause(PAUSE_AFTER_CONNECT_FAILURE);
                }
                if id.is_some_and(|id| d.inflight.forget(id)) {
                    return Ok(()); // ended meanwhile (a cancel): not handed over
                }
                return Err(out);
            }
            Err(unsent) => {
                // Ended before it went out (nothing is sent, §7), or it timed out or broke:
                // never sent again.
                let Some(id) = id else { return Ok(()) };
                if d.inflight.forget(id) {
                    return Ok(());
                }
                let why = match unsent {
                    Unsent::TimedOut => RequestError::Timeout(id),
                    Unsent::Broken(f) => RequestError::Lost(format!(
                        "the connection broke while the request was being sent ({}); it is not sent again, as the server may have read part of it",
                        f.error
                    )),
                    Unsent::Ended | Unsent::Failed { .. } => return Ok(()),
                };
                if let Some(c) = self.inbound.upgrade() {
                    c.fail_one(id, why);
                }
                return Ok(());
            }
        };
        let ex = Exchange {
            sock,
            buf: Vec::new(),
            heads: Default::default(),
            head: None,
            framing: None,
            reply: None,
            decoded: Vec::new(),
            post: out,
            modern,
            generation,
            had_session,
            sent_with,
            denied: None,
        };
        match id {
            Some(id) => {
                let tcp = ex.sock.tcp.clone();
                d.inflight.release(id, &tcp, Box::new(ex));
            }
            None => self.finish_unanswered(d, ex, ordered),
        }
        Ok(())
    }

    /// Reads the status of our answer or notification (bounded by the timeout); a redirect or
    /// an authorization retry sends it again on the async path, an ordered one before this
    /// returns.
    fn finish_unanswered(&self, d: &DirectPath, mut ex: Exchange, ordered: bool) {
        let deadline = Instant::now() + ex.post.timeout;
        let step = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_step(&mut ex, None, left) {
                Step::Filed | Step::More if !left.is_zero() => continue,
                step => break step,
            }
        };
        match step {
            Step::Done { reuse: true } => d.put_idle(ex.sock),
            Step::Handoff => {
                let Some(me) = self.me.upgrade() else { return };
                if ordered && tokio::runtime::Handle::try_current().is_err() {
                    crate::net::runtime().block_on(me.deliver(ex.post));
                } else {
                    self.spawn_deliver(ex.post);
                }
            }
            _ => {} // an answer the server refused: as on the async path, nothing more
        }
    }

    /// Writes `bytes` by `deadline` on a pooled connection that is still open, or on a new one
    /// (also when the write on a pooled one failed before any byte went out: the server had
    /// closed it). Request `id` is in this thread's hands throughout, and nothing is written
    /// once it ended elsewhere; a write that may have reached the server is never repeated.
    fn open_and_write(
        &self,
        d: &DirectPath,
        bytes: &[u8],
        id: Option<u64>,
        deadline: Instant,
    ) -> Result<Sock, Unsent> {
        let broken = |f: WriteFailed| {
            if d.inflight.ended(id) {
                Unsent::Ended
            } else if f.timed_out() {
                Unsent::TimedOut
            } else {
                Unsent::Broken(f)
            }
        };
        if let Some(mut s) = d.take_idle() {
            if id.is_some_and(|id| !d.inflight.attach(id, &s.tcp)) {
                return Err(Unsent::Ended);
            }
            match s.write_all(bytes, deadline) {
                Ok(()) => return Ok(s),
                Err(f) if !f.sent_any && !f.timed_out() && !d.inflight.ended(id) => {}
                Err(f) => return Err(broken(f)),
            }
        }
        let mut s = d.open(deadline, id).map_err(|e| match e {
            OpenError::Ended => Unsent::Ended,
            OpenError::TimedOut => Unsent::TimedOut,
            OpenError::Failed { tls } => Unsent::Failed { tls },
        })?;
        match s.write_all(bytes, deadline) {
            Ok(()) => Ok(s),
            // Refused before anything went out: as a connection that could not be opened.
            Err(f) if !f.sent_any && !f.timed_out() && !d.inflight.ended(id) => {
                Err(Unsent::Failed { tls: false })
            }
            Err(f) => Err(broken(f)),
        }
    }

    /// Reads on request `id`'s reply for at most `left`, filing what arrives (§5). False when
    /// `id` is not on the direct path (its caller just waits).
    pub(super) fn drive_direct(&self, id: u64, left: Duration) -> bool {
        let Some(d) = self.direct.as_ref() else {
            return false;
        };
        let Some(taken) = d.inflight.take_parked(id) else {
            return false;
        };
        let Some(mut ex) = taken else {
            return true; // ended elsewhere: dropped, connection and all
        };
        let step = self.read_on(&mut ex, id, left);
        match step {
            Step::Done { reuse } => {
                if !d.inflight.forget(id) && reuse {
                    d.put_idle(ex.sock);
                }
            }
            Step::Handoff => {
                if !d.inflight.forget(id) {
                    self.spawn_deliver(ex.post);
                }
            }
            Step::Resume => {
                if !d.inflight.forget(id) {
                    let (last_id, retry) = ex
                        .reply
                        .take()
                        .map_or((None, None), |r| (r.last_id, r.retry));
                    self.spawn_resume(id, last_id, retry, ex.post.timeout);
                }
            }
            Step::Fail(e) => {
                if !d.inflight.forget(id) {
                    if let Some(c) = self.inbound.upgrade() {
                        c.fail_one(id, e);
                    }
                }
            }
            // Answered, and the stream goes on past the tail: the connection is not kept.
            Step::Filed | Step::More if ex.answered() => {
                d.inflight.forget(id);
            }
            Step::Filed | Step::More => {
                let tcp = ex.sock.tcp.clone();
                d.inflight.release(id, &tcp, ex);
            }
        }
        true
    }
}
