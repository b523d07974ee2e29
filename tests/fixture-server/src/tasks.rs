//! `--tasks`: tool calls as tasks, in both eras. The handshake era follows MCP
//! 2025-11-25 (`capabilities.tasks`, `params.task`, `{"task":{…}}`, `tasks/get`,
//! `tasks/result`, `tasks/cancel`, `tasks/list`; a question asked on the `tasks/result` stream
//! as `elicitation/create`); MCP 2026-07-28 follows the Tasks extension (SEP-2663:
//! `io.modelcontextprotocol/tasks` per request, `resultType:"task"`, `tasks/get` carrying the
//! result or `inputRequests`, `tasks/update`, `tasks/cancel`). Tasks live in the process, not
//! in a session, so a second client (another HTTP session, another host process) can collect
//! one by its id.

use crate::opts;
use crate::out::{send_error, send_value_result, Out};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
const POLL_MS: u64 = 100;
const TTL_MS: u64 = 600_000;

struct Task {
    status: &'static str,
    message: Option<String>,
    created: String,
    updated: String,
    result: Option<Value>,
    /// The question outstanding while `input_required`: (key, params).
    question: Option<(String, Value)>,
    answer: Option<Value>,
    cancel: bool,
}

struct Store {
    tasks: Mutex<HashMap<String, Task>>,
    changed: Condvar,
    /// Every `tasks/cancel` received, in order (the `task_cancelled_ids` tool).
    cancelled: Mutex<Vec<String>>,
}

