//! `--live`: a server whose tool list changes and that logs (issue 28 of toolnexus). The tool
//! `toggle_tool` adds or removes the tool `live_extra` and announces it the way each era does:
//! legacy stdio unsolicited on stdout, legacy HTTP on every session's standalone GET stream,
//! MCP 2026-07-28 only on `subscriptions/listen` subscriptions (stdio: stamped with the
//! subscription id on stdout; HTTP: on the listen request's own event stream). The tool `log`
//! sends one `notifications/message` before its answer, at or above the level the client asked
//! for (`logging/setLevel` in the legacy era; the request's `_meta` log level in the modern
//! era, without which it sends none); over legacy HTTP with `"broadcast": true` it goes to every
//! session's standalone GET stream instead (how `toolnexus watch`, which calls nothing, sees one).

use crate::opts;
use crate::out::{send_error, send_raw_result, send_text, Out};
use crate::session::EventStream;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Whether `live_extra` is listed now.
static EXTRA: AtomicBool = AtomicBool::new(false);
/// The legacy era's `logging/setLevel` floor (an index into [`LEVELS`]).
static FLOOR: Mutex<Option<usize>> = Mutex::new(None);
/// Modern stdio subscriptions (their listen request ids).
static STDIO_SUBS: Mutex<Vec<Value>> = Mutex::new(Vec::new());
/// Modern HTTP subscriptions: each listen request's id and its open event stream.
static LISTENERS: Mutex<Vec<(Value, Arc<EventStream>)>> = Mutex::new(Vec::new());
static EVENT_ID: AtomicU64 = AtomicU64::new(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn enabled() -> bool {
    opts().live
}

/// The tools `--live` lists (after the others): `toggle_tool`, `log`, and `live_extra` while
/// it is on.
pub fn listing() -> Vec<Vec<u8>> {
    let mut tools = vec![
        json!({"name": "toggle_tool", "description": "Add or remove the tool live_extra and announce the change",
               "inputSchema": {"type": "object", "properties": {"on": {"type": "boolean"}}}}),
        json!({"name": "log", "description": "Send one log message, then answer",
               "inputSchema": {"type": "object", "properties": {
                   "level": {"type": "string"}, "message": {"type": "string"}, "logger": {"type": "string"},
                   "broadcast": {"type": "boolean"}}}}),
    ];
    if EXTRA.load(Ordering::SeqCst) {
        tools.push(
            json!({"name": "live_extra", "description": "Listed while toggled on",
                          "inputSchema": {"type": "object", "properties": {}}}),
        );
    }
    tools
        .iter()
        .map(|t| serde_json::to_vec(t).unwrap_or_default())
        .collect()
}

/// Answers a `--live` tool; false when `name` is not one.
pub fn call(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: &Value,
    name: &str,
    args: &Value,
    params: &Value,
) -> bool {
    match name {
        "toggle_tool" => {
            let on = args
                .get("on")
                .and_then(Value::as_bool)
                .unwrap_or(!EXTRA.load(Ordering::SeqCst));
            EXTRA.store(on, Ordering::SeqCst);
            announce();
            let text = format!("live_extra {}", if on { "on" } else { "off" });
            send_text(out, buf, id, &text, false);
        }
        "live_extra" if EXTRA.load(Ordering::SeqCst) => {
            send_text(out, buf, id, "live_extra ok", false)
        }
        "live_extra" => send_error(out, buf, id, -32602, "Unknown tool: live_extra"),
        "log" => {
            let level = args.get("level").and_then(Value::as_str).unwrap_or("info");
            let message = args
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("hello");
            let at = LEVELS.iter().position(|l| *l == level).unwrap_or(1);
            let floor = match crate::modern::claim(Some(params)) {
                // Modern: only when the request asked, at its level.
                Some(_) => params
                    .pointer("/_meta/io.modelcontextprotocol~1logLevel")
                    .and_then(Value::as_str)
                    .map(|l| LEVELS.iter().position(|x| *x == l).unwrap_or(0)),
                None => Some(lock(&FLOOR).unwrap_or(0)),
            };
            let sent = floor.is_some_and(|f| at >= f);
            if sent {
                let mut p = json!({"level": level, "data": message});
                if let Some(l) = args.get("logger").and_then(Value::as_str) {
                    p["logger"] = json!(l);
                }
                let mut line =
                    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": p})
                        .to_string();
                if opts().http.is_some() && args.get("broadcast") == Some(&Value::Bool(true)) {
                    // To every session's standalone GET stream (a watcher that makes no call).
                    crate::session::broadcast_get(line.as_bytes());
                } else {
                    line.push('\n');
                    out.emit(line.as_bytes());
                }
            }
            let text = format!("{} {level}", if sent { "logged" } else { "not logged" });
            send_text(out, buf, id, &text, false);
        }
        _ => return false,
    }
    true
}

/// `logging/setLevel` (legacy era).
pub fn set_level(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, params: Option<&Value>) {
    let level = params.and_then(|p| p.get("level")).and_then(Value::as_str);
    match level.and_then(|l| LEVELS.iter().position(|x| *x == l)) {
        Some(i) => {
            *lock(&FLOOR) = Some(i);
            send_raw_result(out, buf, id, "{}");
        }
        None => send_error(out, buf, id, -32602, "Invalid params: unknown log level"),
    }
}

/// The acknowledgement a subscription starts with, stamped with its id.
pub fn acknowledgement(id: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
           "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id},
                      "notifications": {"toolsListChanged": true}}})
    .to_string()
    .into_bytes()
}

fn stamped(id: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
           "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}})
    .to_string()
    .into_bytes()
}

/// A modern stdio `subscriptions/listen`: acknowledged, kept until cancelled; no answer.
pub fn listen_stdio(id: Value) {
    let mut ack = acknowledgement(&id);
    ack.push(b'\n');
    lock(&STDIO_SUBS).push(id);
    crate::out::emit(&ack);
}

/// A `notifications/cancelled` for request `id`: a stdio subscription ends.
pub fn cancelled(id: &Value) {
    lock(&STDIO_SUBS).retain(|s| s != id);
}

/// A modern HTTP subscription's stream: `head` (the response head and the acknowledgement)
/// written under the listeners' lock, so that no change overtakes it; false when it broke.
pub fn add_listener(id: Value, stream: Arc<EventStream>, head: &[u8]) -> bool {
    let mut listeners = lock(&LISTENERS);
    if !stream.write_raw(head) {
        return false;
    }
    listeners.push((id, stream));
    true
}

pub fn remove_listener(stream: &Arc<EventStream>) {
    lock(&LISTENERS).retain(|(_, s)| !Arc::ptr_eq(s, stream));
}

pub fn next_event_id() -> u64 {
    EVENT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Tells every client the tool list changed, as its era has it.
fn announce() {
    const NOTE: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    if opts().http.is_some() {
        crate::session::broadcast_get(NOTE);
        for (id, s) in lock(&LISTENERS).iter() {
            s.send(&stamped(id), next_event_id());
        }
        return;
    }
    let subs = lock(&STDIO_SUBS).clone();
    if subs.is_empty() {
        if !opts().modern {
            let mut line = NOTE.to_vec();
            line.push(b'\n');
            crate::out::emit(&line);
        }
        return;
    }
    for id in subs {
        let mut line = stamped(&id);
        line.push(b'\n');
        crate::out::emit(&line);
    }
}
