//! The MCP protocol versions this client speaks (contract §3, §6), named once: the session
//! offers and accepts them, the HTTP transport and OAuth discovery put them in headers. A leaf
//! under every layer that needs one.

/// MCP 2026-07-28, the modern era: no handshake, the version in every request's `_meta`.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";

/// The handshake era's version offered in `initialize` (and sent on OAuth discovery requests).
pub(crate) const HANDSHAKE_VERSION: &str = "2025-11-25";

/// The handshake-era versions accepted back in an `initialize` result, newest first.
pub(crate) const HANDSHAKE_VERSIONS_ACCEPTED: [&str; 4] =
    [HANDSHAKE_VERSION, "2025-06-18", "2025-03-26", "2024-11-05"];
