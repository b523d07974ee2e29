//! Transports: how bytes reach a server and come back, and nothing of the MCP lifecycle (the
//! handshake, list, call and the bridge live above them, in `session`, `conn` and `host`,
//! written once). A transport sends what the connection hands it and files every inbound
//! message back through the [`Inbound`] sink it was given (the connection implements it), so
//! the arrow points down: nothing here names `conn`.

#[cfg(test)]
pub(crate) mod fake;
pub(crate) mod http;
pub(crate) mod sse;
mod stderr;
pub(crate) mod stdio;

pub(crate) use crate::request::{RequestError, Routing};
use std::time::Duration;

/// How long `tn_disconnect` lets a child exit on its own after stdin closes (§3).
pub(crate) const DISCONNECT_GRACE: Duration = Duration::from_secs(2);
/// The same for a server that failed to start: it serves nobody, so it is not waited on long.
pub(crate) const FAILED_START_GRACE: Duration = Duration::from_millis(250);

/// One outbound JSON-RPC message, with what the connection already knows of it (so no
/// transport parses what the library itself built).
pub(crate) struct Outgoing<'a> {
    /// The complete message, one line of JSON.
    pub(crate) text: &'a str,
    pub(crate) kind: OutKind<'a>,
    /// What MCP 2026-07-28 over HTTP repeats in headers (§6): `Mcp-Name` and `Mcp-Param-*`.
    pub(crate) routing: Option<&'a Routing>,
    /// A request's own timeout (the call's, §7): writing it ends by then (docs/http-and-tls.md). None: the
    /// transport's phase timeout.
    pub(crate) timeout: Option<Duration>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum OutKind<'a> {
    /// A request of ours; its response goes to the connection's waiter for `id`.
    Request { id: u64, method: &'a str },
    /// A notification; `ordered` ones reach the server before `send` returns (the handshake's
    /// `notifications/initialized` must precede what follows it).
    Notification { method: &'a str, ordered: bool },
    /// Our reply to a server request; `ordered` ones reach the server before `send` returns
    /// (a call's cancel answers must precede its `notifications/cancelled`, §7).
    Response { ordered: bool },
}

/// Where a transport files what comes in, and the little it asks of the connection above it
/// (transports know this, not the connection's insides).
pub(crate) trait Inbound: Send + Sync {
    /// One inbound message (a line of JSON), carried by request `carrier`'s stream (HTTP) or
    /// by none.
    fn message(&self, line: &[u8], carrier: Option<u64>);
    /// The connection failed: every pending request and every later one fail with `why`.
    fn fail_all(&self, why: RequestError);
    /// Request `id` failed.
    fn fail_one(&self, id: u64, why: RequestError);
    /// An inbound notification was dropped (the reader fell behind, §5).
    fn dropped(&self);
    /// Whether request `id` still waits for its answer.
    fn is_pending(&self, id: u64) -> bool;
    /// Whether request `id`'s timer stands still (an elicitation it carried is outstanding).
    fn is_paused(&self, id: u64) -> bool;
}

/// What a transport does (architecture principle 1: a transport is small).
pub(crate) trait Transport: Send + Sync {
    /// Sends one message (no trailing newline).
    fn send(&self, msg: &Outgoing<'_>) -> Result<(), String>;
    /// The request `id` got no answer in time and was given up; a transport that holds work
    /// for it (an HTTP stream) drops that work.
    fn abandon(&self, _id: u64) {}
    /// Reads on request `id`'s reply on this (its caller's) thread for at most `left` (the
    /// HTTP direct path); false when the transport does not read it here, and the caller
    /// simply waits to be woken.
    fn drive(&self, _id: u64, _left: Duration) -> bool {
        false
    }
    /// Request `id` ended on another thread (answered elsewhere, cancelled, failed): a caller
    /// reading its reply stops.
    fn interrupt(&self, _id: u64) {}
    /// Ends the connection, bounded (§3): for stdio close stdin, wait up to `grace` for the
    /// child to exit, then SIGTERM, SIGKILL the process group, reap; for HTTP end the session.
    fn shutdown(&self, grace: Duration);
    /// Diagnostics for failure messages (a stdio child's stderr tail), possibly empty.
    fn diagnostics(&self) -> String {
        String::new()
    }
    /// How the server's process ended, in words (`exited with status 3`, `was killed by signal
    /// 9`), once it has; None while it runs or where there is no process (HTTP). The status's
    /// `lastExit` (docs/live-servers.md).
    fn exit(&self) -> Option<String> {
        None
    }
    /// The connection is about to close: writes stop waiting on a peer that does not read.
    fn begin_close(&self) {}
    /// Whether a call is cancelled by closing its response stream rather than with
    /// `notifications/cancelled` (modern HTTP, §7).
    fn cancels_by_closing(&self) -> bool {
        false
    }
    /// Whether each request gets its own pause clock (only the call whose stream carried an
    /// elicitation pauses: streamable HTTP) rather than the connection's one (stdio, §4).
    fn clock_per_call(&self) -> bool {
        false
    }
    /// Whether the connection can carry the server's own requests (push-style questions, §4):
    /// stdio can, streamable HTTP only with a session (a stateless server cannot match our
    /// answer to its question), legacy HTTP+SSE can.
    fn carries_server_requests(&self) -> bool {
        true
    }
    /// Whether the peer has read everything written to it so far (a stdio child's stdin pipe
    /// is empty); None where that cannot be seen. The era probe's timeout counts from then
    /// (docs/protocol-eras.md), so a child slow to start under load is not taken for a legacy one.
    fn peer_read_all(&self) -> Option<bool> {
        None
    }
}
