//! The MCP methods both transports share: message classification,
//! `initialize`, `tools/list`, `tools/call` dispatch, notifications.

use crate::listing::tool_list;
use crate::opts;
use crate::out::{
    begin_result, end_result, put_str, send_error, send_raw_result, send_value_result, Out,
};
use crate::tools::{tools_call, Blocking};
use crate::util::raw_member;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

/// What a client told us (per process in stdio mode, per session over HTTP).
#[derive(Default)]
pub struct State {
    /// Raw text of the last initialize `params` received.
    pub init_params: Mutex<Option<String>>,
    /// Raw (compact) JSON of each cancelled requestId, in arrival order.
    pub cancelled: Mutex<Vec<String>>,
    /// An `initialize` was answered.
    pub initialized: AtomicBool,
    /// `--resources`: the URIs `resources/subscribe` named (and no `resources/unsubscribe` since).
    pub subscriptions: Mutex<BTreeSet<String>>,
}

/// One parsed input message.
pub enum Msg {
    Request {
        method: String,
        id: Value,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response to one of our requests (the whole message).
    Response(Value),
    /// A `method` that is not a string, with this id.
    Invalid(Value),
    /// Neither `method` nor `id`.
    Neither,
    /// Not JSON, or not an object, or a bad `method` without an id.
    Bad,
}

pub fn parse_message(line: &[u8]) -> Msg {
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(line) else {
        return Msg::Bad;
    };
    let method = match obj.get_mut("method") {
        Some(Value::String(m)) => Some(std::mem::take(m)),
        Some(_) => {
            return match obj.get_mut("id") {
                Some(id) => Msg::Invalid(id.take()),
                None => Msg::Bad,
            }
        }
        None => None,
    };
    match (method, obj.contains_key("id")) {
        (Some(method), true) => Msg::Request {
            method,
            id: obj.get_mut("id").map(Value::take).unwrap_or(Value::Null),
            params: obj.get_mut("params").map(Value::take),
        },
        (Some(method), false) => Msg::Notification {
            method,
            params: obj.get_mut("params").map(Value::take),
        },
        (None, true) => Msg::Response(Value::Object(obj)),
        (None, false) => Msg::Neither,
    }
}

pub fn notification(state: &State, method: &str, params: Option<Value>) {
    match method {
        "notifications/initialized" => {
            if let Some(code) = opts().exit_after_init {
                eprintln!("fixture: bye");
                process::exit(code);
            }
        }
        "notifications/cancelled" => {
            if let Some(rid) = params.as_ref().and_then(|p| p.get("requestId")) {
                crate::live::cancelled(rid);
                crate::resources::cancelled(rid);
            }
            let rid = params
                .as_ref()
                .and_then(|p| p.get("requestId"))
                .map(Value::to_string)
                .unwrap_or_else(|| "null".to_owned());
            state
                .cancelled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(rid);
        }
        _ => {}
    }
}

/// Answer a request (`line` is its raw text); a blocking tool call is handed back.
pub fn request(
    out: &dyn Out,
    state: &State,
    buf: &mut Vec<u8>,
    method: &str,
    id: Value,
    params: Option<Value>,
    line: &[u8],
) -> Option<Blocking> {
    match method {
        "tools/call" => {
            if opts().tasks {
                let p = params.clone().unwrap_or(Value::Null);
                let name = p.get("name").and_then(Value::as_str).unwrap_or("");
                if crate::tasks::call(out, buf, &id, name, &p, false) {
                    return None;
                }
            }
            return tools_call(out, state, buf, id, params);
        }
        m if opts().tasks && crate::tasks::handles(m, false) => {
            if !crate::tasks::request(out, buf, &id, m, params.as_ref(), false) {
                return Some(crate::tools::Blocking {
                    id,
                    name: "__tasks_result".into(),
                    args: params.unwrap_or(Value::Null),
                    progress_token: None,
                    modern: false,
                });
            }
        }
        "ping" => send_raw_result(out, buf, &id, "{}"),
        "tools/list" => tools_list(out, buf, &id, params.as_ref()),
        "initialize" => initialize(out, state, buf, &id, params.as_ref(), line),
        "logging/setLevel" if crate::live::enabled() => {
            crate::live::set_level(out, buf, &id, params.as_ref())
        }
        "server/discover"
            if opts().exit_on_discover && !state.initialized.load(Ordering::Relaxed) =>
        {
            eprintln!("fixture: exiting on server/discover");
            process::exit(3);
        }
        "server/discover" if opts().silent_on_discover => {} // never answered
        m if crate::resources::handles(m, params.as_ref(), false) => {
            return crate::resources::request(out, state, buf, id, m, params, false);
        }
        m if opts().skills && crate::skills::handles(m) => {
            crate::skills::request(out, buf, &id, m, params.as_ref(), false)
        }
        _ => send_error(out, buf, &id, -32601, "Method not found"),
    }
    None
}

fn initialize(
    out: &dyn Out,
    state: &State,
    buf: &mut Vec<u8>,
    id: &Value,
    params: Option<&Value>,
    line: &[u8],
) {
    let o = opts();
    if let Some(code) = o.exit_on_init {
        eprintln!("fixture: refusing to initialize");
        process::exit(code);
    }
    *state.init_params.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(match raw_member(line, "params") {
            Some(raw) => String::from_utf8_lossy(raw).into_owned(),
            None => params
                .map(Value::to_string)
                .unwrap_or_else(|| "null".into()),
        });
    if o.init_delay_ms > 0 {
        thread::sleep(Duration::from_millis(o.init_delay_ms));
    }
    let version = match &o.protocol {
        Some(v) => Value::String(v.clone()),
        None => params
            .and_then(|p| p.get("protocolVersion"))
            .cloned()
            .unwrap_or_else(|| Value::String("2025-11-25".into())),
    };
    state.initialized.store(true, Ordering::Relaxed);
    let mut capabilities = if o.skills {
        crate::skills::capabilities()
    } else if crate::live::enabled() {
        json!({"tools": {"listChanged": true}, "logging": {}})
    } else {
        json!({"tools": {"listChanged": false}})
    };
    if o.tasks {
        crate::tasks::add_capabilities(&mut capabilities, false);
    }
    crate::resources::add_capabilities(&mut capabilities);
    let result = json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": o.name, "version": "1.0.0"}
    });
    send_value_result(out, buf, id, &result);
}

