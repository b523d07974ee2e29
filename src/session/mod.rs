//! One server and its MCP lifecycle, written once above every transport (contract §2–§3): start
//! the transport, the handshake ([`legacy`]), `tools/list` with pagination, `tools/call` with
//! its timeout and cancellation, and failures told in words with secrets masked (§9).

mod legacy;

use crate::config::{Endpoint, ServerSpec};
use crate::conn::{lock, Conn, RequestError};
use crate::live_bridge::{LiveBridge, ASKED_WITHOUT_RESOLVER};
use crate::transport::Transport;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The most `tools/list` pages followed (§3).
const MAX_PAGES: usize = 1000;

/// A connected server.
pub(crate) struct Session {
    pub(crate) spec: ServerSpec,
    pub(crate) conn: Arc<Conn>,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) protocol_version: String,
    /// Things the status should say about a connected server (e.g. no standalone stream).
    pub(crate) warnings: Vec<String>,
    with_resolver: bool,
    /// Serialises renewing an expired HTTP session (§5).
    renewing: Mutex<()>,
    /// Closed while a session is renewed: new requests wait, bounded by the timeout.
    hold: Gate,
}

/// Why a server could not be brought up: the message names server, phase and cause.
pub(crate) struct StartError {
    pub(crate) message: String,
}

/// A gate requests pass through; closed while the session is being renewed.
#[derive(Default)]
struct Gate {
    closed: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    fn close(&self) {
        *lock(&self.closed) = true;
    }

    fn open(&self) {
        *lock(&self.closed) = false;
        self.changed.notify_all();
    }

    /// Waits while the gate is closed, at most `bound`.
    fn pass(&self, bound: Duration) {
        let closed = lock(&self.closed);
        if *closed {
            let _ = self
                .changed
                .wait_timeout_while(closed, bound, |c| *c)
                .map(drop);
        }
    }
}

/// Starts the server, runs the handshake and lists its tools. On failure the transport is
/// already shut down.
pub(crate) fn open(
    spec: &ServerSpec,
    live: Option<LiveBridge>,
) -> Result<(Session, Vec<Map<String, Value>>), StartError> {
    let with_resolver = live.is_some();
    let conn = Conn::new(&spec.name, live);
    let transport: Arc<dyn Transport> = match &spec.endpoint {
        Endpoint::Local { command, env, cwd } => crate::transport::stdio::spawn(
            &spec.name,
            command,
            env,
            cwd.as_deref(),
            spec.max_message_bytes,
            spec.timeout,
            &conn,
        )
        .map_err(|e| phase_error(spec, "connect", &e))?,
        Endpoint::Remote {
            url,
            headers,
            net,
            auth,
        } => crate::transport::http::connect(
            url,
            headers,
            net,
            auth,
            spec.timeout,
            spec.max_message_bytes,
            &conn,
        )
        .map_err(|e| phase_error(spec, "connect", &e))?,
    };
    let mut session = Session {
        spec: spec.clone(),
        conn,
        transport,
        protocol_version: String::new(),
        warnings: Vec::new(),
        with_resolver,
        renewing: Mutex::new(()),
        hold: Gate::default(),
    };
    let started = legacy::handshake(&session).and_then(|(version, warnings)| {
        session.protocol_version = version;
        session.warnings = warnings
            .iter()
            .map(|w| session.spec.secrets().mask(w))
            .collect();
        session.list_tools()
    });
    match started {
        Ok(tools) => Ok((session, tools)),
        Err(f) => {
            session.conn.fail(RequestError::Closed);
            session
                .transport
                .shutdown(crate::transport::FAILED_START_GRACE);
            Err(f)
        }
    }
}

fn phase_error(spec: &ServerSpec, phase: &str, cause: &str) -> StartError {
    StartError {
        message: format!(
            "server `{}` failed during `{phase}`: {}",
            spec.name,
            spec.secrets().mask(cause)
        ),
    }
}

impl Session {
    fn phase_error(&self, phase: &str, cause: &str) -> StartError {
        phase_error(&self.spec, phase, cause)
    }

    /// A request of `phase` failed; an authorization failure is phase `auth` (§8).
    fn failed(&self, phase: &str, f: &RequestError) -> StartError {
        let phase = if matches!(f, RequestError::Auth(_)) {
            "auth"
        } else {
            phase
        };
        self.phase_error(phase, &self.explain(f))
    }

