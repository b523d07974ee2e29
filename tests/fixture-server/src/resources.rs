//! `--resources`: resources, resource templates, subscriptions, prompts (prompts.rs) and
//! completions (completion.rs) in both eras (see README.md "Resources and prompts"). This
//! module dispatches the methods and serves the resources; pages.rs pages the listings;
//! notify.rs has the tools that change things and sends the notifications.

use crate::modern::RpcError;
use crate::opts;
use crate::out::{put_str, Out};
use crate::out::{send_error, send_raw_result, send_value_result, server_request, split_response};
use crate::pages::{era, listing};
use crate::proto::State;
use crate::tools::Blocking;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// The blocking reads' name in a [`Blocking`] (`fx://ask` in the handshake era, `fx://slow/…`).
pub const BLOCKING_READ: &str = "__resources_read";
/// The most `fx://big/<n>` serves.
const BIG_MAX: usize = 64 << 20;
/// `fx://multi`'s second part and the blob blocks: an 8-byte PNG signature.
pub const PNG: &str = "iVBORw0KGgo=";

/// How many `fx://doc/new<k>` `add_resource` appended (process-wide).
static ADDED: AtomicUsize = AtomicUsize::new(0);
/// The `fx://slow/…` reads under way: request id, and whether a `notifications/cancelled`
/// named it.
static SLOW: Mutex<Vec<(Value, bool)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn uri_of(params: Option<&Value>) -> Option<&str> {
    params?.get("uri")?.as_str()
}

/// Whether this module answers `method` (in the modern era when `modern`).
pub fn handles(method: &str, params: Option<&Value>, modern: bool) -> bool {
    if !opts().resources {
        return false;
    }
    match method {
        "resources/list" | "resources/templates/list" | "prompts/list" | "prompts/get" => true,
        // With --skills too, the skills keep their own URIs.
        "resources/read" => {
            !(opts().skills && uri_of(params).is_some_and(|u| u.starts_with("skill://")))
        }
        // Removed in 2026-07-28 (subscriptions/listen replaces them): -32601 there.
        "resources/subscribe" | "resources/unsubscribe" => !modern,
        "completion/complete" => !opts().no_completions,
        _ => false,
    }
}

/// The capabilities `--resources` adds to `initialize` and `server/discover` (none with
/// `--no-resource-caps`).
pub fn add_capabilities(caps: &mut Value) {
    let o = opts();
    if !o.resources || o.no_resource_caps {
        return;
    }
    if let Value::Object(c) = caps {
        let r = c.entry("resources").or_insert_with(|| json!({}));
        if let Value::Object(r) = r {
            r.insert("subscribe".into(), json!(true));
            r.insert("listChanged".into(), json!(!o.no_list_changed));
        }
        c.insert("prompts".into(), json!({"listChanged": !o.no_list_changed}));
        if !o.no_completions {
            c.insert("completions".into(), json!({}));
        }
    }
}

/// Answers one of [`handles`]'s methods; a read or prompt that blocks is handed back.
pub fn request(
    out: &dyn Out,
    state: &State,
    buf: &mut Vec<u8>,
    id: Value,
    method: &str,
    params: Option<Value>,
    modern: bool,
) -> Option<Blocking> {
    let p = params.as_ref();
    let listed = match method {
        "resources/list" => listing("resources", resource_list(), p),
        "resources/templates/list" => listing("resourceTemplates", templates(), p),
        "prompts/list" => listing("prompts", crate::prompts::listing(), p),
        "prompts/get" => return crate::prompts::get(out, buf, id, params, modern),
        "completion/complete" => {
            crate::completion::complete(out, buf, &id, p, modern);
            return None;
        }
        "resources/subscribe" | "resources/unsubscribe" => {
            match uri_of(p) {
                Some(uri) => {
                    let mut subs = lock(&state.subscriptions);
                    if method == "resources/subscribe" {
                        subs.insert(uri.to_owned());
                    } else {
                        subs.remove(uri);
                    }
                    drop(subs);
                    send_raw_result(out, buf, &id, "{}");
                }
                None => send_error(out, buf, &id, -32602, "Invalid params: missing uri"),
            }
            return None;
        }
        _ => return read(out, buf, id, params, modern),
    };
    match listed {
        Ok(r) => send_value_result(out, buf, &id, &era(r, modern, true)),
        Err(()) => send_error(out, buf, &id, -32602, "Invalid cursor"),
    }
    None
}

// ---------------------------------------------------------------------------
// The resources
// ---------------------------------------------------------------------------

fn doc_entry(name: &str) -> Value {
    json!({"uri": format!("fx://doc/{name}"), "name": format!("doc {name}"),
           "title": format!("Document {name}"), "mimeType": "text/plain",
           "size": format!("document {name}").len()})
}