pub fn tools_list(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, params: Option<&Value>) {
    let o = opts();
    if o.silent_tool_list {
        return;
    }
    if o.no_tools_list {
        send_error(out, buf, id, -32603, "tools/list exploded");
        return;
    }
    let live = if crate::live::enabled() {
        crate::live::listing()
    } else {
        Vec::new()
    };
    let tools: Vec<&[u8]> = tool_list()
        .iter()
        .chain(live.iter())
        .map(Vec::as_slice)
        .collect();
    let total = tools.len();
    let (start, end, next): (usize, usize, Option<String>) = if o.repeat_cursor {
        let end = o.page_size.map_or(total, |n| n.min(total));
        (0, end, Some("same".to_owned()))
    } else if let Some(size) = o.page_size {
        let start = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => match c.parse::<usize>() {
                Ok(n) => n.min(total),
                Err(_) => {
                    send_error(out, buf, id, -32602, "Invalid cursor");
                    return;
                }
            },
            Some(_) => {
                send_error(out, buf, id, -32602, "Invalid cursor");
                return;
            }
        };
        let end = start.saturating_add(size).min(total);
        (start, end, (end < total).then(|| end.to_string()))
    } else {
        (0, total, None)
    };
    begin_result(buf, id);
    buf.extend_from_slice(b"{\"tools\":[");
    for (i, t) in tools[start..end].iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(t);
    }
    buf.push(b']');
    if let Some(c) = next {
        buf.extend_from_slice(b",\"nextCursor\":");
        put_str(buf, &c);
    }
    buf.push(b'}');
    end_result(out, buf);
}