static STORE: LazyLock<Store> = LazyLock::new(|| Store {
    tasks: Mutex::new(HashMap::new()),
    changed: Condvar::new(),
    cancelled: Mutex::new(Vec::new()),
});
static NEXT: AtomicU64 = AtomicU64::new(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tools `--tasks` lists: (name, taskSupport).
const TOOLS: &[(&str, &str)] = &[
    ("task_slow", "required"),
    ("task_optional", "optional"),
    ("task_ask", "required"),
    ("task_big", "required"),
];

pub fn listing() -> Vec<Value> {
    let obj = |p: Value| json!({"type": "object", "properties": p});
    let mut v = vec![
        json!({"name": "task_slow", "description": "A task that works `ms` (default 1500) in `steps` steps (default 3), each a status change and a progress notification",
            "inputSchema": obj(json!({"ms": {"type": "integer"}, "steps": {"type": "integer"}})),
            "execution": {"taskSupport": "required"}}),
        json!({"name": "task_optional", "description": "Echo; as a task when asked to be one",
            "inputSchema": obj(json!({"text": {"type": "string"}})),
            "execution": {"taskSupport": "optional"}}),
        json!({"name": "task_ask", "description": "A task that goes input_required and asks a name",
            "inputSchema": obj(json!({})), "execution": {"taskSupport": "required"}}),
        json!({"name": "task_big", "description": "A task whose result is `bytes` bytes of text",
            "inputSchema": obj(json!({"bytes": {"type": "integer"}})),
            "execution": {"taskSupport": "required"}}),
        json!({"name": "task_cancelled_ids", "description": "The task ids tasks/cancel named, in order",
            "inputSchema": obj(json!({}))}),
        json!({"name": "schema_tool", "description": "structuredContent checked by an outputSchema; `bad` breaks it",
            "inputSchema": obj(json!({"bad": {"type": "boolean"}})),
            "outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}}),
    ];
    v.shrink_to_fit();
    v
}

/// The capabilities with `--tasks` (added to what the server declares otherwise).
pub fn add_capabilities(caps: &mut Value, modern: bool) {
    if modern {
        let ext = caps
            .as_object_mut()
            .map(|c| c.entry("extensions").or_insert_with(|| json!({})));
        if let Some(Value::Object(e)) = ext {
            e.insert(EXTENSION.into(), json!({}));
        }
    } else if let Value::Object(c) = caps {
        c.insert(
            "tasks".into(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        );
    }
}

pub fn handles(method: &str, modern: bool) -> bool {
    if modern {
        matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel")
    } else {
        matches!(
            method,
            "tasks/get" | "tasks/cancel" | "tasks/list" | "tasks/result"
        )
    }
}

/// ISO 8601 (UTC, seconds) of now, without a date crate (days to civil, H. Hinnant's method).
fn now_iso() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The task's wire form in `modern` or the handshake era; `detailed` adds the result or the
/// question (2026 `tasks/get`).
fn wire(id: &str, t: &Task, modern: bool, detailed: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("taskId".into(), json!(id));
    m.insert("status".into(), json!(t.status));
    if let Some(msg) = &t.message {
        m.insert("statusMessage".into(), json!(msg));
    }
    m.insert("createdAt".into(), json!(t.created));
    m.insert("lastUpdatedAt".into(), json!(t.updated));
    if modern {
        m.insert("ttlSeconds".into(), json!(TTL_MS / 1000));
        m.insert("pollIntervalMilliseconds".into(), json!(POLL_MS));
    } else {
        m.insert("ttl".into(), json!(TTL_MS));
        m.insert("pollInterval".into(), json!(POLL_MS));
    }
    if detailed {
        if let (Some(r), "completed") = (&t.result, t.status) {
            m.insert("result".into(), r.clone());
        }
        if let (Some((key, params)), "input_required") = (&t.question, t.status) {
            m.insert(
                "inputRequests".into(),
                json!({key.as_str(): {"method": "elicitation/create", "params": params}}),
            );
        }
    }
    m
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

/// Sets a task's status (and message), waking every waiter; false when it was cancelled.
fn set(id: &str, status: &'static str, message: Option<String>, result: Option<Value>) -> bool {
    let mut tasks = lock(&STORE.tasks);
    let Some(t) = tasks.get_mut(id) else {
        return false;
    };
    if t.cancel || t.status == "cancelled" {
        return false;
    }
    t.status = status;
    t.message = message;
    t.updated = now_iso();
    if result.is_some() {
        t.result = result;
    }
    STORE.changed.notify_all();
    true
}

/// A progress notification for the call's token, on stdio only (an HTTP server sends it on
/// a stream the task no longer has).
fn progress(token: &Option<Value>, n: u64, total: u64, message: &str) {
    let Some(token) = token else { return };
    if opts().http.is_some() {
        return;
    }
    let line = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": token, "progress": n, "total": total, "message": message}});
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    crate::out::emit(&bytes);
}

/// The work of one task, on its own thread.
fn work(id: String, tool: String, args: Value, token: Option<Value>) {
    let arg = |k: &str| args.get(k).and_then(Value::as_u64);
    match tool.as_str() {
        "task_slow" => {
            let ms = arg("ms").unwrap_or(1500);
            let steps = arg("steps").unwrap_or(3).max(1);
            for i in 1..=steps {
                thread::sleep(Duration::from_millis(ms / steps));
                let msg = format!("step {i} of {steps}");
                progress(&token, i, steps, &msg);
                if i < steps && !set(&id, "working", Some(msg), None) {
                    return;
                }
            }
            let r = text_result(&format!("slow task done after {steps} steps"));
            set(&id, "completed", Some("done".into()), Some(r));
        }
        "task_optional" => {
            thread::sleep(Duration::from_millis(200));
            let text = args.get("text").and_then(Value::as_str).unwrap_or("");
            set(
                &id,
                "completed",
                None,
                Some(text_result(&format!("task: {text}"))),
            );
        }
        "task_big" => {
            let n = arg("bytes").unwrap_or(1024) as usize;
            set(&id, "completed", None, Some(text_result(&"x".repeat(n))));
        }
        _ => {
            // task_ask: one question, then the answer in the result.
            thread::sleep(Duration::from_millis(100));
            {
                let mut tasks = lock(&STORE.tasks);
                let Some(t) = tasks.get_mut(&id) else { return };
                if t.cancel {
                    return;
                }
                t.status = "input_required";
                t.message = Some("waiting for a name".into());
                t.updated = now_iso();
                t.question = Some((
                    format!("name-{id}"),
                    json!({"mode": "form", "message": "What is your name?",
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
                ));
                STORE.changed.notify_all();
            }
            let answer = {
                let mut tasks = lock(&STORE.tasks);
                loop {
                    match tasks.get_mut(&id) {
                        None => return,
                        Some(t) if t.cancel => return,
                        Some(t) if t.answer.is_some() => break t.answer.take(),
                        Some(_) => {}
                    }
                    tasks = STORE.changed.wait(tasks).unwrap_or_else(|e| e.into_inner());
                }
            };
            let answer = answer.unwrap_or(Value::Null);
            let text = match answer.get("action").and_then(Value::as_str) {
                Some("accept") => format!(
                    "hello {}",
                    answer
                        .pointer("/content/name")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ),
                Some(other) => format!("the question was answered {other}"),
                None => "the question got no answer".into(),
            };
            set(&id, "working", Some("answered".into()), None);
            thread::sleep(Duration::from_millis(50));
            set(&id, "completed", None, Some(text_result(&text)));
        }
    }
}

/// A `tools/call` of one of our tools; false when `name` is not ours. A call asked to be a
/// task (2025-11-25: `params.task`; 2026: the extension in the request's capabilities) of a
/// tool that supports one gets a task; a required-task tool called plainly is -32601.
pub fn call(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: &Value,
    name: &str,
    params: &Value,
    modern: bool,
) -> bool {
    if name == "task_cancelled_ids" {
        let ids = lock(&STORE.cancelled).clone();
        let mut r = text_result(&json!(ids).to_string());
        if modern {
            r["resultType"] = json!("complete");
        }
        send_value_result(out, buf, id, &r);
        return true;
    }
    if name == "schema_tool" {
        let bad = params.pointer("/arguments/bad").and_then(Value::as_bool) == Some(true);
        let sc = if bad {
            json!({"count": "three"})
        } else {
            json!({"count": 3})
        };
        let mut r =
            json!({"content": [{"type": "text", "text": sc.to_string()}], "structuredContent": sc});
        if modern {
            r["resultType"] = json!("complete");
        }
        send_value_result(out, buf, id, &r);
        return true;
    }
    let Some(&(_, support)) = TOOLS.iter().find(|(n, _)| *n == name) else {
        return false;
    };
    let asked = if modern {
        crate::modern::capabilities(params)
            .pointer(&format!("/extensions/{}", EXTENSION.replace('/', "~1")))
            .is_some()
    } else {
        params.get("task").is_some_and(Value::is_object)
    };
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    if !asked {
        if support == "required" {
            send_error(
                out,
                buf,
                id,
                -32601,
                &format!("tool {name} must be called as a task"),
            );
        } else {
            let text = args.get("text").and_then(Value::as_str).unwrap_or("");
            let mut r = text_result(text);
            if modern {
                r["resultType"] = json!("complete");
            }
            send_value_result(out, buf, id, &r);
        }
        return true;
    }
    let task_id = format!(
        "task-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let now = now_iso();
    let t = Task {
        status: "working",
        message: Some("started".into()),
        created: now.clone(),
        updated: now,
        result: None,
        question: None,
        answer: None,
        cancel: false,
    };
    let mut shown = wire(&task_id, &t, modern, false);
    lock(&STORE.tasks).insert(task_id.clone(), t);
    let token = crate::modern::progress_token(Some(params));
    let (tid, tool) = (task_id.clone(), name.to_string());
    thread::spawn(move || work(tid, tool, args, token));
    let result = if modern {
        let mut m = Map::new();
        m.insert("resultType".into(), json!("task"));
        m.append(&mut shown);
        Value::Object(m)
    } else {
        json!({"task": Value::Object(shown)})
    };
    send_value_result(out, buf, id, &result);
    true
}

/// `tasks/*`; `tasks/result` (the handshake era) blocks, so it is handed back to run on its
/// own thread ([`result`]).
pub fn request(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: &Value,
    method: &str,
    params: Option<&Value>,
    modern: bool,
) -> bool {
    let task_id = params
        .and_then(|p| p.get("taskId"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let complete = |mut m: Map<String, Value>| {
        if modern {
            m.insert("resultType".into(), json!("complete"));
        }
        Value::Object(m)
    };
    match method {
        "tasks/list" => {
            let tasks = lock(&STORE.tasks);
            let mut ids: Vec<&String> = tasks.keys().collect();
            ids.sort();
            let list: Vec<Value> = ids
                .iter()
                .map(|i| Value::Object(wire(i, &tasks[*i], false, false)))
                .collect();
            // Paged as the resource listings are (`--cursor-loop` loops A->B->A here too).
            match crate::pages::listing("tasks", list, params) {
                Ok(page) => send_value_result(out, buf, id, &page),
                Err(()) => send_error(out, buf, id, -32602, "Invalid cursor"),
            }
        }
        "tasks/result" => return false,
        "tasks/update" => {
            let responses = params.and_then(|p| p.get("inputResponses"));
            let mut tasks = lock(&STORE.tasks);
            if let Some(t) = tasks.get_mut(&task_id) {
                if let (Some((key, _)), Some(r)) = (&t.question, responses) {
                    if let Some(a) = r.get(key) {
                        t.answer = Some(a.clone());
                        t.question = None;
                        STORE.changed.notify_all();
                    }
                }
            }
            drop(tasks);
            send_value_result(out, buf, id, &complete(Map::new()));
        }
        _ => {
            let cancel = method == "tasks/cancel";
            if cancel {
                lock(&STORE.cancelled).push(task_id.clone());
            }
            let mut tasks = lock(&STORE.tasks);
            let Some(t) = tasks.get_mut(&task_id) else {
                drop(tasks);
                if cancel && modern {
                    // SEP-2663: acknowledged even for an unknown task.
                    send_value_result(out, buf, id, &complete(Map::new()));
                } else {
                    let msg = format!("Unknown task: {task_id}");
                    send_error(out, buf, id, -32602, &msg);
                }
                return true;
            };
            if cancel {
                if matches!(t.status, "completed" | "failed" | "cancelled") && !modern {
                    let msg = format!("Task {task_id} is already {}", t.status);
                    drop(tasks);
                    send_error(out, buf, id, -32602, &msg);
                    return true;
                }
                if !matches!(t.status, "completed" | "failed" | "cancelled") {
                    t.cancel = true;
                    t.status = "cancelled";
                    t.message = Some("cancelled by the client".into());
                    t.updated = now_iso();
                    STORE.changed.notify_all();
                }
                let shown = if modern {
                    Map::new()
                } else {
                    wire(&task_id, t, false, false)
                };
                drop(tasks);
                send_value_result(out, buf, id, &complete(shown));
            } else {
                let shown = wire(&task_id, t, modern, modern);
                drop(tasks);
                send_value_result(out, buf, id, &complete(shown));
            }
        }
    }
    true
}

/// 2025-11-25 `tasks/result`: waits for the task to end; a question it has meanwhile is asked
/// on this request's stream as `elicitation/create` (related-task metadata attached).
pub fn result(out: &dyn Out, id: &Value, params: &Value) {
    let mut buf = Vec::with_capacity(256);
    let task_id = params
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let related = json!({"io.modelcontextprotocol/related-task": {"taskId": task_id}});
    loop {
        let ask = {
            let mut tasks = lock(&STORE.tasks);
            loop {
                let Some(t) = tasks.get(&task_id) else {
                    drop(tasks);
                    let msg = format!("Unknown task: {task_id}");
                    return send_error(out, &mut buf, id, -32602, &msg);
                };
                match t.status {
                    "completed" => {
                        let mut r = t.result.clone().unwrap_or_else(|| json!({}));
                        r["_meta"] = related.clone();
                        drop(tasks);
                        return send_value_result(out, &mut buf, id, &r);
                    }
                    "failed" | "cancelled" => {
                        let msg = format!("Task {task_id} {}", t.status);
                        drop(tasks);
                        return send_error(out, &mut buf, id, -32603, &msg);
                    }
                    "input_required" if t.question.is_some() => {
                        break t.question.clone();
                    }
                    _ => {}
                }
                tasks = STORE.changed.wait(tasks).unwrap_or_else(|e| e.into_inner());
            }
        };
        if let Some((key, mut q)) = ask {
            q["_meta"] = related.clone();
            let reply = crate::out::server_request(out, "elicitation/create", Some(&q));
            let answer = crate::out::split_response(reply).unwrap_or(Value::Null);
            let mut tasks = lock(&STORE.tasks);
            if let Some(t) = tasks.get_mut(&task_id) {
                if t.question.as_ref().is_some_and(|(k, _)| *k == key) {
                    t.question = None;
                    t.answer = Some(answer);
                    STORE.changed.notify_all();
                }
            }
        }
    }
}
