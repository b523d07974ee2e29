//! MCP 2026-07-28 (contract §6): no handshake; every request carries the `_meta` envelope
//! (protocol version, client capabilities with elicitation only when a resolver is registered,
//! client info); over HTTP the `Mcp-Name`/`Mcp-Param-*` routing headers (SEP-2243); results
//! carry `resultType`. The MRTR rounds themselves are in [`super::mrtr`].

use crate::transport::Routing;
use base64::Engine;
use serde_json::{Map, Value};

use crate::versions::MODERN_VERSION;

/// The `_meta` key that asks a server for the request's log messages (docs/live-servers.md): without it a
/// 2026-07-28 server sends none.
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// The `_meta` envelope's members (without braces), with `progressToken` when given, the log
/// level asked for (`logLevel`) when one is configured, and the client capabilities: form and
/// URL elicitation when a resolver is registered, and each of `extensions` (a feature's key,
/// e.g. SEP-2663's Tasks) declared as supported. The caller names the extensions, so this file
/// knows no feature.
pub(super) fn envelope(
    with_resolver: bool,
    progress_token: Option<u64>,
    log: Option<crate::config::LogLevel>,
    extensions: &[&str],
) -> String {
    let mut caps = String::from("{");
    if with_resolver {
        caps.push_str(r#""elicitation":{"form":{},"url":{}}"#);
    }
    if !extensions.is_empty() {
        if with_resolver {
            caps.push(',');
        }
        caps.push_str(r#""extensions":{"#);
        for (i, e) in extensions.iter().enumerate() {
            if i > 0 {
                caps.push(',');
            }
            crate::json::rpc::push_json_string(&mut caps, e);
            caps.push_str(":{}");
        }
        caps.push('}');
    }
    caps.push('}');
    let mut s = format!(
        r#""io.modelcontextprotocol/protocolVersion":"{MODERN_VERSION}","io.modelcontextprotocol/clientCapabilities":{caps},"io.modelcontextprotocol/clientInfo":{{"name":"toolnexus","version":"{}"}}"#,
        env!("CARGO_PKG_VERSION")
    );
    if let Some(t) = progress_token {
        s.push_str(&format!(r#","progressToken":{t}"#));
    }
    if let Some(l) = log {
        s.push_str(&format!(r#","{LOG_LEVEL_KEY}":"{}""#, l.name()));
    }
    s
}

/// `server/discover` params: the envelope and nothing else (§6).
pub(super) fn discover_params(with_resolver: bool, log: Option<crate::config::LogLevel>) -> String {
    format!(
        r#"{{"_meta":{{{}}}}}"#,
        envelope(with_resolver, None, log, &[])
    )
}

/// A DiscoverResult is a result whose `supportedVersions` lists the version we speak (the
/// conformance suite's legacy mocks answer `{}` to everything, which is not one, §6).
pub(super) fn is_discover_result(v: &Value) -> bool {
    lists_modern(v.get("supportedVersions"))
}

/// A recognised modern error (§6): -32020, -32021, or -32022 whose `data.supported` lists the
/// version we speak.
pub(super) fn is_modern_error(e: &Value) -> bool {
    match e.get("code").and_then(Value::as_i64) {
        Some(-32020) | Some(-32021) => true,
        Some(-32022) => lists_modern(e.get("data").and_then(|d| d.get("supported"))),
        _ => false,
    }
}

fn lists_modern(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(MODERN_VERSION)))
}

/// The `x-mcp-header` arguments of a tool: (argument, header name) pairs, or why the tool's
/// declarations are invalid (SEP-2243: string, integer or boolean properties only; header
/// names are tokens, unique ignoring case). Only top-level arguments are routed.
pub(super) fn header_params(tool: &Map<String, Value>) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    let Some(props) = tool
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return Ok(out);
    };
    for (arg, schema) in props {
        let Some(h) = schema.get("x-mcp-header") else {
            continue;
        };
        let Some(h) = h.as_str().filter(|h| is_token(h)) else {
            return Err(format!(
                "argument `{arg}`: x-mcp-header must be a header token"
            ));
        };
        let ty = schema.get("type").and_then(Value::as_str);
        if !matches!(ty, Some("string" | "integer" | "boolean")) {
            return Err(format!(
                "argument `{arg}`: x-mcp-header is allowed on string, integer or boolean properties only"
            ));
        }
        if out.iter().any(|(_, o)| o.eq_ignore_ascii_case(h)) {
            return Err(format!("x-mcp-header `{h}` is declared twice"));
        }
        out.push((arg.clone(), h.to_string()));
    }
    Ok(out)
}

/// RFC 9110 token characters.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The routing headers of a `tools/call` (§6): `Mcp-Name`, and `Mcp-Param-*` for each routed
/// argument present and not null.
pub(super) fn routing(remote: &str, args_json: &str, params: &[(String, String)]) -> Routing {
    let mut r = Routing {
        name: Some(encode(remote)),
        params: Vec::new(),
    };
    if params.is_empty() {
        return r;
    }
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(args_json) else {
        return r;
    };
    for (arg, header) in params {
        let value = match args.get(arg) {
            Some(Value::String(s)) => encode(s),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        r.params.push((header.clone(), value));
    }
    r
}

/// A header value as SEP-2243 sends it: as is when it is visible ASCII without surrounding
/// whitespace, else `=?base64?…?=` of its UTF-8.
pub(super) fn encode(v: &str) -> String {
    let plain = !v.is_empty()
        && v.bytes().all(|b| (0x20..0x7f).contains(&b))
        && v.trim() == v
        && !(v.starts_with("=?base64?") && v.ends_with("?="));
    if plain {
        v.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_envelope_declares_the_extensions_named_with_and_without_a_resolver() {
        for with in [false, true] {
            let ext = ["io.modelcontextprotocol/tasks"];
            let v: Value =
                serde_json::from_str(&format!("{{{}}}", envelope(with, Some(7), None, &ext)))
                    .unwrap();
            let caps = &v["io.modelcontextprotocol/clientCapabilities"];
            assert_eq!(
                caps["extensions"],
                json!({"io.modelcontextprotocol/tasks": {}}),
                "{v}"
            );
            assert_eq!(caps.get("elicitation").is_some(), with, "{v}");
            assert_eq!(v["progressToken"], json!(7));
            let plain: Value =
                serde_json::from_str(&format!("{{{}}}", envelope(with, None, None, &[]))).unwrap();
            let caps = &plain["io.modelcontextprotocol/clientCapabilities"];
            assert!(caps.get("extensions").is_none(), "{plain}");
            assert_eq!(caps.get("elicitation").is_some(), with, "{plain}");
        }
    }

    #[test]
    fn probe_answers_are_recognised() {
        assert!(is_discover_result(
            &json!({"supportedVersions":["2026-07-28"]})
        ));
        assert!(
            !is_discover_result(&json!({})),
            "a mock's {{}} is not a DiscoverResult"
        );
        assert!(is_modern_error(
            &json!({"code":-32022,"data":{"supported":["2026-07-28"]}})
        ));
        assert!(!is_modern_error(
            &json!({"code":-32022,"data":{"supported":["2099-01-01"]}})
        ));
        assert!(
            is_modern_error(&json!({"code":-32020})) && is_modern_error(&json!({"code":-32021}))
        );
        assert!(!is_modern_error(&json!({"code":-32601})));
    }

    #[test]
    fn routing_headers() {
        let tool = json!({"name":"t","inputSchema":{"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "n":{"type":"integer","x-mcp-header":"N"},
            "q":{"type":"string"}}}});
        let params = header_params(tool.as_object().unwrap()).unwrap();
        let r = routing("t", r#"{"region":"Hello, 世界","n":7,"q":"x"}"#, &params);
        assert_eq!(r.name.as_deref(), Some("t"));
        assert_eq!(
            r.params,
            vec![
                (
                    "Region".to_string(),
                    "=?base64?SGVsbG8sIOS4lueVjA==?=".to_string()
                ),
                ("N".to_string(), "7".to_string())
            ]
        );
        let r = routing("t", r#"{"region":null}"#, &params);
        assert!(r.params.is_empty(), "null or absent: no header");
        for bad in [
            json!({"inputSchema":{"properties":{"o":{"type":"object","x-mcp-header":"O"}}}}),
            json!({"inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}}),
            json!({"inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"a b"}}}}),
        ] {
            assert!(header_params(bad.as_object().unwrap()).is_err(), "{bad}");
        }
    }
}
