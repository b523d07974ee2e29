//! Transports: how bytes reach a server and come back. Everything above them (initialize,
//! list, call, the bridge) lives in `conn`, `session` and `client` and is written once.

pub mod http;
pub mod sse;
pub mod stdio;

pub use crate::ffi::os::block_sigpipe_on_this_thread;

/// What every transport offers besides sending (which is [`crate::conn::Outbound`]).
pub trait Transport: Send + Sync {
    /// Ends the connection, bounded (§3): for stdio close stdin, wait, SIGTERM, SIGKILL the
    /// process group, reap; for HTTP end the session.
    fn shutdown(&self);
    /// Diagnostics for failure messages (a stdio child's stderr tail), possibly empty.
    fn diagnostics(&self) -> String;
    /// The protocol version `initialize` settled on (HTTP sends it on every later request).
    fn negotiated(&self, _version: &str) {}
}