/// `fx://doc/1` … `fx://doc/N`, `fx://bin/1`, `fx://multi`, `fx://ask`, then the added docs.
fn resource_list() -> Vec<Value> {
    let mut v = Vec::new();
    for i in 1..=opts().resource_count {
        let mut d = doc_entry(&i.to_string());
        if i == 1 {
            d["annotations"] = json!({"audience": ["user"], "priority": 0.5});
            d["_meta"] = json!({"fx/note": "first"});
        }
        v.push(d);
    }
    v.push(
        json!({"uri": "fx://bin/1", "name": "bin 1", "title": "Binary 1",
                  "mimeType": "application/octet-stream", "size": 256}),
    );
    v.push(json!({"uri": "fx://multi", "name": "multi",
                  "description": "A text part and a blob of a sub-resource"}));
    v.push(
        json!({"uri": "fx://ask", "name": "ask", "mimeType": "text/plain",
                  "description": "Asks which version before it is read"}),
    );
    for k in 1..=ADDED.load(Ordering::SeqCst) {
        v.push(doc_entry(&format!("new{k}")));
    }
    v
}

fn templates() -> Vec<Value> {
    vec![
        json!({"uriTemplate": "fx://item/{id}", "name": "item", "mimeType": "text/plain"}),
        json!({"uriTemplate": "fx://search{?q,lang}", "name": "search"}),
    ]
}

/// `add_resource`: appends `fx://doc/new<k>`; returns its URI.
pub fn add() -> String {
    let k = ADDED.fetch_add(1, Ordering::SeqCst) + 1;
    format!("fx://doc/new{k}")
}

fn text(uri: &str, mime: Option<&str>, text: String) -> Value {
    let mut c = json!({"uri": uri});
    if let Some(m) = mime {
        c["mimeType"] = json!(m);
    }
    c["text"] = Value::String(text);
    c
}

/// `n` when `s` is the canonical decimal text of `n`.
fn index(s: &str) -> Option<usize> {
    s.parse::<usize>().ok().filter(|n| n.to_string() == s)
}

/// What `resources/read` serves for `uri` (not the blocking ones); None: not found.
fn contents(uri: &str) -> Option<Vec<Value>> {
    const PLAIN: Option<&str> = Some("text/plain");
    if let Some(d) = uri.strip_prefix("fx://doc/") {
        let known = match d.strip_prefix("new") {
            Some(k) => index(k).is_some_and(|k| k >= 1 && k <= ADDED.load(Ordering::SeqCst)),
            None => index(d).is_some_and(|i| i >= 1 && i <= opts().resource_count),
        };
        return known.then(|| vec![text(uri, PLAIN, format!("document {d}"))]);
    }
    if let Some(id) = uri.strip_prefix("fx://item/").filter(|id| !id.is_empty()) {
        return Some(vec![text(uri, PLAIN, format!("item {id}"))]);
    }
    if uri == "fx://search" || uri.starts_with("fx://search?") {
        let query = uri.split_once('?').map_or("", |(_, q)| q);
        return Some(vec![text(uri, None, query.to_owned())]);
    }
    if let Some(n) = uri.strip_prefix("fx://big/").and_then(index) {
        return (n <= BIG_MAX).then(|| vec![text(uri, PLAIN, "x".repeat(n))]);
    }
    match uri {
        "fx://bin/1" => {
            let bytes: Vec<u8> = (0..=255).collect();
            Some(vec![
                json!({"uri": uri, "mimeType": "application/octet-stream",
                             "blob": STANDARD.encode(bytes)}),
            ])
        }
        "fx://multi" => Some(vec![
            json!({"uri": "fx://multi", "text": "part 1", "_meta": {"fx/part": 1}}),
            json!({"uri": "fx://multi/part2", "mimeType": "image/png", "blob": PNG}),
        ]),
        _ => None,
    }
}

/// Resource not found: -32002 in the handshake era, -32602 in 2026-07-28; `data.uri` both.
fn not_found(out: &dyn Out, id: &Value, uri: &str, modern: bool) {
    let code = if modern { -32602 } else { -32002 };
    let e = RpcError::new(code, "Resource not found", Some(json!({"uri": uri})));
    out.respond(&e.line(id));
}

fn read(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: Value,
    params: Option<Value>,
    modern: bool,
) -> Option<Blocking> {
    let params = params.unwrap_or(Value::Null);
    let Some(uri) = uri_of(Some(&params)) else {
        send_error(out, buf, &id, -32602, "Invalid params: missing uri");
        return None;
    };
    let slow = uri.strip_prefix("fx://slow/").and_then(index).is_some();
    if uri == "fx://ask" && modern {
        match ask_modern(&params) {
            Some(t) => {
                let r = json!({"contents": [text(uri, Some("text/plain"), t)]});
                send_value_result(out, buf, &id, &era(r, true, true));
            }
            None => send_value_result(out, buf, &id, &input_required()),
        }
        return None;
    }
    if uri == "fx://ask" || slow {
        if slow {
            lock(&SLOW).push((id.clone(), false));
        }
        return Some(Blocking {
            id,
            name: BLOCKING_READ.into(),
            args: params,
            progress_token: None,
            modern,
        });
    }
    if let Some(n) = uri.strip_prefix("fx://big/").and_then(index) {
        if n <= BIG_MAX && !modern {
            // Written in place: no 64 MiB string built and then copied again.
            big(out, buf, &id, uri, n);
            return None;
        }
    }
    match contents(uri) {
        Some(c) => {
            let r = json!({ "contents": c });
            send_value_result(out, buf, &id, &era(r, modern, true));
        }
        None => not_found(out, &id, uri, modern),
    }
    None
}

