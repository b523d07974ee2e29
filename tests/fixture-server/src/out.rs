//! Where messages go, and how they are built.
//!
//! Tools write through an [`Out`]: stdout (one line per message, under one
//! mutex) in stdio mode, or the HTTP request being served (a JSON body or its
//! SSE stream) in HTTP mode. Messages are built as compact JSON lines ending in
//! '\n' in a reusable buffer.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

/// The destination of the messages written while one client request is served.
pub trait Out {
    /// Messages that are not the answer to the request being served
    /// (notifications, junk): one or more complete lines, each ending in '\n'.
    fn emit(&self, lines: &[u8]);
    /// The answer to the request being served: one line ending in '\n'.
    fn respond(&self, line: &[u8]);
    /// The answer, written in 4 pieces 50 ms apart.
    fn respond_in_pieces(&self, line: &[u8]);
    /// The first bytes of an answer that is never finished (the process exits next).
    fn respond_truncated(&self, partial: &[u8]);
    /// Send a server->client request tied to the request being served; the
    /// receiver gets the whole response message.
    fn request(&self, method: &str, params: Option<&Value>) -> Receiver<Value>;
    /// A server->client request tied to no client request; `None` when it was
    /// dropped (HTTP: no standalone GET stream open).
    fn unrelated_request(&self, method: &str, params: Option<&Value>) -> Option<Receiver<Value>> {
        Some(self.request(method, params))
    }
}

// ---------------------------------------------------------------------------
// stdio
// ---------------------------------------------------------------------------

/// The one lock every stdout line goes through.
static OUT: Mutex<()> = Mutex::new(());

/// Write complete lines (the buffer must already end with '\n') and flush.
pub fn emit(line: &[u8]) {
    let _guard = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = io::stdout().lock();
    if out.write_all(line).and_then(|()| out.flush()).is_err() {
        // The client closed our stdout: nobody is listening any more.
        process::exit(0);
    }
}

/// stdout, with server requests numbered from one process-wide counter.
pub struct Stdio;

/// Server requests of stdio mode.
pub static STDIO_PENDING: Pending = Pending::new();

impl Out for Stdio {
    fn emit(&self, lines: &[u8]) {
        emit(lines);
    }

    fn respond(&self, line: &[u8]) {
        emit(line);
    }

    fn respond_in_pieces(&self, line: &[u8]) {
        let _guard = OUT.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = io::stdout().lock();
        let step = line.len().div_ceil(4).max(1);
        for (i, piece) in line.chunks(step).enumerate() {
            if i > 0 {
                thread::sleep(Duration::from_millis(50));
            }
            if out.write_all(piece).and_then(|()| out.flush()).is_err() {
                process::exit(0);
            }
        }
    }

    fn respond_truncated(&self, partial: &[u8]) {
        let _guard = OUT.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = io::stdout().lock();
        let _ = out.write_all(partial).and_then(|()| out.flush());
    }

    fn request(&self, method: &str, params: Option<&Value>) -> Receiver<Value> {
        let (id, rx) = STDIO_PENDING.register();
        let mut buf = Vec::with_capacity(256);
        request_line(&mut buf, id, method, params);
        emit(&buf);
        rx
    }
}

// ---------------------------------------------------------------------------
// Server -> client requests
// ---------------------------------------------------------------------------

/// Outstanding server->client requests: id -> the waiting tool's sender.
/// Ids start at 0 on purpose: they collide with the client's own request ids,
/// which JSON-RPC allows.
pub struct Pending {
    next: AtomicU64,
    map: Mutex<BTreeMap<u64, Sender<Value>>>,
}

impl Pending {
    pub const fn new() -> Self {
        Pending {
            next: AtomicU64::new(0),
            map: Mutex::new(BTreeMap::new()),
        }
    }

    /// A new request id and the receiver of its response.
    pub fn register(&self) -> (u64, Receiver<Value>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.lock().insert(id, tx);
        (id, rx)
    }

    /// Forget a request (it was never delivered); its receiver sees a disconnect.
    pub fn forget(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Forget every request (the session is gone).
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Route a response message (no `method`, has `id`) to its waiting tool.
    pub fn route(&self, msg: Value) {
        let key = match msg.get("id") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        };
        let tx = key.and_then(|k| self.lock().remove(&k));
        match tx {
            Some(tx) => {
                let _ = tx.send(msg);
            }
            None => eprintln!(
                "fixture: response for unknown id {}",
                msg.get("id").map(Value::to_string).unwrap_or_default()
            ),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Sender<Value>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Send a request to the client and block (no timeout) until its response
/// arrives. Returns the whole response message (null if it can never come).
pub fn server_request(out: &dyn Out, method: &str, params: Option<&Value>) -> Value {
    out.request(method, params).recv().unwrap_or(Value::Null)
}

/// `Ok(result)` or `Err(error)` of a response message.
pub fn split_response(mut msg: Value) -> Result<Value, Value> {
    if let Some(err) = msg.get_mut("error") {
        return Err(err.take());
    }
    Ok(msg
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

// ---------------------------------------------------------------------------
// Message builders
// ---------------------------------------------------------------------------

pub fn put_value(buf: &mut Vec<u8>, v: &Value) {
    // Writing into a Vec cannot fail, and Value maps always have string keys.
    let _ = serde_json::to_writer(&mut *buf, v);
}

pub fn put_str(buf: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *buf, s);
}

/// `{"jsonrpc":"2.0","id":<id>,"method":<method>,"params":<params>}\n` into a cleared `buf`.
pub fn request_line(buf: &mut Vec<u8>, id: u64, method: &str, params: Option<&Value>) {
    buf.clear();
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    buf.extend_from_slice(id.to_string().as_bytes());
    buf.extend_from_slice(b",\"method\":");
    put_str(buf, method);
    if let Some(p) = params {
        buf.extend_from_slice(b",\"params\":");
        put_value(buf, p);
    }
    buf.extend_from_slice(b"}\n");
}

/// Start a result response: `{"jsonrpc":"2.0","id":<id>,"result":`.
pub fn begin_result(buf: &mut Vec<u8>, id: &Value) {
    buf.clear();
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    put_value(buf, id);
    buf.extend_from_slice(b",\"result\":");
}

/// Close a response started with `begin_result` and send it.
pub fn end_result(out: &dyn Out, buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"}\n");
    out.respond(buf);
}

/// Send `result` given as literal JSON text.
pub fn send_raw_result(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, result: &str) {
    begin_result(buf, id);
    buf.extend_from_slice(result.as_bytes());
    end_result(out, buf);
}

pub fn send_value_result(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, result: &Value) {
    begin_result(buf, id);
    put_value(buf, result);
    end_result(out, buf);
}

/// Send a CallToolResult with a single text block.
pub fn send_text(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, text: &str, is_error: bool) {
    begin_result(buf, id);
    buf.extend_from_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    put_str(buf, text);
    buf.extend_from_slice(if is_error {
        b"}],\"isError\":true}"
    } else {
        b"}]}"
    });
    end_result(out, buf);
}

/// An error response line into a cleared `buf`.
pub fn error_line(buf: &mut Vec<u8>, id: &Value, code: i64, message: &str) {
    buf.clear();
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    put_value(buf, id);
    buf.extend_from_slice(b",\"error\":{\"code\":");
    buf.extend_from_slice(code.to_string().as_bytes());
    buf.extend_from_slice(b",\"message\":");
    put_str(buf, message);
    buf.extend_from_slice(b"}}\n");
}

pub fn send_error(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, code: i64, message: &str) {
    error_line(buf, id, code, message);
    out.respond(buf);
}
