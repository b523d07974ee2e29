//! One request as the session hands it to a connection (contract §7): its method and params,
//! how long it may take (an idle and a total bound of active time), where its progress goes,
//! and its HTTP routing headers.

use crate::json::scan::Members;
use serde_json::Value;
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
    /// probe: from when the child has read it); `total` bounds the wait before.
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

/// The values of a modern request's routing headers (§6, SEP-2243).
#[derive(Default, Debug, Clone)]
pub(crate) struct Routing {
    /// `Mcp-Name`: the tool's name for `tools/call`.
    pub(crate) name: Option<String>,
    /// `Mcp-Param-<name>` headers: (name, value already encoded).
    pub(crate) params: Vec<(String, String)>,
}

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RequestError {
    /// The server answered with a JSON-RPC error object.
    Rpc(Value),
    /// No answer within the phase timeout (the request id, for `notifications/cancelled`).
    Timeout(u64),
    /// The connection failed (child gone, line too long, write failed…).
    Lost(String),
    /// The server no longer knows the HTTP session the request was sent on (its generation):
    /// the session establishes a new one and sends the request again (§5).
    SessionExpired(u64),
    /// No answer within `maxTotalTimeout`, however much progress was reported (§7).
    TimedOutTotal(u64),
    /// The host cancelled the call (§7).
    Cancelled,
    /// Authorization failed (§8): at connect, the server fails in phase `auth`.
    Auth(String),
    /// The client is being disconnected.
    Closed,
}

impl RequestError {
    /// The failure in words (server text is quoted as it came: the session masks secrets).
    pub(crate) fn explain(&self, timeout: Duration) -> String {
        match self {
            RequestError::Rpc(Value::String(why)) => why.clone(),
            RequestError::Rpc(e) => {
                let code = e.get("code").map(crate::json::to_text).unwrap_or_default();
                let msg = e.get("message").and_then(Value::as_str).unwrap_or("");
                format!("the server answered with JSON-RPC error {code}: {msg}")
            }
            RequestError::Timeout(_) => format!("no answer within {} ms", timeout.as_millis()),
            RequestError::TimedOutTotal(_) => "no answer within maxTotalTimeout".into(),
            RequestError::Lost(m) | RequestError::Auth(m) => m.clone(),
            RequestError::SessionExpired(_) => {
                "the server's HTTP session expired (HTTP 404) and could not be renewed".into()
            }
            RequestError::Cancelled => "cancelled by the host".into(),
            RequestError::Closed => "the client was disconnected".into(),
        }
    }
}

/// A response line as the server sent it, checked to be UTF-8 JSON, with what the reader's
/// validating pass noted of it (where `result` and `error` are, a common-shape result's text
/// parts), so the caller reads what it needs without scanning the line again; or why none
/// came.
pub(crate) type Reply = Result<Response, RequestError>;

/// A response line and its [`Members`]; it reads as the line (`&str`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Response {
    pub(crate) line: String,
    pub(crate) members: Members,
}

impl Response {
    /// A response the library put together itself (a finished task's result), scanned here.
    pub(crate) fn scanned(line: String) -> Response {
        let members = crate::json::scan::top_level(line.as_bytes())
            .map(|t| t.members)
            .unwrap_or_default();
        Response { line, members }
    }

    /// The `error` value's text when the line has an `error` and no `result` (a JSON-RPC
    /// error answer); None when it has a result, or neither. Err: the keys are escaped, so
    /// only parsing the line can tell.
    pub(crate) fn error_text(&self) -> Result<Option<&str>, ()> {
        let m = &self.members;
        if m.parse_instead {
            return Err(());
        }
        Ok(match (m.result(), m.error()) {
            (None, Some(e)) => self.line.get(e),
            _ => None,
        })
    }
}

impl std::ops::Deref for Response {
    type Target = str;
    fn deref(&self) -> &str {
        &self.line
    }
}

impl PartialEq<String> for Response {
    fn eq(&self, other: &String) -> bool {
        self.line == *other
    }
}
