//! Transports: how bytes reach a server and come back. Everything above them (initialize,
//! list, call, the bridge) lives in `conn`, `session` and `client` and is written once.

pub mod http;
pub mod http_client;
pub mod sse;
pub mod stdio;

pub use crate::sys::block_sigpipe_on_this_thread;

/// How long `tn_disconnect` lets a child exit on its own after stdin closes (§3).
pub(crate) const DISCONNECT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// The same for a server that failed to start: it serves nobody, so it is not waited on long.
pub(crate) const FAILED_START_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

/// What every transport offers besides sending (which is [`crate::conn::Outbound`]).
pub trait Transport: Send + Sync {
    /// Ends the connection, bounded (§3): for stdio close stdin, wait up to `grace` for the
    /// child to exit, then SIGTERM, SIGKILL the process group, reap; for HTTP end the session.
    fn shutdown(&self, grace: std::time::Duration);
    /// Diagnostics for failure messages (a stdio child's stderr tail), possibly empty.
    fn diagnostics(&self) -> String;
    /// The connection is about to close: writes stop waiting on a peer that does not read.
    fn begin_close(&self) {}
    /// The protocol version `initialize` settled on (HTTP sends it on every later request).
    fn negotiated(&self, _version: &str) {}
    /// After `notifications/initialized`: opens the server's standalone stream where the
    /// transport has one, and waits for the server's answer (§5). A warning for the status
    /// when it could not be opened.
    fn open_server_stream(&self) -> Option<String> {
        None
    }
}
