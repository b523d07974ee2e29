//! `toolnexus bridge`: the library's pure functions as JSON lines, so that other ports' parity
//! tests can run against this implementation without a C compiler.
//!
//! In, one object a line: `{"fn": NAME, "input": TEXT}` with NAME one of
//! `elicitation_to_request`, `answer_to_result`, `sanitize_name` (or `sanitize`),
//! `server_request_response` (also `"resolver"`: a behaviour of `shared/parity/README.md`,
//! default `absent`) and `tools_to_provider` (also `"style"`). `input` is the function's input
//! text as a JSON string, as the parity vectors carry it; any other JSON value is taken as its
//! own text, verbatim. Out, one line each (blank lines are skipped):
//! `{"ok":true,"output":<the output text verbatim, or null>}` (plus `"request_seen"`: the
//! Request the resolver got, verbatim, or null, for `server_request_response`), or
//! `{"ok":false,"status":"TN_ERR_…","error":"…"}`.

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::io::{BufRead, Write};
use std::sync::Mutex;
use toolnexus::{answer_responder, pure, Resolver, ResolverReturn, ResponderToken};

/// Reads lines from `input` until EOF, writing (and flushing) one line each to `out`.
pub fn run(input: impl BufRead, mut out: impl Write) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        writeln!(out, "{}", one(&line))?;
        out.flush()?;
    }
    Ok(())
}

/// One input line → one output line.
pub fn one(line: &str) -> String {
    match answer(line) {
        Ok(ok) => ok,
        Err((status, error)) => {
            let mut m = Map::new();
            m.insert("ok".into(), Value::Bool(false));
            m.insert("status".into(), Value::String(status.into()));
            m.insert("error".into(), Value::String(error));
            Value::Object(m).to_string()
        }
    }
}

type LineError = (&'static str, String);

fn bad_line(msg: impl Into<String>) -> LineError {
    ("TN_ERR_INVALID_ARGUMENT", msg.into())
}

fn lib_error(e: toolnexus::Error) -> LineError {
    (e.kind.status_name(), e.message)
}

/// An optional string member of the line.
fn str_member<'a>(line: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, LineError> {
    match line.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad_line(format!("`{key}` must be a string"))),
    }
}

fn answer(line: &str) -> Result<String, LineError> {
    // Parsed twice: as values for `fn` and the options, and raw for `input` kept verbatim.
    let parsed: Map<String, Value> = serde_json::from_str(line).map_err(|e| {
        (
            "TN_ERR_INVALID_JSON",
            format!("a bridge line must be a JSON object: {e}"),
        )
    })?;
    let raw: std::collections::HashMap<String, Box<RawValue>> = serde_json::from_str(line)
        .map_err(|e| bad_line(format!("a bridge line must be a JSON object: {e}")))?;
    let name = str_member(&parsed, "fn")?.ok_or_else(|| {
        bad_line("missing `fn`: one of elicitation_to_request, answer_to_result, sanitize_name, server_request_response, tools_to_provider")
    })?;
    let input = match (parsed.get("input"), raw.get("input")) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(_), Some(r)) => r.get().to_string(),
        _ => return Err(bad_line("missing `input`: the function's input text")),
    };
    let mut request_seen = None;
    let output = match name {
        "elicitation_to_request" => Some(pure::elicitation_to_request(&input).map_err(lib_error)?),
        "answer_to_result" => Some(pure::answer_to_result(&input).map_err(lib_error)?),
        "sanitize_name" | "sanitize" => Some(pure::sanitize_name(&input).map_err(lib_error)?),
        "tools_to_provider" => {
            let style = str_member(&parsed, "style")?
                .ok_or_else(|| bad_line("tools_to_provider needs `style`: openai, anthropic or gemini"))?;
            Some(pure::tools_to_provider(&input, style).map_err(lib_error)?)
        }
        "server_request_response" => {
            let behaviour = str_member(&parsed, "resolver")?.unwrap_or("absent");
            let resolver = Behaviour::parse(behaviour)?.map(ScriptedResolver::new);
            let out = pure::server_request_response(
                &input,
                resolver.as_ref().map(|r| r as &dyn Resolver),
            )
            .map_err(lib_error)?;
            request_seen = Some(resolver.and_then(|r| r.seen.into_inner().ok().flatten()));
            out
        }
        other => {
            return Err(bad_line(format!(
                "unknown fn `{other}`: expected elicitation_to_request, answer_to_result, sanitize_name, server_request_response or tools_to_provider"
            )))
        }
    };
    // Spliced as text: the library's output is JSON already, byte for byte.
    let mut line = String::from(r#"{"ok":true,"output":"#);
    line.push_str(output.as_deref().unwrap_or("null"));
    if let Some(seen) = request_seen {
        line.push_str(r#","request_seen":"#);
        line.push_str(seen.as_deref().unwrap_or("null"));
    }
    line.push('}');
    Ok(line)
}

/// The resolver behaviours of `shared/parity/README.md`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Behaviour {
    AcceptData,
    AcceptNoData,
    Declined,
    Cancelled,
    Expired,
    NoReason,
    Fails,
    NoAnswer,
    InvalidJson,
    InvalidAnswer,
}

