//! The tool listing.

use crate::opts;
use serde_json::{json, Value};
use std::sync::OnceLock;

// ---------------------------------------------------------------------------
// Tool listing
// ---------------------------------------------------------------------------

fn base_tools() -> Vec<Value> {
    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }
    fn tool(name: &str, description: &str, schema: Value) -> Value {
        json!({"name": name, "description": description, "inputSchema": schema})
    }
    vec![
        tool(
            "echo",
            "Echo the text back",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        tool(
            "add",
            "Add two numbers",
            obj(json!({"a": {"type": "number"}, "b": {"type": "number"}})),
        ),
        tool("structured", "Return structured content", obj(json!({}))),
        tool("fail", "Always fail with a tool error", obj(json!({}))),
        tool("image", "Return a tiny PNG image", obj(json!({}))),
        tool(
            "mixed",
            "Return text, image and resource link",
            obj(json!({})),
        ),
        tool(
            "env",
            "Return an environment variable",
            obj(json!({"name": {"type": "string"}})),
        ),
        tool("cwd", "Return the working directory", obj(json!({}))),
        tool(
            "client_info",
            "Return the raw initialize params",
            obj(json!({})),
        ),
        tool(
            "cancelled_ids",
            "Return the request ids of received cancellations",
            obj(json!({})),
        ),
        tool(
            "big_text",
            "Return a large text",
            obj(json!({"bytes": {"type": "integer"}})),
        ),
        json!({
            "name": "annotated",
            "title": "Annotated Tool",
            "description": "A tool with every optional listing field",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "properties": {"z": {"type": "number"}}},
            "annotations": {"readOnlyHint": true},
            "icons": [{"src": "https://example.test/i.png"}],
            "_meta": {"k": "v"}
        }),
        tool(
            "dots.and spaces",
            "A tool with an awkward name",
            obj(json!({})),
        ),
        tool(
            "ask_form",
            "Ask the user for a form (elicitation)",
            obj(json!({"message": {"type": "string"}})),
        ),
        tool(
            "ask_url",
            "Ask the user to visit a URL (elicitation)",
            obj(json!({"url": {"type": "string"}})),
        ),
        tool(
            "ask_twice",
            "Two form elicitations in a row",
            obj(json!({})),
        ),
        tool(
            "slow",
            "Sleep before answering",
            obj(json!({"ms": {"type": "integer"}})),
        ),
        tool(
            "crash",
            "Exit the server process",
            obj(json!({"code": {"type": "integer"}})),
        ),
        tool(
            "noisy",
            "Write noise to stderr",
            obj(json!({"kb": {"type": "integer"}})),
        ),
        tool("ping_client", "Ping the client", obj(json!({}))),
        tool(
            "unknown_request",
            "Send the client a request it does not support",
            obj(json!({})),
        ),
        tool(
            "notify_then_echo",
            "Send a log notification, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool("pid", "Return the server's process id", obj(json!({}))),
        tool(
            "spawn_child",
            "Spawn a `sleep 1000` grandchild in our process group; return its pid",
            obj(json!({})),
        ),
        tool(
            "junk_then_echo",
            "Write non-JSON and non-message lines to stdout, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "unknown_id_then_echo",
            "Write responses for ids never used, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "stderr_lines",
            "Write n numbered lines to stderr, then answer ok",
            obj(json!({"n": {"type": "integer"}})),
        ),
        tool(
            "sleep_then_crash",
            "In the background: sleep ms, then exit without answering",
            obj(json!({"ms": {"type": "integer"}, "code": {"type": "integer"}})),
        ),
        tool(
            "elicit_then_slow",
            "Form elicitation, then sleep ms, then return the answer",
            obj(json!({"ms": {"type": "integer"}})),
        ),
    ]
}

/// The tools listed only with `--hardening-tools` (callable either way), so
/// the default listing stays as it was.
fn hardening_tools() -> Vec<Value> {
    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }
    fn tool(name: &str, description: &str, schema: Value) -> Value {
        json!({"name": name, "description": description, "inputSchema": schema})
    }
    vec![
        tool(
            "flood_notifications",
            "Send n notifications/message lines, then answer",
            obj(json!({"n": {"type": "integer"}})),
        ),
        tool(
            "answer_twice",
            "Answer the same request id twice (text, then text + ' (again)')",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "ask_many",
            "Send n form elicitations at once; return how many were accepted",
            obj(json!({"n": {"type": "integer"}})),
        ),
        tool(
            "partial_then_echo",
            "Echo, with the response line written in pieces with pauses",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "bad_utf8_then_echo",
            "A response for this id that is not UTF-8, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "crash_mid_line",
            "Write half a response line, then exit",
            obj(json!({"code": {"type": "integer"}})),
        ),
    ]
}

/// Each listed tool pre-serialized as compact JSON (built once).
pub fn tool_list() -> &'static [Vec<u8>] {
    static TOOLS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    TOOLS.get_or_init(|| build_tool_list(opts().extra_tools))
}

fn build_tool_list(extra: usize) -> Vec<Vec<u8>> {
    let mut tools = base_tools();
    if opts().http.is_some() {
        tools.push(json!({
            "name": "ask_unrelated",
            "description": "Ask a form elicitation tied to no request (standalone GET stream only)",
            "inputSchema": {"type": "object", "properties": {
                "message": {"type": "string"},
                "wait_ms": {"type": "integer"}
            }}
        }));
    }
    if opts().hardening_tools {
        tools.extend(hardening_tools());
    }
    if crate::modern::enabled() {
        tools.extend(crate::mrtr::listing());
    }
    if opts().tasks {
        tools.extend(crate::tasks::listing());
    }
    if opts().resources {
        tools.extend(crate::notify::listing());
    }
    let mut out: Vec<Vec<u8>> = tools
        .iter()
        .map(|t| serde_json::to_vec(t).unwrap_or_default())
        .collect();
    out.reserve(extra);
    for i in 0..extra {
        let mut b = Vec::with_capacity(96);
        b.extend_from_slice(b"{\"name\":\"");
        b.extend_from_slice(extra_tool_name(i).as_bytes());
        b.extend_from_slice(b"\",\"description\":\"extra tool ");
        b.extend_from_slice(i.to_string().as_bytes());
        b.extend_from_slice(b"\",\"inputSchema\":{\"type\":\"object\"}}");
        out.push(b);
    }
    out
}

fn extra_tool_name(i: usize) -> String {
    format!("t{i:04}")
}

pub fn is_extra_tool(name: &str) -> bool {
    let Some(digits) = name.strip_prefix('t') else {
        return false;
    };
    if digits.len() < 4 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    match digits.parse::<usize>() {
        Ok(i) => i < opts().extra_tools && extra_tool_name(i) == name,
        Err(_) => false,
    }
}
