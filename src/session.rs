//! One server (contract §2–§3): start the transport, `initialize`, `notifications/initialized`,
//! `tools/list` with pagination, and `tools/call` with its timeout and cancellation.

use crate::config::{ServerSpec, Transport as Kind};
use crate::conn::{Bridge, Conn, Failure};
use crate::transport::Transport;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// The protocol version we offer, and the ones we accept back (contract §3, the `initialize` handshake).
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";
pub(crate) const ACCEPTED_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The most `tools/list` pages followed (§3).
pub(crate) const MAX_PAGES: usize = 1000;

/// A connected server.
pub struct Session {
    pub spec: ServerSpec,
    pub conn: Arc<Conn>,
    pub transport: Arc<dyn Transport>,
    pub protocol_version: String,
    /// Things the status should say about a connected server (e.g. no standalone stream).
    pub warnings: Vec<String>,
}

/// A server that could not be brought up: the message names server, phase and cause.
pub struct Failed {
    pub message: String,
}

/// Renders a request failure for humans; configured header values are masked in whatever
/// server text it quotes (§9).
pub fn describe(f: &Failure, spec: &ServerSpec) -> String {
    spec.secrets().mask(&describe_unmasked(f, spec))
}

fn describe_unmasked(f: &Failure, spec: &ServerSpec) -> String {
    match f {
        Failure::Rpc(Value::String(why)) => why.clone(),
        Failure::Rpc(e) => {
            let code = e.get("code").map(crate::json::to_text).unwrap_or_default();
            let msg = e.get("message").and_then(Value::as_str).unwrap_or("");
            format!("the server answered with JSON-RPC error {code}: {msg}")
        }
        Failure::Timeout(_) => format!("no answer within {} ms", spec.timeout.as_millis()),
        Failure::Lost(m) => m.clone(),
        Failure::Closed => "the client was disconnected".into(),
    }
}

fn phase_error(spec: &ServerSpec, phase: &str, cause: &str) -> Failed {
    Failed {
        message: format!(
            "server `{}` failed during `{phase}`: {}",
            spec.name,
            spec.secrets().mask(cause)
        ),
    }
}

