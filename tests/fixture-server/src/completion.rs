//! `--resources`: `completion/complete` (not with `--no-completions`). Values are filtered by
//! the argument's value as a prefix, ignoring case.

use crate::out::{send_error, send_value_result, Out};
use crate::pages::era;
use serde_json::{json, Value};

const LANGUAGES: &[&str] = &["c", "c++", "go", "python", "rust"];
const NAMES: &[&str] = &["Ada", "Alan"];
const NAMES_FR: &[&str] = &["Amélie", "Antoine"];
const IDS: &[&str] = &["1", "2", "3", "10", "11"];

fn starting_with(values: &[&str], prefix: &str) -> Vec<Value> {
    let prefix = prefix.to_lowercase();
    values
        .iter()
        .filter(|v| v.to_lowercase().starts_with(&prefix))
        .map(|v| json!(v))
        .collect()
}

pub fn complete(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) {
    let p = params.unwrap_or(&Value::Null);
    let r = p.get("ref");
    let (Some(kind), Some(arg), Some(value)) = (
        r.and_then(|r| r.get("type")).and_then(Value::as_str),
        p.pointer("/argument/name").and_then(Value::as_str),
        p.pointer("/argument/value").and_then(Value::as_str),
    ) else {
        let m =
            "Invalid params: completion/complete needs ref.type, argument.name and argument.value";
        return send_error(out, buf, id, -32602, m);
    };
    let target = match kind {
        "ref/prompt" => r.and_then(|r| r.get("name")),
        _ => r.and_then(|r| r.get("uri")),
    }
    .and_then(Value::as_str)
    .unwrap_or("");
    let lang = p.pointer("/context/arguments/lang").and_then(Value::as_str);
    let completion = match (kind, target, arg) {
        ("ref/prompt", "code_review", "language") => {
            json!({"values": starting_with(LANGUAGES, value)})
        }
        ("ref/prompt", "greet", "name") => {
            let names = if lang == Some("fr") { NAMES_FR } else { NAMES };
            json!({"values": starting_with(names, value)})
        }
        ("ref/resource", "fx://item/{id}", "id") => {
            let values = starting_with(IDS, value);
            json!({"values": values, "total": values.len(), "hasMore": false})
        }
        _ => json!({"values": []}),
    };
    let result = era(json!({ "completion": completion }), modern, false);
    send_value_result(out, buf, id, &result);
}