/// The handshake era's `fx://big/<n>`, written straight into `buf`.
fn big(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, uri: &str, n: usize) {
    crate::out::begin_result(buf, id);
    buf.reserve(n + 128);
    buf.extend_from_slice(b"{\"contents\":[{\"uri\":");
    put_str(buf, uri);
    buf.extend_from_slice(b",\"mimeType\":\"text/plain\",\"text\":\"");
    buf.resize(buf.len() + n, b'x');
    buf.extend_from_slice(b"\"}]}");
    crate::out::end_result(out, buf);
    if buf.capacity() > (1 << 20) {
        *buf = Vec::with_capacity(4096);
    }
}

/// A notification over modern HTTP (which keeps no session): a `notifications/cancelled`.
pub fn notified(method: &str, params: Option<&Value>) {
    if let Some(rid) = params.and_then(|p| p.get("requestId")) {
        if method == "notifications/cancelled" {
            cancelled(rid);
        }
    }
}

/// A `notifications/cancelled`: a slow read it names answers nothing (stderr says so).
pub fn cancelled(request_id: &Value) {
    for (id, c) in lock(&SLOW).iter_mut() {
        if id == request_id {
            *c = true;
        }
    }
}

/// A blocking read: `fx://ask` in the handshake era (a form `elicitation/create` pushed on the
/// read's own stream), or `fx://slow/<ms>`.
pub fn run(out: &dyn Out, b: &Blocking) {
    let mut buf = Vec::with_capacity(256);
    let uri = uri_of(Some(&b.args)).unwrap_or_default();
    let Some(ms) = uri.strip_prefix("fx://slow/").and_then(index) else {
        match ask_legacy(out) {
            Ok(t) => {
                let r = json!({"contents": [text(uri, Some("text/plain"), t)]});
                send_value_result(out, &mut buf, &b.id, &r);
            }
            Err(e) => {
                out.respond(&RpcError::new(-32603, "Elicitation failed", Some(e)).line(&b.id))
            }
        }
        return;
    };
    let deadline = Instant::now() + Duration::from_millis(ms as u64);
    let was_cancelled = || lock(&SLOW).iter().any(|(id, c)| *c && id == &b.id);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if left.is_zero() || was_cancelled() {
            break;
        }
        thread::sleep(left.min(Duration::from_millis(10)));
    }
    let cancelled = was_cancelled();
    lock(&SLOW).retain(|(id, _)| id != &b.id);
    if cancelled {
        eprintln!("fixture: resources/read {uri} cancelled (request {})", b.id);
        return;
    }
    let r = json!({"contents": [text(uri, Some("text/plain"), format!("slept {ms}"))]});
    send_value_result(out, &mut buf, &b.id, &era(r, b.modern, true));
}

// ---------------------------------------------------------------------------
// "Which version?": fx://ask and the prompt `ask`
// ---------------------------------------------------------------------------

/// The modern round's requestState (both `fx://ask` and the prompt `ask`).
const ASK_STATE: &str = "read-1";

fn ask_params() -> Value {
    json!({"mode": "form", "message": "Which version?",
           "requestedSchema": {"type": "object",
                               "properties": {"version": {"type": "string"}},
                               "required": ["version"]}})
}

/// The modern era's first round: the question under key `v`.
pub fn input_required() -> Value {
    json!({"resultType": "input_required",
           "inputRequests": {"v": {"method": "elicitation/create", "params": ask_params()}},
           "requestState": ASK_STATE})
}

/// The text for an elicitation result: `version <content.version>`, `declined`, `cancelled`.
fn answer_text(a: &Value) -> String {
    match a.get("action").and_then(Value::as_str) {
        Some("accept") => match a.pointer("/content/version") {
            Some(Value::String(v)) => format!("version {v}"),
            other => format!("version {}", other.unwrap_or(&Value::Null)),
        },
        Some("decline") => "declined".into(),
        Some("cancel") => "cancelled".into(),
        _ => format!("unexpected answer: {a}"),
    }
}

/// A modern retry's text: with `inputResponses.v` and the round's `requestState`; else None
/// (the question again).
pub fn ask_modern(params: &Value) -> Option<String> {
    if params.get("requestState").and_then(Value::as_str) != Some(ASK_STATE) {
        return None;
    }
    params.pointer("/inputResponses/v").map(answer_text)
}

/// The handshake era: a form `elicitation/create` to the client, then its answer's text;
/// `Err` with the client's JSON-RPC error.
pub fn ask_legacy(out: &dyn Out) -> Result<String, Value> {
    let reply = server_request(out, "elicitation/create", Some(&ask_params()));
    split_response(reply).map(|r| answer_text(&r))
}