/// The `initialize` params: our version, client info, and the elicitation capability only
/// when a resolver is registered (§4 "Capability").
fn initialize_params(with_resolver: bool) -> String {
    let caps = if with_resolver {
        r#"{"elicitation":{"form":{},"url":{}}}"#
    } else {
        "{}"
    };
    format!(
        r#"{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{caps},"clientInfo":{{"name":"toolnexus","version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

/// Starts the server and lists its tools. On failure the transport is already shut down.
pub fn open(
    spec: &ServerSpec,
    bridge: Option<Bridge>,
) -> Result<(Session, Vec<Map<String, Value>>), Failed> {
    let with_resolver = bridge.is_some();
    let conn = Conn::new(&spec.name, bridge);
    let transport: Arc<dyn Transport> = match &spec.transport {
        Kind::Local { command, env, cwd } => crate::transport::stdio::spawn(
            &spec.name,
            command,
            env,
            cwd.as_deref(),
            spec.max_message_bytes,
            spec.timeout,
            &conn,
        )
        .map_err(|e| phase_error(spec, "connect", &e))?,
        Kind::Remote { url, headers, net } => crate::transport::http::connect(
            url,
            headers,
            net,
            spec.timeout,
            spec.max_message_bytes,
            &conn,
        )
        .map_err(|e| phase_error(spec, "connect", &e))?,
    };
    let session = Session {
        spec: spec.clone(),
        conn,
        transport,
        protocol_version: String::new(),
        warnings: Vec::new(),
    };
    match session.handshake(with_resolver) {
        Ok((version, warnings, tools)) => Ok((
            Session {
                protocol_version: version,
                warnings,
                ..session
            },
            tools,
        )),
        Err(f) => {
            session.conn.fail(Failure::Closed);
            session
                .transport
                .shutdown(crate::transport::FAILED_START_GRACE);
            Err(f)
        }
    }
}

impl Session {
    /// [`describe`], plus the child's last stderr lines when the server went silent (§3: a
    /// failure message carries the stderr tail; a dead child's already does).
    fn explain(&self, f: &Failure) -> String {
        let mut msg = describe(f, &self.spec);
        if matches!(f, Failure::Timeout(_)) {
            let tail = self.transport.diagnostics();
            if !tail.is_empty() {
                msg.push_str("; stderr: ");
                msg.push_str(&tail);
            }
        }
        msg
    }

    /// `initialize`, `notifications/initialized`, the server's standalone stream (before the
    /// first list, §5), then every `tools/list` page.
    #[allow(clippy::type_complexity)]
    fn handshake(
        &self,
        with_resolver: bool,
    ) -> Result<(String, Vec<String>, Vec<Map<String, Value>>), Failed> {
        let spec = &self.spec;
        let init = self
            .conn
            .request_value(
                "initialize",
                Some(&initialize_params(with_resolver)),
                spec.timeout,
            )
            .map_err(|f| phase_error(spec, "initialize", &self.explain(&f)))?;
        let version = init
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !ACCEPTED_VERSIONS.contains(&version.as_str()) {
            return Err(phase_error(
                spec,
                "initialize",
                &format!(
                    "the server answered protocolVersion {}, which this client does not speak (it accepts {})",
                    init.get("protocolVersion").map(crate::json::to_text).unwrap_or_else(|| "(none)".into()),
                    ACCEPTED_VERSIONS.join(", ")
                ),
            ));
        }
        self.transport.negotiated(&version);
        self.conn
            .notify("notifications/initialized", None)
            .map_err(|e| phase_error(spec, "initialize", &e))?;
        let warnings: Vec<String> = self
            .transport
            .open_server_stream()
            .map(|w| spec.secrets().mask(&w))
            .into_iter()
            .collect();
        let tools = self.list_tools()?;
        Ok((version, warnings, tools))
    }

    fn list_tools(&self) -> Result<Vec<Map<String, Value>>, Failed> {
        let spec = &self.spec;
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
                .conn
                .request_value("tools/list", params.as_deref(), spec.timeout)
                .map_err(|f| phase_error(spec, "tools/list", &self.explain(&f)))?;
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
    pub fn call(&self, remote: &str, args_json: &str) -> Option<String> {
        let mut params = String::with_capacity(remote.len() + args_json.len() + 32);
        params.push_str(r#"{"name":"#);
        crate::jsonrpc::push_json_string(&mut params, remote);
        params.push_str(r#","arguments":"#);
        params.push_str(args_json);
        params.push('}');
        let (reply, asked) =
            self.conn
                .request_noting("tools/call", Some(&params), self.spec.timeout);
        let reply = reply.and_then(|line| crate::shape::from_response(&line).map_err(Failure::Rpc));
        let result = self.shape_outcome(remote, reply)?;
        Some(if asked {
            crate::shape::append_line(&result, crate::conn::ASKED_WITHOUT_RESOLVER)
        } else {
            result
        })
    }

    fn shape_outcome(&self, remote: &str, reply: Result<String, Failure>) -> Option<String> {
        match reply {
            Ok(result) => Some(result),
            Err(Failure::Closed) => None,
            Err(f) => {
                if let Failure::Timeout(id) = f {
                    let _ = self.conn.notify(
                        "notifications/cancelled",
                        Some(&format!(
                            r#"{{"requestId":{id},"reason":"timed out after {} ms"}}"#,
                            self.spec.timeout.as_millis()
                        )),
                    );
                }
                let phase = if matches!(f, Failure::Timeout(_)) {
                    format!("tools/call `{remote}` timed out")
                } else {
                    format!("tools/call `{remote}` failed")
                };
                Some(crate::shape::failure(&format!(
                    "server `{}`: {phase}: {}",
                    self.spec.name,
                    self.spec.secrets().mask(&self.explain(&f))
                )))
            }
        }
    }
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
