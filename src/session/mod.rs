//! One server and its MCP lifecycle, written once above every transport (contract §2–§3): start
//! the transport, the handshake ([`legacy`]), `tools/list` with pagination, `tools/call` with
//! its timeout and cancellation, and failures told in words with secrets masked (§9).

mod legacy;

use crate::calls::CallState;
use crate::config::{Endpoint, ServerSpec};
use crate::conn::{lock, Conn, Limits, ProgressSink, RequestError};
use crate::live_bridge::{LiveBridge, ASKED_WITHOUT_RESOLVER};
use crate::transport::Transport;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Progress tokens, unique per call in the process (§7: every `tools/call` carries one).
static NEXT_PROGRESS_TOKEN: AtomicU64 = AtomicU64::new(1);

/// What the caller controls of one `tools/call` (§7).
pub(crate) struct CallCtl<'a> {
    /// The per-call `timeoutMs`, else the server's `timeout`: an idle timeout.
    pub(crate) timeout: Option<Duration>,
    /// Where the call's progress notifications go (on the calling thread).
    pub(crate) progress: ProgressSink<'a>,
    /// Set for a call the host may cancel.
    pub(crate) state: Option<&'a CallState>,
}

impl CallCtl<'_> {
    /// A plain `tn_call_tool`: the server's timeout, no progress callback, no cancel.
    pub(crate) const PLAIN: CallCtl<'static> = CallCtl {
        timeout: None,
        progress: None,
        state: None,
    };
}

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
        Endpoint::Remote { url, headers, net } => crate::transport::http::connect(
            url,
            headers,
            net,
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
        limits: Limits,
        progress_token: Option<u64>,
        sink: ProgressSink<'_>,
        started: &dyn Fn(u64),
    ) -> (Result<String, RequestError>, bool) {
        self.hold.pass(self.spec.timeout);
        let send = || {
            self.conn
                .request(method, params_json, limits, progress_token, sink, started)
        };
        let (reply, asked) = send();
        match reply {
            Err(RequestError::SessionExpired(generation)) => {
                if let Err(e) = legacy::reestablish(self, generation) {
                    return (Err(e), asked);
                }
                let (again, asked_again) = send();
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
        let limits = Limits::phase(self.spec.timeout);
        let line = self
            .request(method, params_json, limits, None, None, &|_| {})
            .0?;
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
                .map_err(|f| self.phase_error("tools/list", &self.explain(&f)))?;
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
    /// The call carries a progressToken; progress restarts its idle timeout, bounded by
    /// `maxTotalTimeout`, and a cancel or timeout tells the server (§7).
    pub(crate) fn call(&self, remote: &str, args_json: &str, ctl: &CallCtl<'_>) -> Option<String> {
        let token = NEXT_PROGRESS_TOKEN.fetch_add(1, Ordering::Relaxed);
        let mut params = String::with_capacity(remote.len() + args_json.len() + 64);
        params.push_str(r#"{"name":"#);
        crate::jsonrpc::push_json_string(&mut params, remote);
        params.push_str(r#","arguments":"#);
        params.push_str(args_json);
        params.push_str(r#","_meta":{"progressToken":"#);
        params.push_str(&token.to_string());
        params.push_str("}}");
        let limits = Limits {
            idle: ctl.timeout.unwrap_or(self.spec.timeout),
            total: self.spec.max_total_timeout,
        };
        let started = |id: u64| {
            if let Some(st) = ctl.state {
                st.started(&self.conn, id);
            }
        };
        let (reply, asked) = self.request(
            "tools/call",
            Some(&params),
            limits,
            Some(token),
            ctl.progress,
            &started,
        );
        let reply = match ctl.state {
            // A cancel that came first wins over whatever the server answered (§7); the server
            // is told unless it had already answered.
            Some(st) if !st.decide() => {
                if !matches!(reply, Ok(_) | Err(RequestError::Closed)) {
                    self.abandon(st.request_id(), "cancelled by the host");
                }
                Err(RequestError::Cancelled)
            }
            _ => reply,
        };
        let reply =
            reply.and_then(|line| crate::shape::from_response(&line).map_err(RequestError::Rpc));
        let result = self.shape_outcome(remote, reply, limits)?;
        Some(if asked {
            crate::shape::append_line(&result, ASKED_WITHOUT_RESOLVER)
        } else {
            result
        })
    }

    /// Tells the server that request `id` is abandoned (§7): the elicitations on its stream
    /// are answered cancel, then `notifications/cancelled`.
    fn abandon(&self, id: u64, reason: &str) {
        self.conn.close_carried(id);
        let mut params = format!(r#"{{"requestId":{id},"reason":"#);
        crate::jsonrpc::push_json_string(&mut params, reason);
        params.push('}');
        let _ = self.conn.notify("notifications/cancelled", Some(&params));
    }

    fn shape_outcome(
        &self,
        remote: &str,
        reply: Result<String, RequestError>,
        limits: Limits,
    ) -> Option<String> {
        let server = &self.spec.name;
        let text = match reply {
            Ok(result) => return Some(result),
            Err(RequestError::Closed) => return None,
            Err(RequestError::Cancelled) => {
                format!("server `{server}`: tools/call `{remote}` was cancelled")
            }
            Err(RequestError::Timeout(id)) => {
                self.abandon(
                    id,
                    &format!("timed out after {} ms", limits.idle.as_millis()),
                );
                format!(
                    "server `{server}`: tools/call `{remote}` timed out: no answer within {} ms{}",
                    limits.idle.as_millis(),
                    self.stderr_tail()
                )
            }
            Err(RequestError::TimedOutTotal(id)) => {
                self.abandon(id, "maxTotalTimeout reached");
                format!(
                    "server `{server}`: tools/call `{remote}` timed out: still running after maxTotalTimeout ({} ms)",
                    limits.total.as_millis()
                )
            }
            Err(f) => format!(
                "server `{server}`: tools/call `{remote}` failed: {}",
                self.explain(&f)
            ),
        };
        Some(crate::shape::failure(&self.spec.secrets().mask(&text)))
    }

    /// "; stderr: …" when the child wrote something (§3), else "".
    fn stderr_tail(&self) -> String {
        let tail = self.transport.diagnostics();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr: {tail}")
        }
    }
}
