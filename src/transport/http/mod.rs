//! HTTP for remote servers (contract §5, §9): [`streamable`] is streamable HTTP (with the
//! standalone stream in [`server_stream`]); [`legacy_sse`] the HTTP+SSE fallback. The clients,
//! the runtime and TLS are in [`crate::net`].

mod direct;
mod direct_reply;
mod inbox;
mod legacy_sse;
mod modern;
mod pool;
mod reply;
mod server_stream;
mod streamable;
pub(crate) mod wire;

pub(crate) use crate::util::{cut, redact};
pub(crate) use modern::MODERN_VERSION;
pub(crate) use streamable::{connect, parse_url, Remote};

/// A remote server's bounds: the phase timeout, the cap on one inbound message
/// (`maxMessageBytes`), and how long an idle kept-alive connection is kept.
pub(crate) struct Bounds {
    pub(crate) timeout: std::time::Duration,
    pub(crate) max_bytes: usize,
    pub(crate) pool_idle: std::time::Duration,
}

use reqwest::header::CONTENT_TYPE;

/// The HTTP session header (streamable HTTP).
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
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
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
