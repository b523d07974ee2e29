//! `--live`: a server whose tool list changes and that logs (long-lived hosts). The tool
//! `toggle_tool` adds or removes the tool `live_extra` and announces it the way each era does:
//! legacy stdio unsolicited on stdout, legacy HTTP on every session's standalone GET stream,
//! MCP 2026-07-28 only on `subscriptions/listen` subscriptions (stdio: stamped with the
//! subscription id on stdout; HTTP: on the listen request's own event stream). The tool `log`
//! sends one `notifications/message` before its answer, at or above the level the client asked
//! for (`logging/setLevel` in the legacy era; the request's `_meta` log level in the modern
//! era, without which it sends none); over legacy HTTP with `"broadcast": true` it goes to every
//! session's standalone GET stream instead (how `toolnexus watch`, which calls nothing, sees one).
//!
//! Each listen keeps its [`Filter`], the honoured subset of what it asked for; with
//! `--resources` the prompt and resource list changes and `notifications/resources/updated` go
//! through [`notify_listens`] too (notify.rs), only to the listens that asked for them.

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
/// Modern stdio subscriptions: each listen request's id and what it is sent.
static STDIO_SUBS: Mutex<Vec<(Value, Filter)>> = Mutex::new(Vec::new());
/// Modern HTTP subscriptions: each listen request's id, what it is sent, and its open event
/// stream.
static LISTENERS: Mutex<Vec<(Value, Filter, Arc<EventStream>)>> = Mutex::new(Vec::new());
static EVENT_ID: AtomicU64 = AtomicU64::new(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn enabled() -> bool {
    opts().live
}

/// Whether `subscriptions/listen` is served (modern era): with `--live` or `--resources`.
pub fn listen_enabled() -> bool {
    opts().live || opts().resources
}

/// What one `subscriptions/listen` is sent: the honoured subset of its `notifications`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    /// `resourceSubscriptions`: the URIs whose `notifications/resources/updated` it gets.
    pub uris: Vec<String>,
}

/// One notification a listen may be sent.
pub enum Note<'a> {
    ToolsListChanged,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated(&'a str),
}

impl Note<'_> {
    fn method(&self) -> &'static str {
        match self {
            Note::ToolsListChanged => "notifications/tools/list_changed",
            Note::PromptsListChanged => "notifications/prompts/list_changed",
            Note::ResourcesListChanged => "notifications/resources/list_changed",
            Note::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }

    /// The notification as the handshake era sends it (no subscription id).
    pub fn legacy(&self) -> Vec<u8> {
        let mut v = json!({"jsonrpc": "2.0", "method": self.method()});
        if let Note::ResourceUpdated(uri) = self {
            v["params"] = json!({"uri": uri});
        }
        v.to_string().into_bytes()
    }

    /// The notification on listen `id`, stamped with its subscription id.
    fn stamped(&self, id: &Value) -> Vec<u8> {
        let mut params = json!({});
        if let Note::ResourceUpdated(uri) = self {
            params["uri"] = json!(uri);
        }
        params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": id});
        json!({"jsonrpc": "2.0", "method": self.method(), "params": params})
            .to_string()
            .into_bytes()
    }
}

impl Filter {
    /// The honoured subset of a listen's `params.notifications`. Without `--resources` every
    /// listen is sent the tool-list changes, whatever it asked (as before there were filters);
    /// with it, `toolsListChanged` is honoured with `--live` only (nothing else changes tools),
    /// the other three always.
    pub fn honoured(params: Option<&Value>) -> Filter {
        if !opts().resources {
            return Filter {
                tools: true,
                ..Filter::default()
            };
        }
        let asked = params.and_then(|p| p.get("notifications"));
        let flag = |k: &str| asked.and_then(|n| n.get(k)) == Some(&Value::Bool(true));
        let uris = asked
            .and_then(|n| n.get("resourceSubscriptions"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Filter {
            tools: flag("toolsListChanged") && opts().live,
            prompts: flag("promptsListChanged"),
            resources: flag("resourcesListChanged"),
            uris,
        }
    }

    /// The acknowledgement's `notifications`: what is honoured (the others left out).
    fn acknowledged(&self) -> Value {
        let mut n = json!({});
        if self.tools {
            n["toolsListChanged"] = json!(true);
        }
        if self.prompts {
            n["promptsListChanged"] = json!(true);
        }
        if self.resources {
            n["resourcesListChanged"] = json!(true);
        }
        if opts().resources && !self.uris.is_empty() {
            n["resourceSubscriptions"] = json!(self.uris);
        }
        n
    }

    fn wants(&self, note: &Note) -> bool {
        match note {
            Note::ToolsListChanged => self.tools,
            Note::PromptsListChanged => self.prompts,
            Note::ResourcesListChanged => self.resources,
            Note::ResourceUpdated(uri) => self.uris.iter().any(|u| u == uri),
        }
    }
}

/// Sends `note` on every modern listen (stdio and HTTP) whose filter asked for it; returns how
/// many were sent.
pub fn notify_listens(note: &Note) -> usize {
    let mut sent = 0;
    for (id, f, s) in lock(&LISTENERS).iter() {
        if f.wants(note) && s.send(&note.stamped(id), next_event_id()) {
            sent += 1;
        }
    }
    let subs = lock(&STDIO_SUBS).clone();
    for (id, _) in subs.iter().filter(|(_, f)| f.wants(note)) {
        let mut line = note.stamped(id);
        line.push(b'\n');
        crate::out::emit(&line);
        sent += 1;
    }
    sent
}

/// Whether a modern stdio listen is open (then the handshake era's unsolicited tool-list
/// change is not written).
pub fn stdio_listening() -> bool {
    !lock(&STDIO_SUBS).is_empty()
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
pub fn acknowledgement(id: &Value, filter: &Filter) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
           "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id},
                      "notifications": filter.acknowledged()}})
    .to_string()
    .into_bytes()
}

/// A modern stdio `subscriptions/listen`: acknowledged, kept until cancelled; no answer.
pub fn listen_stdio(id: Value, params: Option<&Value>) {
    let filter = Filter::honoured(params);
    let mut ack = acknowledgement(&id, &filter);
    ack.push(b'\n');
    lock(&STDIO_SUBS).push((id, filter));
    crate::out::emit(&ack);
}

/// A `notifications/cancelled` for request `id`: a stdio subscription ends.
pub fn cancelled(id: &Value) {
    lock(&STDIO_SUBS).retain(|(s, _)| s != id);
}

/// A modern HTTP subscription's stream: `head` (the response head and the acknowledgement)
/// written under the listeners' lock, so that no change overtakes it; false when it broke.
pub fn add_listener(id: Value, filter: Filter, stream: Arc<EventStream>, head: &[u8]) -> bool {
    let mut listeners = lock(&LISTENERS);
    if !stream.write_raw(head) {
        return false;
    }
    listeners.push((id, filter, stream));
    true
}

pub fn remove_listener(stream: &Arc<EventStream>) {
    lock(&LISTENERS).retain(|(_, _, s)| !Arc::ptr_eq(s, stream));
}

pub fn next_event_id() -> u64 {
    EVENT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Tells every client the tool list changed, as its era has it.
fn announce() {
    let note = Note::ToolsListChanged;
    if opts().http.is_some() {
        crate::session::broadcast_get(&note.legacy());
        notify_listens(&note);
        return;
    }
    if !stdio_listening() {
        if !opts().modern {
            let mut line = note.legacy();
            line.push(b'\n');
            crate::out::emit(&line);
        }
        return;
    }
    notify_listens(&note);
}
