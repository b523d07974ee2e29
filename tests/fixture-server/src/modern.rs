//! MCP 2026-07-28, the "modern era" (`--modern`, `--dual`): no `initialize`; every request
//! carries the `_meta` envelope (protocol version and client capabilities); `server/discover`;
//! results carry `resultType`. The MRTR tools are in `mrtr.rs`; the HTTP header checks in
//! `http.rs`.

use crate::mrtr;
use crate::opts;
use crate::out::{send_error, send_value_result, Out};
use crate::proto::State;
use crate::tools::{tools_call, Blocking};
use serde_json::{json, Map, Value};
use std::sync::mpsc::Receiver;

pub const VERSION: &str = "2026-07-28";
pub const K_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const K_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

/// A JSON-RPC error with optional `data`.
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>, data: Option<Value>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data,
        }
    }

    /// The whole error response line (ending in '\n').
    pub fn line(&self, id: &Value) -> Vec<u8> {
        let mut err = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            err["data"] = d.clone();
        }
        let mut line = json!({"jsonrpc": "2.0", "id": id, "error": err}).to_string();
        line.push('\n');
        line.into_bytes()
    }
}

/// Whether this server answers requests of either era (`--modern` or `--dual`).
pub fn enabled() -> bool {
    opts().modern || opts().dual
}

fn meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// The protocol version the request's envelope names, if it names one.
pub fn claim(params: Option<&Value>) -> Option<&Value> {
    meta(params)?.get(K_VERSION)
}

/// Whether the request is served as modern: always with `--modern`; with `--dual` when it
/// carries a protocol-version claim.
pub fn is_modern(params: Option<&Value>) -> bool {
    opts().modern || (opts().dual && claim(params).is_some())
}

/// -32022 UnsupportedProtocolVersion (`requested` only when the request named one).
pub fn unsupported(requested: Option<&Value>) -> RpcError {
    let mut data = json!({"supported": [VERSION]});
    let message = match requested {
        Some(v) => {
            data["requested"] = v.clone();
            match v.as_str() {
                Some(s) => format!("Unsupported protocol version: {s}"),
                None => format!("Unsupported protocol version: {v}"),
            }
        }
        None => "Unsupported protocol version: the request did not name a protocol version".into(),
    };
    RpcError::new(-32022, message, Some(data))
}

/// The error a request gets before it is dispatched, if any: a legacy `initialize` or a
/// claim-less or other-version request (-32022), an envelope without client capabilities
/// (-32602).
pub fn check_envelope(method: &str, params: Option<&Value>) -> Result<(), RpcError> {
    if method == "initialize" {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .cloned()
            .unwrap_or(Value::Null);
        return Err(unsupported(Some(&requested)));
    }
    match claim(params) {
        None => return Err(unsupported(None)),
        Some(v) if v.as_str() != Some(VERSION) => return Err(unsupported(Some(v))),
        Some(_) => {}
    }
    if !meta(params).is_some_and(|m| m.get(K_CAPS).is_some_and(Value::is_object)) {
        let m =
            format!("Invalid _meta envelope for protocol revision {VERSION}: {K_CAPS}: missing");
        let data = json!({"envelope": {"key": K_CAPS, "problem": "missing"}});
        return Err(RpcError::new(-32602, m, Some(data)));
    }
    Ok(())
}

/// The request's client capabilities (`{}` when absent).
pub fn capabilities(params: &Value) -> Value {
    meta(Some(params))
        .and_then(|m| m.get(K_CAPS))
        .cloned()
        .unwrap_or_else(|| json!({}))
}

/// The request's `_meta.progressToken`.
pub fn progress_token(params: Option<&Value>) -> Option<Value> {
    meta(params)?.get("progressToken").cloned()
}

fn discover_result() -> Value {
    let mut capabilities = if opts().skills {
        crate::skills::capabilities()
    } else if crate::live::enabled() {
        json!({"tools": {"listChanged": true}, "logging": {}})
    } else {
        json!({"tools": {}})
    };
    if opts().tasks {
        crate::tasks::add_capabilities(&mut capabilities, true);
    }
    crate::resources::add_capabilities(&mut capabilities);
    json!({
        "supportedVersions": [VERSION],
        "capabilities": capabilities,
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": opts().name, "version": "1"}}
    })
}

