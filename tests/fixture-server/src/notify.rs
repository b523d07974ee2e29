//! `--resources`: the tools that change resources and prompts (`touch`, `add_resource`,
//! `toggle_prompt`, `change_prompt`), and where their notifications go. The handshake era:
//! `notifications/resources/updated` to the connections that `resources/subscribe`d the URI,
//! the list changes unsolicited (stdio: on stdout once a client initialized, not with
//! `--modern`; HTTP: every session's standalone GET stream). MCP 2026-07-28: only on the
//! `subscriptions/listen` streams whose filter asked for the type (live.rs).

use crate::live::{self, Note};
use crate::opts;
use crate::out::{send_text, Out};
use crate::proto::State;
use crate::util::arg_str;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

/// The tools `--resources` lists (after the other optional ones, before `--extra-tools`).
pub fn listing() -> Vec<Value> {
    fn tool(name: &str, description: &str, props: Value) -> Value {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": props}})
    }
    let mut touch = tool(
        "touch",
        "Send notifications/resources/updated for a URI to its subscribers",
        json!({"uri": {"type": "string"}}),
    );
    touch["inputSchema"]["required"] = json!(["uri"]);
    vec![
        touch,
        tool(
            "add_resource",
            "Append fx://doc/new<k> to the resources",
            json!({}),
        ),
        tool(
            "toggle_prompt",
            "Add or remove the prompt extra",
            json!({"on": {"type": "boolean"}}),
        ),
        tool(
            "change_prompt",
            "Change the prompt greet's description",
            json!({}),
        ),
    ]
}

/// The line `data` (no newline) on stdout.
fn emit_line(data: &[u8]) {
    let mut line = data.to_vec();
    line.push(b'\n');
    crate::out::emit(&line);
}

/// `notifications/resources/updated {uri}` to every subscriber of `uri`; how many were sent.
fn updated(state: &State, uri: &str) -> usize {
    let note = Note::ResourceUpdated(uri);
    let subscribed = |s: &State| {
        s.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(uri)
    };
    let mut sent = 0;
    if opts().http.is_some() {
        for s in crate::session::sessions() {
            if subscribed(&s.state) && s.notify_get(&note.legacy()) {
                sent += 1;
            }
        }
    } else if subscribed(state) {
        emit_line(&note.legacy());
        sent += 1;
    }
    sent + live::notify_listens(&note)
}

/// A list change, to every client of either era that is to be told; how many were sent.
fn changed(state: &State, note: Note) -> usize {
    let mut sent = 0;
    if opts().http.is_some() {
        for s in crate::session::sessions() {
            if s.notify_get(&note.legacy()) {
                sent += 1;
            }
        }
    } else if !opts().modern && state.initialized.load(Ordering::Relaxed) {
        emit_line(&note.legacy());
        sent += 1;
    }
    sent + live::notify_listens(&note)
}

/// Answers one of the tools above; false when `name` is not one.
pub fn call(
    out: &dyn Out,
    state: &State,
    buf: &mut Vec<u8>,
    id: &Value,
    name: &str,
    args: &Value,
) -> bool {
    let text = match name {
        "touch" => match arg_str(args, "uri") {
            Some(uri) => format!("touched {}", updated(state, uri)),
            None => {
                send_text(out, buf, id, "touch: missing string argument 'uri'", true);
                return true;
            }
        },
        "add_resource" => {
            let uri = crate::resources::add();
            let n = changed(state, Note::ResourcesListChanged);
            format!("added {uri} (notified {n})")
        }
        "toggle_prompt" => {
            let on = crate::prompts::toggle(args.get("on").and_then(Value::as_bool));
            let n = changed(state, Note::PromptsListChanged);
            format!("extra {} (notified {n})", if on { "on" } else { "off" })
        }
        "change_prompt" => {
            let d = crate::prompts::change();
            let n = changed(state, Note::PromptsListChanged);
            format!("greet: {d} (notified {n})")
        }
        _ => return false,
    };
    send_text(out, buf, id, &text, false);
    true
}
