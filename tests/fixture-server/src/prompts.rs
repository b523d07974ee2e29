//! `--resources`: the prompts (`prompts/list`, `prompts/get`). `toggle_prompt` and
//! `change_prompt` (notify.rs) change the listing.

use crate::opts;
use crate::out::{send_error, send_value_result, Out};
use crate::pages::era;
use crate::resources::{ask_legacy, ask_modern, input_required};
use crate::tools::Blocking;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// The prompt `ask` in the handshake era (a pushed elicitation), in a [`Blocking`].
pub const BLOCKING_GET: &str = "__prompts_get";

/// Whether the prompt `extra` is listed (`toggle_prompt`).
static EXTRA: AtomicBool = AtomicBool::new(false);
/// How many times `change_prompt` changed `greet`.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// `blocks`: one message per content block type, byte for byte.
const BLOCKS: &str = concat!(
    r#"{"description":"One message per content block type","messages":["#,
    r#"{"role":"user","content":{"type":"text","text":"plain text","annotations":{"audience":["user","assistant"],"priority":0.25,"lastModified":"2025-01-01T00:00:00Z"},"_meta":{"fx/block":"text"}}},"#,
    r#"{"role":"assistant","content":{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}},"#,
    r#"{"role":"user","content":{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}},"#,
    r#"{"role":"assistant","content":{"type":"resource_link","uri":"fx://doc/1","name":"doc 1","mimeType":"text/plain"}},"#,
    r#"{"role":"user","content":{"type":"resource","resource":{"uri":"fx://doc/2","mimeType":"text/plain","text":"document 2"},"annotations":{"priority":1}}},"#,
    r#"{"role":"assistant","content":{"type":"resource","resource":{"uri":"fx://multi/part2","mimeType":"image/png","blob":"iVBORw0KGgo="}}},"#,
    r#"{"role":"user","content":{"type":"x-fixture","foo":[1,2]}}"#,
    "]}"
);

fn greet_description() -> String {
    match CHANGES.load(Ordering::SeqCst) {
        0 => "Greets someone".into(),
        k => format!("Greets someone (changed {k})"),
    }
}

fn extra_name(i: usize) -> String {
    format!("p{i:04}")
}

/// `greet`, `code_review`, `blocks`, `ask`, `p0000`… (`--prompt-count`), then `extra` while on.
pub fn listing() -> Vec<Value> {
    let mut v = vec![
        json!({"name": "greet", "title": "Greeting", "description": greet_description(),
               "arguments": [{"name": "name", "description": "Who", "required": true},
                             {"name": "lang"}]}),
        json!({"name": "code_review", "title": "Code review", "description": "Reviews code",
               "arguments": [{"name": "language", "description": "The language", "required": false},
                             {"name": "code", "description": "The code", "required": true}]}),
        json!({"name": "blocks", "description": "One message per content block type"}),
        json!({"name": "ask", "description": "Asks which version first"}),
    ];
    for i in 0..opts().prompt_count {
        v.push(json!({"name": extra_name(i), "description": format!("extra prompt {i}")}));
    }
    if EXTRA.load(Ordering::SeqCst) {
        v.push(json!({"name": "extra", "description": "Listed while toggle_prompt has it on"}));
    }
    v
}

/// `toggle_prompt`: `extra` on (or off, or the other way when `on` is not given); the new state.
pub fn toggle(on: Option<bool>) -> bool {
    let on = on.unwrap_or(!EXTRA.load(Ordering::SeqCst));
    EXTRA.store(on, Ordering::SeqCst);
    on
}

/// `change_prompt`: `greet` gets a new description; returns it.
pub fn change() -> String {
    CHANGES.fetch_add(1, Ordering::SeqCst);
    greet_description()
}

fn one_text(description: &str, text: &str) -> Value {
    json!({"description": description,
           "messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
}

fn extra_index(name: &str) -> Option<usize> {
    let i = name.strip_prefix('p')?.parse::<usize>().ok()?;
    (i < opts().prompt_count && extra_name(i) == name).then_some(i)
}

/// `prompts/get`; the handshake era's `ask` is handed back (it waits for the client).
pub fn get(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: Value,
    params: Option<Value>,
    modern: bool,
) -> Option<Blocking> {
    let params = params.unwrap_or(Value::Null);
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        send_error(out, buf, &id, -32602, "Invalid params: missing prompt name");
        return None;
    };
    let arg = |k: &str| {
        params
            .pointer(&format!("/arguments/{k}"))
            .and_then(Value::as_str)
    };
    let missing = |out: &dyn Out, buf: &mut Vec<u8>, k: &str| {
        let m = format!("Missing required argument: {k}");
        send_error(out, buf, &id, -32602, &m);
        None
    };
    let result = match name {
        "greet" => {
            let Some(who) = arg("name") else {
                return missing(out, buf, "name");
            };
            let text = match arg("lang") {
                Some("fr") => format!("Bonjour, {who} !"),
                _ => format!("Hello, {who}!"),
            };
            one_text(&greet_description(), &text)
        }
        "code_review" => {
            let Some(code) = arg("code") else {
                return missing(out, buf, "code");
            };
            let text = match arg("language") {
                Some(l) => format!("Review this {l} code: {code}"),
                None => format!("Review this code: {code}"),
            };
            one_text("Reviews code", &text)
        }
        "blocks" => {
            static PARSED: OnceLock<Value> = OnceLock::new();
            PARSED
                .get_or_init(|| serde_json::from_str(BLOCKS).unwrap_or(Value::Null))
                .clone()
        }
        "ask" if modern => match ask_modern(&params) {
            Some(t) => one_text("Asks which version first", &t),
            None => {
                send_value_result(out, buf, &id, &input_required());
                return None;
            }
        },
        "ask" => {
            return Some(Blocking {
                id,
                name: BLOCKING_GET.into(),
                args: params,
                progress_token: None,
                modern: false,
            })
        }
        "extra" if EXTRA.load(Ordering::SeqCst) => {
            one_text("Listed while toggle_prompt has it on", "extra prompt")
        }
        n => match extra_index(n) {
            Some(i) => one_text(&format!("extra prompt {i}"), &format!("prompt {i}")),
            None => {
                send_error(out, buf, &id, -32602, &format!("Unknown prompt: {n}"));
                return None;
            }
        },
    };
    send_value_result(out, buf, &id, &era(result, modern, false));
    None
}

/// The handshake era's `ask`: a form `elicitation/create` pushed on the request's own stream,
/// then the prompt.
pub fn run(out: &dyn Out, b: &Blocking) {
    let mut buf = Vec::with_capacity(256);
    match ask_legacy(out) {
        Ok(t) => send_value_result(
            out,
            &mut buf,
            &b.id,
            &one_text("Asks which version first", &t),
        ),
        Err(e) => {
            let e = crate::modern::RpcError::new(-32603, "Elicitation failed", Some(e));
            out.respond(&e.line(&b.id));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocks_parse_and_keep_their_bytes() {
        let v: serde_json::Value = serde_json::from_str(super::BLOCKS).unwrap();
        assert_eq!(v.to_string(), super::BLOCKS);
        assert!(super::BLOCKS.contains(crate::resources::PNG));
    }
}
