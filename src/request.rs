//! One request as the session hands it to a connection (contract §7): its method and params,
//! how long it may take (an idle and a total bound of active time), where its progress goes,
//! and its HTTP routing headers.

use crate::transport::Routing;
use std::time::Duration;

/// How long a request may take (contract §7): `idle` of active time without an answer or a
/// progress notification, and `total` of active time in all. Active time leaves out time
/// spent waiting for the host's resolver (§4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) idle: Duration,
    pub(crate) total: Duration,
}

impl Limits {
    /// One bound for both (the handshake's phases, §2).
    pub(crate) fn phase(timeout: Duration) -> Limits {
        Limits {
            idle: timeout,
            total: timeout,
        }
    }
}

/// One request to send: its method and params, and how the caller waits for it.
#[derive(Clone, Copy)]
pub(crate) struct Req<'a> {
    pub(crate) method: &'a str,
    pub(crate) params_json: Option<&'a str>,
    pub(crate) limits: Limits,
    /// The call's progressToken, routed to this request while it is in flight (§7).
    pub(crate) progress_token: Option<u64>,
    pub(crate) sink: ProgressSink<'a>,
    /// Learns the request id before the request is sent (a cancel can then reach it).
    pub(crate) started: &'a dyn Fn(u64),
    pub(crate) routing: Option<&'a Routing>,
    /// When set, the idle timeout counts only from the moment this first says true (the era
    /// probe: from when the child has read it, issue 23); `total` bounds the wait before.
    pub(crate) armed: Option<&'a dyn Fn() -> bool>,
}

impl<'a> Req<'a> {
    /// A request bounded by one phase timeout, without progress or routing.
    pub(crate) fn plain(method: &'a str, params_json: Option<&'a str>, timeout: Duration) -> Self {
        Req {
            method,
            params_json,
            limits: Limits::phase(timeout),
            progress_token: None,
            sink: None,
            started: &|_| {},
            routing: None,
            armed: None,
        }
    }
}

/// What a caller does with the progress notifications of its request (§7).
pub(crate) type ProgressSink<'a> = Option<&'a (dyn Fn(&str) + Sync)>;
