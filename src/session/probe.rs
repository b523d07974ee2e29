//! Which protocol era a server speaks (contract §6). `server/discover` goes first, carrying the
//! whole `_meta` envelope (servers answer -32602 to one without `clientCapabilities`, and a
//! TypeScript dual-era server answers -32601 to one without `_meta`, which would read as
//! legacy); over HTTP with the modern headers. A DiscoverResult, or a recognised modern error,
//! means modern; any other error or no answer within `probeTimeoutMs` means legacy (the
//! fallback keys on no single error code); a child that exited on the probe is started again.
//!
//! The verdict must not depend on load (docs/protocol-eras.md): over stdio `probeTimeoutMs` counts from the
//! moment the child has read the probe off its stdin (the pipe is empty), not from its start. A
//! child that is slow to start (node under load, a dozen servers starting at once) has not read
//! it yet, and is waited for, within the server's `timeout`; once it has read it, a server that
//! speaks 2026-07-28 answers in milliseconds, loaded or not. Over HTTP the server is already
//! running, and the timeout counts from the request.

use super::Era;
use super::{modern, Session};
use crate::conn::{Limits, Req, RequestError};

/// The probe's verdict.
pub(super) enum ProbeVerdict {
    Modern,
    /// Legacy, with what the probe got (for a failure text that names every attempt).
    Legacy(String),
    /// The child exited on the probe: legacy, on a new child.
    Exited(String),
    /// The login the probe needed failed (§8): the server fails in phase `auth`.
    Auth(RequestError),
}

impl ProbeVerdict {
    pub(super) fn note(&self) -> &str {
        match self {
            ProbeVerdict::Modern => "it answered the probe",
            ProbeVerdict::Legacy(n) | ProbeVerdict::Exited(n) => n,
            ProbeVerdict::Auth(_) => "the login failed",
        }
    }
}

pub(super) fn run(s: &Session) -> ProbeVerdict {
    s.wire_era(Era::Modern);
    let params = modern::discover_params(s.with_resolver, s.spec.log_level);
    let transport = s.transport.clone();
    let read_all = move || transport.peer_read_all().unwrap_or(true);
    let req = Req {
        limits: Limits {
            idle: s.spec.probe_timeout,
            total: s.spec.probe_timeout.max(s.spec.timeout),
        },
        armed: Some(&read_all),
        ..Req::plain("server/discover", Some(&params), s.spec.probe_timeout)
    };
    let r = s
        .conn
        .request(&req)
        .0
        .and_then(|line| crate::json::rpc::result_value(&line).map_err(RequestError::Rpc));
    let verdict = match r {
        Ok(v) if modern::is_discover_result(&v) => {
            s.learned_capabilities(&v);
            ProbeVerdict::Modern
        }
        // Masked before it is cut, so that no part of a secret the server echoed survives (§9).
        Ok(v) => ProbeVerdict::Legacy(format!(
            "not a DiscoverResult: {}",
            crate::util::quoted(&s.spec.secrets().mask(&crate::json::to_text(&v)))
        )),
        Err(RequestError::Rpc(e)) if modern::is_modern_error(&e) => ProbeVerdict::Modern,
        Err(f @ RequestError::Auth(_)) => ProbeVerdict::Auth(f),
        Err(f) if s.conn.is_dead() => ProbeVerdict::Exited(s.explain(&f)),
        Err(RequestError::Timeout(_)) => ProbeVerdict::Legacy(format!(
            "no answer within probeTimeoutMs ({} ms){}",
            s.spec.probe_timeout.as_millis(),
            if s.transport.peer_read_all().is_some() {
                " after the server read it"
            } else {
                ""
            }
        )),
        // Never armed: the child did not even read the probe within the server's timeout.
        Err(RequestError::TimedOutTotal(_)) => ProbeVerdict::Legacy(format!(
            "the server did not read the probe within its timeout ({} ms)",
            s.spec.timeout.max(s.spec.probe_timeout).as_millis()
        )),
        Err(f) => ProbeVerdict::Legacy(s.explain(&f)),
    };
    if !matches!(verdict, ProbeVerdict::Modern) {
        s.wire_era(Era::Legacy);
    }
    verdict
}