    /// A failure in words with configured secrets masked (§9), plus the child's last stderr
    /// lines when the server went silent (§3: a dead child's message already has them).
    pub(crate) fn explain(&self, f: &RequestError) -> String {
        let mut msg = f.explain(self.spec.timeout);
        if matches!(f, RequestError::Timeout(_)) {
            let tail = self.transport.diagnostics();
            if !tail.is_empty() {
                msg.push_str("; stderr: ");
                msg.push_str(&tail);
            }
        }
        self.spec.secrets().mask(&msg)
    }

    /// A request, sent again once on a renewed session when the server forgot ours (§5).
    fn request(
        &self,
        method: &str,
        params_json: Option<&str>,
    ) -> (Result<String, RequestError>, bool) {
        self.hold.pass(self.spec.timeout);
        let (reply, asked) = self.conn.request(method, params_json, self.spec.timeout);
        match reply {
            Err(RequestError::SessionExpired(generation)) => {
                if let Err(e) = legacy::reestablish(self, generation) {
                    return (Err(e), asked);
                }
                let (again, asked_again) =
                    self.conn.request(method, params_json, self.spec.timeout);
                (again, asked || asked_again)
            }
            other => (other, asked),
        }
    }

    fn request_value(
        &self,
        method: &str,
        params_json: Option<&str>,
    ) -> Result<Value, RequestError> {
        let line = self.request(method, params_json).0?;
        crate::jsonrpc::result_value(&line).map_err(RequestError::Rpc)
    }

    fn list_tools(&self) -> Result<Vec<Map<String, Value>>, StartError> {
        let mut tools = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| {
                let mut s = String::from(r#"{"cursor":"#);
                crate::jsonrpc::push_json_string(&mut s, c);
                s.push('}');
                s
            });
            let page = self
                .request_value("tools/list", params.as_deref())
                .map_err(|f| self.failed("tools/list", &f))?;
            if let Some(Value::Array(items)) = page.get("tools") {
                tools.extend(items.iter().filter_map(|t| t.as_object().cloned()));
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() && seen.insert(next.to_string()) => {
                    cursor = Some(next.to_string());
                }
                _ => break,
            }
        }
        Ok(tools)
    }

    /// Calls `remote` with `args_json` (already checked to be a JSON object) and shapes the
    /// outcome as a ToolResult (§1): every failure is an isError result naming server, phase
    /// and cause. None only when the client is being disconnected. When the server asked for
    /// input meanwhile and no resolver is registered, the output's last line says so (§4).
    pub(crate) fn call(&self, remote: &str, args_json: &str) -> Option<String> {
        let mut params = String::with_capacity(remote.len() + args_json.len() + 32);
        params.push_str(r#"{"name":"#);
        crate::jsonrpc::push_json_string(&mut params, remote);
        params.push_str(r#","arguments":"#);
        params.push_str(args_json);
        params.push('}');
        let (reply, asked) = self.request("tools/call", Some(&params));
        let reply =
            reply.and_then(|line| crate::shape::from_response(&line).map_err(RequestError::Rpc));
        let result = self.shape_outcome(remote, reply)?;
        Some(if asked {
            crate::shape::append_line(&result, ASKED_WITHOUT_RESOLVER)
        } else {
            result
        })
    }

    fn shape_outcome(&self, remote: &str, reply: Result<String, RequestError>) -> Option<String> {
        match reply {
            Ok(result) => Some(result),
            Err(RequestError::Closed) => None,
            Err(f) => {
                if let RequestError::Timeout(id) = f {
                    let _ = self.conn.notify(
                        "notifications/cancelled",
                        Some(&format!(
                            r#"{{"requestId":{id},"reason":"timed out after {} ms"}}"#,
                            self.spec.timeout.as_millis()
                        )),
                    );
                }
                let phase = if matches!(f, RequestError::Timeout(_)) {
                    format!("tools/call `{remote}` timed out")
                } else {
                    format!("tools/call `{remote}` failed")
                };
                Some(crate::shape::failure(&format!(
                    "server `{}`: {phase}: {}",
                    self.spec.name,
                    self.explain(&f)
                )))
            }
        }
    }
}
