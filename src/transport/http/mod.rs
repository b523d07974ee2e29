//! HTTP for remote servers (contract §5, §6, §9). One connection, [`HttpTransport`]
//! ([`state`]), speaks streamable HTTP through two clients that share one protocol
//! ([`protocol`]: the headers, the status rules, the reading of a reply, written once): the
//! direct HTTP/1.1 client on the caller's own thread ([`direct`]) and the async one on the
//! runtime ([`async_client`], [`async_reply`]), which also keeps the standalone GET stream
//! ([`get_stream`]). A server that refuses streamable HTTP gets the HTTP+SSE transport
//! ([`legacy_sse`]). Inbound messages of the async client go through the connection's reader
//! thread ([`inbox`]). The clients, the runtime and TLS are in [`crate::net`].
//!
//! The files layer one way: this one (the Transport) → direct → async_client → async_reply →
//! state → (legacy_sse, inbox, protocol, direct/pool → direct/head, direct/body).

mod async_client;
mod async_reply;
mod direct;
mod get_stream;
pub(crate) use get_stream::ListenOpened;
mod inbox;
mod legacy_sse;
mod protocol;
mod transport;

#[cfg(feature = "fuzzing")]
pub(crate) use direct::{body, head};
pub(crate) use transport::{connect, parse_url, Bounds, HttpTransport, Remote};

use crate::net::runtime;
use crate::transport::{OutKind, Outgoing, Transport};
use crate::util::lock;
use protocol::Post;
use reqwest::header::CONTENT_TYPE;
use std::sync::atomic::Ordering;
use std::time::Duration;
use transport::Dialect;

/// A response header's value as text (None when absent or not visible ASCII).
pub(crate) fn header_text<'a>(resp: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

pub(crate) fn is_sse(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

pub(crate) fn session_of(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(protocol::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl HttpTransport {
    /// Sends one message: on the direct client when it applies (requests; answers given on the
    /// reader thread; ordered messages), else on the async client, each message on a task of
    /// its own, an ordered message before returning.
    fn dispatch(&self, msg: &Outgoing<'_>) -> Result<(), String> {
        if self.is_closed() {
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
        let direct = out.id.is_some() || ordered || inbox::on_reader_thread();
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
}

/// What the session tells an HTTP connection and asks of it (§5, §6): MCP facts that only HTTP
/// carries on the wire (they are the session's, so they are not in [`Transport`]).
impl HttpTransport {
    /// The session speaks MCP 2026-07-28 from now on: no session, its own headers, no
    /// resumption.
    pub(crate) fn speak_modern(&self) {
        lock(&self.state).mode = Dialect::Modern;
    }

    /// The session speaks the handshake era from now on (after a probe that found no modern
    /// server): whether streamable or legacy HTTP+SSE is for `initialize` to find out.
    pub(crate) fn speak_handshake(&self) {
        let mut st = lock(&self.state);
        if matches!(st.mode, Dialect::Modern) {
            st.mode = Dialect::Unknown;
        }
    }

    /// The protocol version the handshake settled on, sent on every later request.
    pub(crate) fn negotiated(&self, version: &str) {
        lock(&self.state).version = Some(version.to_string());
    }

    /// After `notifications/initialized`: opens the server's standalone GET stream and waits
    /// for the server's answer (§5). A warning for the status when it could not be opened.
    pub(crate) fn open_get_stream(&self) -> Option<String> {
        if !matches!(lock(&self.state).mode, Dialect::Streamable) {
            return None; // legacy HTTP+SSE: its one stream is already open
        }
        let me = self.me.upgrade()?;
        runtime().block_on(me.open_server_stream())
    }

    /// Which session of the server this is (counted as the server hands them out); a request
    /// failed with `RequestError::SessionExpired(n)` was sent on session n.
    pub(crate) fn session_generation(&self) -> u64 {
        lock(&self.state).generation
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
            d.inflight.end(id);
        }
    }

    fn drive(&self, id: u64, left: Duration) -> bool {
        self.drive_direct(id, left)
    }

    fn interrupt(&self, id: u64) {
        if let Some(d) = &self.direct {
            d.inflight.end(id);
        }
    }

    fn cancels_by_closing(&self) -> bool {
        matches!(lock(&self.state).mode, Dialect::Modern)
    }

    fn clock_per_call(&self) -> bool {
        !matches!(lock(&self.state).mode, Dialect::Legacy)
    }

    fn carries_server_requests(&self) -> bool {
        let st = lock(&self.state);
        match st.mode {
            Dialect::Legacy => true,
            Dialect::Streamable => st.session.is_some(),
            Dialect::Modern | Dialect::Unknown => false,
        }
    }

    fn shutdown(&self, _grace: Duration) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for (_, t) in lock(&self.tasks).drain() {
            t.abort();
        }
        if let Some(l) = self.legacy.get() {
            l.shutdown();
        }
        if let Some(t) = lock(&self.get_stream).take() {
            t.abort();
        }
        if let Some(d) = &self.direct {
            d.close();
        }
        let in_session = {
            let st = lock(&self.state);
            matches!(st.mode, Dialect::Streamable) && st.session.is_some()
        };
        if in_session {
            // With the session id and the protocol version, like every request after initialize.
            let req = self
                .http
                .delete(self.url.clone())
                .headers(self.session_headers("DELETE"));
            let bound = self.timeout.min(Duration::from_secs(2));
            let _ =
                runtime().block_on(async move { tokio::time::timeout(bound, req.send()).await });
        }
        self.filing.close();
        let reader = lock(&self.reader).take();
        if let Some((h, ended)) = reader {
            // Bounded: a resolver may still hold the reader thread.
            let _ = ended.recv_timeout(Duration::from_secs(1));
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }
}
