//! The MRTR tools of the modern era (`--modern`, `--dual`): a tool that needs input answers
//! `resultType:"input_required"` with `inputRequests` and `requestState`; the client retries
//! the call with `inputResponses` and that `requestState`. Stateless: everything a retry needs
//! is in its params. Plus `slow_progress` (progress notifications, both eras).

use crate::modern::{self, RpcError};
use crate::out::{send_text, send_value_result, Out};
use serde_json::{json, Map, Value};
use std::thread;
use std::time::Duration;

/// The tools of this module, as listed (with `--modern` or `--dual`).
pub fn listing() -> Vec<Value> {
    fn tool(name: &str, description: &str, props: Value) -> Value {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": props}})
    }
    vec![
        tool("mrtr_ask", "Ask who you are (one MRTR question)", json!({})),
        tool("mrtr_two", "Ask two questions in one round", json!({})),
        tool("mrtr_forever", "Ask a new question every round", json!({})),
        tool(
            "mrtr_state_only",
            "A round with only requestState",
            json!({}),
        ),
        tool("mrtr_url", "Ask for a URL-mode step", json!({})),
        tool(
            "mrtr_bad_method",
            "Ask with sampling/createMessage",
            json!({}),
        ),
        tool(
            "mrtr_unknown_result",
            "Answer with an unknown resultType",
            json!({}),
        ),
        tool(
            "ask_anyway",
            "Ask even when the client declared no elicitation",
            json!({}),
        ),
        tool(
            "slow_progress",
            "Send progress, then answer",
            json!({"steps": {"type": "integer"}, "ms": {"type": "integer"}}),
        ),
    ]
}

/// Whether `name` is an MRTR tool (not `slow_progress`, which is a blocking tool).
pub fn is_mrtr_tool(name: &str) -> bool {
    matches!(
        name,
        "mrtr_ask"
            | "mrtr_two"
            | "mrtr_forever"
            | "mrtr_state_only"
            | "mrtr_url"
            | "mrtr_bad_method"
            | "mrtr_unknown_result"
            | "ask_anyway"
    )
}

fn form(message: &str, schema: Value) -> Value {
    json!({"method": "elicitation/create",
           "params": {"mode": "form", "message": message, "requestedSchema": schema}})
}

fn who() -> Value {
    form(
        "Who are you?",
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Your name"},
            "age": {"type": "integer", "description": "Your age", "default": 30}
        }, "required": ["name"]}),
    )
}

fn name_schema() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
}

fn input_required(requests: Option<Value>, state: &str) -> Value {
    let mut r = json!({"resultType": "input_required"});
    if let Some(q) = requests {
        r["inputRequests"] = q;
    }
    r["requestState"] = json!(state);
    r
}

/// A complete result whose text is the compact JSON of `fields`, after `requestState`.
fn complete(state: Option<&Value>, fields: Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("requestState".into(), state.cloned().unwrap_or(Value::Null));
    m.extend(fields);
    json!({"content": [{"type": "text", "text": Value::Object(m).to_string()}],
           "resultType": "complete"})
}

/// The answers to every key of `keys` (None unless all are there).
fn answers(responses: Option<&Map<String, Value>>, keys: &[&str]) -> Option<Map<String, Value>> {
    let r = responses?;
    keys.iter()
        .map(|k| r.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect()
}

/// One answer merged into the text's members: `{action, content}` as sent.
fn merged(answer: &Value) -> Map<String, Value> {
    match answer {
        Value::Object(m) => m.clone(),
        other => Map::from_iter([("answer".to_owned(), other.clone())]),
    }
}

/// Answer a `tools/call` of an MRTR tool (modern era); false when `name` is not one.
pub fn answer(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, name: &str, params: &Value) -> bool {
    if !is_mrtr_tool(name) {
        return false;
    }
    let responses = params.get("inputResponses").and_then(Value::as_object);
    let state = params.get("requestState");
    let result = match name {
        "mrtr_ask" | "ask_anyway" => match answers(responses, &["who"]) {
            Some(a) => complete(state, merged(&a["who"])),
            None => {
                let caps = modern::capabilities(params);
                if name == "mrtr_ask" && !caps.get("elicitation").is_some_and(Value::is_object) {
                    let e = RpcError::new(
                        -32021,
                        "Cannot request input 'who' (elicitation/create): the request's client capabilities do not declare the required capability",
                        Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}})),
                    );
                    modern::send_rpc_error(out, id, &e);
                    return true;
                }
                input_required(Some(json!({"who": who()})), "s1")
            }
        },
        "mrtr_two" => match answers(responses, &["name", "confirm"]) {
            Some(a) => complete(state, a),
            None => {
                let confirm = json!({"type": "object", "properties": {"ok": {"type": "boolean"}},
                                     "required": ["ok"]});
                let qs = json!({"name": form("Your name?", name_schema()),
                                "confirm": form("Proceed?", confirm)});
                input_required(Some(qs), "two-1")
            }
        },
        "mrtr_forever" => {
            let n = state
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0)
                + 1;
            let mut qs = Map::new();
            qs.insert(
                format!("q{n}"),
                form(&format!("question {n}"), name_schema()),
            );
            input_required(Some(Value::Object(qs)), &n.to_string())
        }
        "mrtr_state_only" => match state {
            Some(_) => {
                let got = params.get("inputResponses").cloned();
                let fields =
                    Map::from_iter([("inputResponses".to_owned(), got.unwrap_or(Value::Null))]);
                complete(state, fields)
            }
            None => input_required(None, "come-back"),
        },
        "mrtr_url" => match answers(responses, &["auth"]) {
            Some(a) => complete(state, a),
            None => {
                let q = json!({"auth": {"method": "elicitation/create", "params": {
                    "mode": "url", "message": "Please authorize.",
                    "url": "https://example.test/auth"}}});
                input_required(Some(q), "url-1")
            }
        },
        "mrtr_bad_method" => match responses {
            Some(r) => complete(state, r.clone()),
            None => {
                let q = json!({"llm": {"method": "sampling/createMessage",
                                       "params": {"messages": [], "maxTokens": 1}}});
                input_required(Some(q), "bad-1")
            }
        },
        _ => json!({"resultType": "weird"}),
    };
    send_value_result(out, buf, id, &result);
    true
}

/// `slow_progress(steps, ms)`: `steps` times, sleep `ms` then a `notifications/progress`
/// for the request's progressToken (none without one); then `done after <steps> steps`.
pub fn slow_progress(out: &dyn Out, id: &Value, args: &Value, token: Option<&Value>) {
    let mut buf = Vec::with_capacity(256);
    let (Some(steps), Some(ms)) = (
        args.get("steps").and_then(Value::as_u64),
        args.get("ms").and_then(Value::as_u64),
    ) else {
        let m = "slow_progress: missing integer arguments 'steps' and 'ms'";
        return send_text(out, &mut buf, id, m, true);
    };
    for i in 1..=steps {
        thread::sleep(Duration::from_millis(ms));
        if let Some(t) = token {
            let n = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": t, "progress": i, "total": steps,
                                      "message": format!("step {i}")}});
            let mut line = n.to_string();
            line.push('\n');
            out.emit(line.as_bytes());
        }
    }
    send_text(
        out,
        &mut buf,
        id,
        &format!("done after {steps} steps"),
        false,
    );
}