/// Answer a modern request whose envelope was checked; a blocking tool is handed back.
pub fn request(
    out: &dyn Out,
    state: &State,
    buf: &mut Vec<u8>,
    method: &str,
    id: Value,
    params: Option<Value>,
) -> Option<Blocking> {
    match method {
        "server/discover" => send_value_result(out, buf, &id, &discover_result()),
        "ping" => send_value_result(out, buf, &id, &json!({"resultType": "complete"})),
        // stdio (HTTP holds the request's own stream open: http.rs).
        "subscriptions/listen" if crate::live::listen_enabled() => {
            crate::live::listen_stdio(id, params.as_ref())
        }
        "tools/list" => {
            let out = Complete::new(out, true);
            crate::proto::tools_list(&out, buf, &id, params.as_ref());
        }
        "tools/call" => {
            let params = params.unwrap_or(Value::Null);
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            if mrtr::answer(out, buf, &id, name, &params) {
                return None;
            }
            if opts().tasks && crate::tasks::call(out, buf, &id, name, &params, true) {
                return None;
            }
            let out = Complete::new(out, false);
            let mut b = tools_call(&out, state, buf, id, Some(params))?;
            b.modern = true;
            return Some(b);
        }
        m if crate::resources::handles(m, params.as_ref(), true) => {
            return crate::resources::request(out, state, buf, id, m, params, true);
        }
        m if opts().skills && crate::skills::handles(m) => {
            crate::skills::request(out, buf, &id, m, params.as_ref(), true)
        }
        m if opts().tasks && crate::tasks::handles(m, true) => {
            crate::tasks::request(out, buf, &id, m, params.as_ref(), true);
        }
        _ => send_error(out, buf, &id, -32601, "Method not found"),
    }
    None
}

/// Send a modern pre-dispatch error.
pub fn send_rpc_error(out: &dyn Out, id: &Value, e: &RpcError) {
    out.respond(&e.line(id));
}

/// The HTTP status of a modern answer line: 404 for -32601, 400 for the modern errors
/// (-32020, -32021, -32022), else 200.
pub fn http_status(line: &[u8]) -> u16 {
    if !line.windows(8).any(|w| w == b"\"error\":") {
        return 200;
    }
    let code = serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64));
    match code {
        Some(-32601) => 404,
        Some(-32022..=-32020) => 400,
        _ => 200,
    }
}

/// An [`Out`] that adds `resultType:"complete"` (and for a listing `ttlMs` and
/// `cacheScope`) to the results of the legacy tools served in the modern era.
pub struct Complete<'a> {
    inner: &'a dyn Out,
    listing: bool,
}

impl<'a> Complete<'a> {
    pub fn new(inner: &'a dyn Out, listing: bool) -> Self {
        Complete { inner, listing }
    }

    /// The line with the members added right after `"result":{` (the rest byte-exact).
    fn rewrite(&self, line: &[u8]) -> Option<Vec<u8>> {
        let msg: Value = serde_json::from_slice(line).ok()?;
        let result = msg.get("result")?.as_object()?;
        if result.contains_key("resultType") {
            return None;
        }
        let prefix = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"#, msg["id"]);
        let rest = line.strip_prefix(prefix.as_bytes())?;
        let mut out = Vec::with_capacity(line.len() + 64);
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(br#""resultType":"complete""#);
        if self.listing {
            out.extend_from_slice(
                format!(r#","ttlMs":{},"cacheScope":"private""#, opts().ttl_ms).as_bytes(),
            );
        }
        if !result.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(rest);
        Some(out)
    }
}

impl Out for Complete<'_> {
    fn emit(&self, lines: &[u8]) {
        self.inner.emit(lines);
    }

    fn respond(&self, line: &[u8]) {
        match self.rewrite(line) {
            Some(l) => self.inner.respond(&l),
            None => self.inner.respond(line),
        }
    }

    fn respond_in_pieces(&self, line: &[u8]) {
        match self.rewrite(line) {
            Some(l) => self.inner.respond_in_pieces(&l),
            None => self.inner.respond_in_pieces(line),
        }
    }

    fn respond_truncated(&self, partial: &[u8]) {
        self.inner.respond_truncated(partial);
    }

    fn request(&self, method: &str, params: Option<&Value>) -> Receiver<Value> {
        self.inner.request(method, params)
    }

    fn unrelated_request(&self, method: &str, params: Option<&Value>) -> Option<Receiver<Value>> {
        self.inner.unrelated_request(method, params)
    }
}
