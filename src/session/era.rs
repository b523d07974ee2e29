//! The era policy (contract §6 as docs/protocol-eras.md states it): which era a
//! server is spoken to in, and why (`eraReason` in the status).
//!
//! A dual-era server asks in the era it is spoken to: push-style (`elicitation/create` while
//! the call is open) only in the handshake era, MRTR only in 2026-07-28. The default SDK
//! servers' asking tools are mostly push-style (`ctx.elicit()`, `create_elicitation`), and the
//! 2.x SDKs that bridge MRTR tools do so into the handshake era (TypeScript 2.4, Python's
//! resolver API). So with `"protocol": "auto"`:
//! - no resolver: nothing can ask; 2026-07-28 when the server speaks it (the probe first);
//! - a resolver and stdio: the handshake first, no probe (Python and FastMCP lock a process
//!   into 2026-07-28 at its first modern request); a server that refuses `initialize` as a
//!   2026-07-28-only one (-32022, or any refusal the probe then explains) is spoken to in
//!   2026-07-28;
//! - a resolver and HTTP: the probe first (it locks nothing over HTTP), and when the server
//!   speaks 2026-07-28, `initialize` too: a session means the handshake era can carry push
//!   questions, and it is used; no session (a stateless server cannot match an answer to its
//!   question) means only MRTR can ask, and 2026-07-28 is used.
//!
//! `"modern-first"` is the probe-first rule whatever the resolver (every question then MRTR or
//! -32042, all of them suspendable), `"legacy"` and `"modern"` fix the era. Nothing is ever
//! re-sent in the other era to recover a call.

use super::probe::{self, ProbeVerdict};
use super::Era;
use super::{legacy, Session, StartError};
use crate::config::{Endpoint, Protocol};
use crate::host::Host;

use crate::versions::MODERN_VERSION;

/// Chooses the era, runs the handshake where there is one, and records how (`era_reason`).
pub(super) fn choose(s: &mut Session, live: &Option<Host>) -> Result<(), StartError> {
    let stdio = matches!(s.spec.endpoint, Endpoint::Local { .. });
    let mut attempts: Vec<String> = Vec::new();
    let (probe_first, must_be_modern) = match s.spec.protocol {
        Protocol::Legacy => (false, false),
        Protocol::Modern => (true, true),
        Protocol::ModernFirst => (true, false),
        Protocol::Auto => (!(s.with_resolver && stdio), false),
    };
    let mut modern = false;
    let sse = matches!(s.spec.endpoint, Endpoint::Remote { sse: true, .. });
    let mut reason = match s.spec.protocol {
        Protocol::Legacy if sse => {
            "\"type\": \"sse\" (HTTP+SSE has only the handshake era)".to_string()
        }
        Protocol::Legacy => "\"protocol\": \"legacy\"".to_string(),
        _ => {
            "a resolver is registered and stdio carries push-style questions (the handshake first)"
                .to_string()
        }
    };
    if probe_first {
        match probe::run(s) {
            ProbeVerdict::Modern => {
                modern = true;
                reason = format!("the server answered server/discover ({MODERN_VERSION})");
            }
            ProbeVerdict::Auth(f) => return Err(s.failed("discover", &f)),
            verdict if must_be_modern => {
                return Err(s.phase_error(
                    "discover",
                    &format!(
                    "the server does not speak MCP {MODERN_VERSION} (\"protocol\":\"modern\"): {}",
                    verdict.note()
                ),
                ))
            }
            ProbeVerdict::Legacy(note) => {
                reason = format!("the {MODERN_VERSION} probe: {note}");
                attempts.push(reason.clone());
            }
            ProbeVerdict::Exited(note) => {
                reason =
                    format!("the {MODERN_VERSION} probe: {note} (the server was started again)");
                attempts.push(format!("the {MODERN_VERSION} probe: {note}"));
                s.restart(live)?;
            }
        }
    }
    if modern && s.spec.protocol == Protocol::Auto && s.with_resolver {
        // HTTP with a resolver: the handshake era too, when it opens a session.
        s.wire_era(Era::Legacy);
        match legacy::initialize(s) {
            Ok(version) if s.transport.carries_server_requests() => {
                return handshake_done(
                    s,
                    version,
                    format!(
                        "a resolver is registered and the server, which speaks {MODERN_VERSION} too, offers an HTTP session, which carries push-style questions"
                    ),
                );
            }
            Ok(_) => {
                reason = format!(
                    "the server answered server/discover ({MODERN_VERSION}); its handshake opens no HTTP session (stateless), so only MRTR can ask"
                );
            }
            Err(_) => {
                reason = format!(
                    "the server answered server/discover ({MODERN_VERSION}) and refused the handshake"
                );
            }
        }
    }
    if !modern {
        match legacy::handshake(s) {
            Ok((version, warnings)) => {
                s.protocol_version = version;
                s.warnings = warnings.iter().map(|w| s.spec.secrets().mask(w)).collect();
            }
            Err(legacy::HandshakeError::WantsModern(_)) if s.spec.protocol != Protocol::Legacy => {
                modern = true;
                reason = format!("`initialize` was answered -32022 listing {MODERN_VERSION}");
                if stdio {
                    // A child that refused the handshake may be on its way out (an rmcp
                    // server's `main` returns the error and exits, a little later): whether it
                    // is still there when the refusal is read is a race, so it is never asked
                    // anything more. A fresh child gets the first 2026-07-28 request.
                    reason.push_str(" (the server was started again)");
                    s.restart_after(live, &reason)?;
                }
            }
            Err(legacy::HandshakeError::WantsModern(why)) => {
                return Err(s.phase_error("initialize", &why));
            }
            Err(legacy::HandshakeError::Failed(mut e)) => {
                if !probe_first && s.spec.protocol == Protocol::Auto {
                    // The handshake went first (stdio with a resolver): a 2026-07-28-only
                    // server may refuse it in a way of its own; the probe tells, asked of a
                    // fresh child (the one that refused may be exiting, as above).
                    let refused = "the server refused the handshake (it was started again)";
                    s.restart_after(live, refused)?;
                    if let ProbeVerdict::Modern = probe::run(s) {
                        modern = true;
                        reason = format!(
                            "the server refused the handshake, was started again and answered server/discover ({MODERN_VERSION})"
                        );
                    }
                }
                if !modern {
                    // Over HTTP every attempt is named (§6); a stdio server that answered the
                    // probe with an error simply is a legacy one.
                    if !attempts.is_empty() && !stdio {
                        e.message
                            .push_str(&format!(" (before: {})", attempts.join("; ")));
                    }
                    return Err(e);
                }
            }
        }
    }
    if modern {
        s.era = Era::Modern;
        s.wire_era(Era::Modern);
        s.protocol_version = MODERN_VERSION.to_string();
    }
    s.era_reason = s.spec.secrets().mask(&reason);
    Ok(())
}

/// The handshake after an `initialize` that opened a session (HTTP with a resolver).
fn handshake_done(s: &mut Session, version: String, reason: String) -> Result<(), StartError> {
    match legacy::finish(s, &version) {
        Ok(warnings) => {
            s.warnings = warnings.iter().map(|w| s.spec.secrets().mask(w)).collect();
            s.protocol_version = version;
            s.era = Era::Legacy;
            s.era_reason = reason;
            Ok(())
        }
        Err(legacy::HandshakeError::Failed(e)) => Err(e),
        Err(legacy::HandshakeError::WantsModern(why)) => Err(s.phase_error("initialize", &why)),
    }
}