impl Behaviour {
    /// None for `absent` (no resolver registered).
    fn parse(name: &str) -> Result<Option<Behaviour>, LineError> {
        Ok(Some(match name {
            "absent" => return Ok(None),
            "accept_data" => Behaviour::AcceptData,
            "accept_no_data" => Behaviour::AcceptNoData,
            "declined" => Behaviour::Declined,
            "cancelled" => Behaviour::Cancelled,
            "expired" => Behaviour::Expired,
            "no_reason" => Behaviour::NoReason,
            "fails" => Behaviour::Fails,
            "no_answer" => Behaviour::NoAnswer,
            "invalid_json" => Behaviour::InvalidJson,
            "invalid_answer" => Behaviour::InvalidAnswer,
            other => {
                return Err(bad_line(format!(
                    "unknown resolver `{other}`: expected absent, accept_data, accept_no_data, declined, cancelled, expired, no_reason, fails, no_answer, invalid_json or invalid_answer"
                )))
            }
        }))
    }
}

/// A resolver that behaves as named and records the Request it got.
struct ScriptedResolver {
    behaviour: Behaviour,
    seen: Mutex<Option<String>>,
}

impl ScriptedResolver {
    fn new(behaviour: Behaviour) -> Self {
        ScriptedResolver {
            behaviour,
            seen: Mutex::new(None),
        }
    }
}

impl Resolver for ScriptedResolver {
    fn call(&self, request_json: &str, token: ResponderToken) -> ResolverReturn {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some(request_json.to_string());
        }
        let answer = match self.behaviour {
            Behaviour::AcceptData => {
                // Echo the Request's id: an Answer with another id is invalid.
                let id = serde_json::from_str::<Value>(request_json)
                    .ok()
                    .and_then(|r| r.get("id").cloned())
                    .unwrap_or(Value::Null);
                format!(r#"{{"id":{id},"ok":true,"data":{{"name":"muthu"}}}}"#)
            }
            Behaviour::AcceptNoData => r#"{"ok":true}"#.into(),
            Behaviour::Declined => r#"{"ok":false,"reason":"declined"}"#.into(),
            Behaviour::Cancelled => r#"{"ok":false,"reason":"cancelled"}"#.into(),
            Behaviour::Expired => r#"{"ok":false,"reason":"expired"}"#.into(),
            Behaviour::NoReason => r#"{"ok":false}"#.into(),
            Behaviour::Fails => return ResolverReturn::Failed(-1),
            Behaviour::NoAnswer => return ResolverReturn::Resolved,
            Behaviour::InvalidJson => "this is {not JSON".into(),
            Behaviour::InvalidAnswer => r#"{"ok":"yes"}"#.into(),
        };
        // The invalid answers are refused and leave the responder open (then cancel): expected.
        let _ = answer_responder(token, &answer);
        ResolverReturn::Resolved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_are_error_lines() {
        for (line, status, text) in [
            ("nope", "TN_ERR_INVALID_JSON", "must be a JSON object"),
            (
                r#"{"input":"{}"}"#,
                "TN_ERR_INVALID_ARGUMENT",
                "missing `fn`",
            ),
            (
                r#"{"fn":"x","input":"{}"}"#,
                "TN_ERR_INVALID_ARGUMENT",
                "unknown fn `x`",
            ),
            (
                r#"{"fn":"sanitize"}"#,
                "TN_ERR_INVALID_ARGUMENT",
                "missing `input`",
            ),
            (
                r#"{"fn":"tools_to_provider","input":"[]"}"#,
                "TN_ERR_INVALID_ARGUMENT",
                "needs `style`",
            ),
            (
                r#"{"fn":"tools_to_provider","input":"[]","style":"x"}"#,
                "TN_ERR_INVALID_ARGUMENT",
                "unknown style `x`",
            ),
            (
                r#"{"fn":"server_request_response","input":"{}","resolver":"x"}"#,
                "TN_ERR_INVALID_ARGUMENT",
                "unknown resolver `x`",
            ),
            (
                r#"{"fn":"answer_to_result","input":"{"}"#,
                "TN_ERR_INVALID_JSON",
                "",
            ),
        ] {
            let out: Value = serde_json::from_str(&one(line)).unwrap();
            assert_eq!(out["ok"], false, "{line}");
            assert_eq!(out["status"], status, "{line}: {out}");
            assert!(
                out["error"].as_str().unwrap().contains(text),
                "{line}: {out}"
            );
        }
    }

    #[test]
    fn input_may_be_a_json_value_spliced_verbatim() {
        assert_eq!(
            one(r#"{"fn":"answer_to_result","input":{"ok":false,"reason":"declined"}}"#),
            r#"{"ok":true,"output":{"action":"decline"}}"#
        );
        assert_eq!(
            one(r#"{"fn":"sanitize","input":"\"a b\""}"#),
            r#"{"ok":true,"output":"a_b"}"#
        );
        assert_eq!(
            one(
                r#"{"fn":"server_request_response","input":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"}"#
            ),
            r#"{"ok":true,"output":null,"request_seen":null}"#
        );
    }
}
