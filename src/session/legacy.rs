//! The `initialize` handshake of the MCP revisions 2024-11-05 … 2025-11-25 (contract §3, §5):
//! `initialize`, `notifications/initialized`, the server's standalone stream; and, over HTTP,
//! the same again when the server forgot our session (a 404), once for all the requests that
//! met it, with new requests held until the new session's stream is open.

use super::{Session, StartError};
use crate::conn::RequestError;
use crate::util::lock;
use serde_json::Value;

/// The protocol version we offer, and the ones we accept back (§3).
use crate::versions::{HANDSHAKE_VERSION, HANDSHAKE_VERSIONS_ACCEPTED};

/// The `initialize` params: our version, client info, and the elicitation capability only
/// when a resolver is registered (§4 "Capability").
fn initialize_params(with_resolver: bool) -> String {
    let caps = if with_resolver {
        r#"{"elicitation":{"form":{},"url":{}}}"#
    } else {
        "{}"
    };
    format!(
        r#"{{"protocolVersion":"{HANDSHAKE_VERSION}","capabilities":{caps},"clientInfo":{{"name":"toolnexus","version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

/// Why the handshake did not succeed.
pub(super) enum HandshakeError {
    /// `initialize` was answered -32022 listing MCP 2026-07-28 (§6: switch to it once).
    WantsModern(String),
    Failed(StartError),
}

/// `initialize` → the version the server settled on, `notifications/initialized`, then the
/// server's standalone stream, opened before the first list (§5: servers drop requests they
/// send while none is open). Returns the version and any warning for the status.
pub(super) fn handshake(s: &Session) -> Result<(String, Vec<String>), HandshakeError> {
    let version = initialize(s)?;
    finish(s, &version).map(|w| (version, w))
}

/// `initialize` alone: the version the server settled on (the session, over HTTP, is the
/// transport's from then on).
pub(super) fn initialize(s: &Session) -> Result<String, HandshakeError> {
    let init = s.conn.request_value(
        "initialize",
        Some(&initialize_params(s.with_resolver)),
        s.spec.timeout,
    );
    let init = match init {
        Ok(v) => v,
        Err(RequestError::Rpc(e)) if super::modern::is_modern_error(&e) => {
            return Err(HandshakeError::WantsModern(
                s.explain(&RequestError::Rpc(e)),
            ))
        }
        Err(f) => return Err(HandshakeError::Failed(s.failed("initialize", &f))),
    };
    s.learned_capabilities(&init);
    let version = init
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !HANDSHAKE_VERSIONS_ACCEPTED.contains(&version.as_str()) {
        return Err(HandshakeError::Failed(s.phase_error(
            "initialize",
            &format!(
                "the server answered protocolVersion {}, which this client does not speak (it accepts {})",
                init.get("protocolVersion").map(crate::json::to_text).unwrap_or_else(|| "(none)".into()),
                HANDSHAKE_VERSIONS_ACCEPTED.join(", ")
            ),
        )));
    }
    Ok(version)
}

/// The rest of the handshake after `initialize` settled on `version`: the version noted,
/// `notifications/initialized`, the standalone stream; any warning for the status.
pub(super) fn finish(s: &Session, version: &str) -> Result<Vec<String>, HandshakeError> {
    if let Some(h) = &s.http {
        h.negotiated(version);
    }
    s.conn
        .notify_ordered("notifications/initialized")
        .map_err(|e| HandshakeError::Failed(s.phase_error("initialize", &e)))?;
    let mut warnings: Vec<String> = s
        .http
        .as_ref()
        .and_then(|h| h.open_get_stream())
        .into_iter()
        .collect();
    warnings.extend(set_log_level(s));
    Ok(warnings)
}

/// `logging/setLevel` with the configured `logLevel` (docs/live-servers.md), after the handshake; a
/// warning for the status when the server refused it (its messages then come at its own
/// level, and the client still hands on only those at or above the configured one).
fn set_log_level(s: &Session) -> Option<String> {
    let level = s.spec.log_level?;
    let params = format!(r#"{{"level":"{}"}}"#, level.name());
    match s
        .conn
        .request_value("logging/setLevel", Some(&params), s.spec.timeout)
    {
        Ok(_) => None,
        Err(f) => Some(format!(
            "logLevel: the server did not take logging/setLevel \"{}\": {}",
            level.name(),
            s.explain(&f)
        )),
    }
}

/// A request sent on HTTP session `generation` met a 404: initialize again, unless another
/// request already did (§5). New requests wait meanwhile ([`Session::hold`]).
pub(super) fn reestablish(s: &Session, generation: u64) -> Result<(), RequestError> {
    let _one_at_a_time = lock(&s.renewing);
    if s.http.as_ref().map_or(0, |h| h.session_generation()) != generation {
        return Ok(());
    }
    s.hold.close();
    let r = renew(s);
    s.hold.open();
    r
}

fn renew(s: &Session) -> Result<(), RequestError> {
    let init = s.conn.request_value(
        "initialize",
        Some(&initialize_params(s.with_resolver)),
        s.spec.timeout,
    );
    match init {
        Ok(v) => s.learned_capabilities(&v),
        Err(e) => {
            return Err(RequestError::Lost(format!(
                "the session expired (HTTP 404) and re-initializing failed: {}",
                e.explain(s.spec.timeout)
            )))
        }
    }
    s.conn
        .notify_ordered("notifications/initialized")
        .map_err(|e| {
            RequestError::Lost(format!(
                "re-initializing failed at notifications/initialized: {e}"
            ))
        })?;
    if let Some(h) = &s.http {
        let _ = h.open_get_stream();
    }
    let _ = set_log_level(s);
    // A new session may list other tools (docs/live-servers.md): the client lists them again.
    s.conn.renewed();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_follow_the_resolver() {
        assert!(initialize_params(true).contains(r#""elicitation":{"form":{},"url":{}}"#));
        assert!(initialize_params(false).contains(r#""capabilities":{}"#));
    }
}
