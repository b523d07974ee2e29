//! `tn-fixture-server`: a small, fast MCP server over stdio used by the
//! toolnexus tests and benchmarks.
//!
//! Protocol: newline-delimited JSON-RPC 2.0 on stdin/stdout. Every stdout
//! line is written with one `write_all` + `flush` under a single mutex, so
//! lines from different threads never interleave. stderr is diagnostics only.
//!
//! The main thread reads stdin. Fast tools are answered inline (no thread
//! spawn); tools that block (elicitation, `slow`, server->client requests)
//! run on their own thread so many calls can be in flight at once. Responses
//! from the client to server-initiated requests are routed back to the waiting
//! thread through a pending map (id -> `mpsc::Sender`).
//!
//! See README.md for the options and the tool list.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::process::{self, Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::Duration;

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

#[derive(Debug)]
struct Opts {
    protocol: Option<String>,
    name: String,
    extra_tools: usize,
    page_size: Option<usize>,
    repeat_cursor: bool,
    exit_on_init: Option<i32>,
    exit_after_init: Option<i32>,
    init_delay_ms: u64,
    stderr_flood_mb: u64,
    no_tools_list: bool,
    silent_tool_list: bool,
    ignore_stdin_eof: bool,
    ignore_sigterm: bool,
    close_stdin_after_init: bool,
    stop_reading_after_init: bool,
    stdout_close_after_init: bool,
    print_pid_file: Option<String>,
    hardening_tools: bool,
    stdout_outlives_exit_ms: Option<u64>,
}

const USAGE: &str = "usage: tn-fixture-server [--protocol V] [--name N] [--extra-tools N] \
[--page-size N] [--repeat-cursor] [--exit-on-init CODE] [--exit-after-init CODE] \
[--init-delay-ms N] [--stderr-flood-mb N] [--no-tools-list] [--silent-tool-list] \
[--ignore-stdin-eof] [--ignore-sigterm] [--close-stdin-after-init] \
[--stdout-close-after-init] [--print-pid-file PATH] [--hardening-tools] \
[--stdout-outlives-exit-ms N]";

fn usage_error(msg: &str) -> ! {
    eprintln!("fixture: {msg}\n{USAGE}");
    process::exit(2);
}

/// Parse a numeric option value or exit with a usage error.
fn num<T: std::str::FromStr>(flag: &str, s: String) -> T {
    s.trim()
        .parse()
        .unwrap_or_else(|_| usage_error(&format!("bad value for {flag}: {s:?}")))
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        protocol: None,
        name: "tn-fixture".to_owned(),
        extra_tools: 0,
        page_size: None,
        repeat_cursor: false,
        exit_on_init: None,
        exit_after_init: None,
        init_delay_ms: 0,
        stderr_flood_mb: 0,
        no_tools_list: false,
        silent_tool_list: false,
        ignore_stdin_eof: false,
        ignore_sigterm: false,
        close_stdin_after_init: false,
        stop_reading_after_init: false,
        stdout_close_after_init: false,
        print_pid_file: None,
        hardening_tools: false,
        stdout_outlives_exit_ms: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |what: &str| -> String {
            args.next()
                .unwrap_or_else(|| usage_error(&format!("{what} needs a value")))
        };
        match a.as_str() {
            "--protocol" => o.protocol = Some(value("--protocol")),
            "--name" => o.name = value("--name"),
            "--extra-tools" => o.extra_tools = num(&a, value(&a)),
            "--page-size" => {
                let n: usize = num(&a, value(&a));
                // 0 would never make progress: treat it as "no pagination".
                o.page_size = (n > 0).then_some(n);
            }
            "--repeat-cursor" => o.repeat_cursor = true,
            "--exit-on-init" => o.exit_on_init = Some(num(&a, value(&a))),
            "--exit-after-init" => o.exit_after_init = Some(num(&a, value(&a))),
            "--init-delay-ms" => o.init_delay_ms = num(&a, value(&a)),
            "--stderr-flood-mb" => o.stderr_flood_mb = num(&a, value(&a)),
            "--no-tools-list" => o.no_tools_list = true,
            "--silent-tool-list" => o.silent_tool_list = true,
            "--ignore-stdin-eof" => o.ignore_stdin_eof = true,
            "--ignore-sigterm" => o.ignore_sigterm = true,
            "--close-stdin-after-init" => o.close_stdin_after_init = true,
            "--stop-reading-after-init" => o.stop_reading_after_init = true,
            "--stdout-close-after-init" => o.stdout_close_after_init = true,
            "--print-pid-file" => o.print_pid_file = Some(value("--print-pid-file")),
            "--hardening-tools" => o.hardening_tools = true,
            "--stdout-outlives-exit-ms" => {
                o.stdout_outlives_exit_ms = Some(num(&a, value(&a)));
            }
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                process::exit(0);
            }
            other => usage_error(&format!("unknown option {other:?}")),
        }
    }
    o
}

static OPTS: OnceLock<Opts> = OnceLock::new();

fn opts() -> &'static Opts {
    OPTS.get().expect("options initialised in main")
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

/// The one lock every stdout line goes through.
static OUT: Mutex<()> = Mutex::new(());

/// Write one complete line (the buffer must already end with '\n') and flush.
fn emit(line: &[u8]) {
    let _guard = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = io::stdout().lock();
    if out.write_all(line).and_then(|()| out.flush()).is_err() {
        // The client closed our stdout: nobody is listening any more.
        process::exit(0);
    }
}

fn put_value(buf: &mut Vec<u8>, v: &Value) {
    // Writing into a Vec cannot fail, and Value maps always have string keys.
    let _ = serde_json::to_writer(&mut *buf, v);
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *buf, s);
}

/// Start a result response: `{"jsonrpc":"2.0","id":<id>,"result":`.
fn begin_result(buf: &mut Vec<u8>, id: &Value) {
    buf.clear();
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    put_value(buf, id);
    buf.extend_from_slice(b",\"result\":");
}

/// Close a response started with `begin_result` and write it.
fn end_result(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"}\n");
    emit(buf);
}

/// Send `result` given as literal JSON text.
fn send_raw_result(buf: &mut Vec<u8>, id: &Value, result: &str) {
    begin_result(buf, id);
    buf.extend_from_slice(result.as_bytes());
    end_result(buf);
}

fn send_value_result(buf: &mut Vec<u8>, id: &Value, result: &Value) {
    begin_result(buf, id);
    put_value(buf, result);
    end_result(buf);
}

/// Send a CallToolResult with a single text block.
fn send_text(buf: &mut Vec<u8>, id: &Value, text: &str, is_error: bool) {
    begin_result(buf, id);
    buf.extend_from_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
    put_str(buf, text);
    buf.extend_from_slice(if is_error {
        b"}],\"isError\":true}"
    } else {
        b"}]}"
    });
    end_result(buf);
}

fn send_error(buf: &mut Vec<u8>, id: &Value, code: i64, message: &str) {
    buf.clear();
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    put_value(buf, id);
    buf.extend_from_slice(b",\"error\":{\"code\":");
    buf.extend_from_slice(code.to_string().as_bytes());
    buf.extend_from_slice(b",\"message\":");
    put_str(buf, message);
    buf.extend_from_slice(b"}}\n");
    emit(buf);
}

// ---------------------------------------------------------------------------
// stderr noise
// ---------------------------------------------------------------------------

/// Write about `bytes` bytes of 100-byte noise lines to stderr.
/// Writes the crash line and exits while holding stderr, so that a noise thread cannot bury the
/// line (tests read it as the last line of the stderr tail).
fn crash_with(code: i64) -> ! {
    let mut e = io::stderr().lock();
    let _ = writeln!(e, "fixture: crashing with {code}");
    let _ = e.flush();
    process::exit(code as i32)
}

fn write_noise(bytes: u64) {
    const LINE: &[u8; 100] = b"noise noise noise noise noise noise noise noise noise noise \
noise noise noise noise noise noise end\n";
    const LINES_PER_BLOCK: usize = 655; // ~64 KiB per write
    let block: Vec<u8> = LINE.repeat(LINES_PER_BLOCK);
    let mut lines_left = bytes.div_ceil(LINE.len() as u64);
    let stderr = io::stderr();
    while lines_left > 0 {
        let n = lines_left.min(LINES_PER_BLOCK as u64);
        let chunk = &block[..n as usize * LINE.len()];
        if stderr.lock().write_all(chunk).is_err() {
            return;
        }
        lines_left -= n;
    }
}

// ---------------------------------------------------------------------------
// Server -> client requests
// ---------------------------------------------------------------------------

/// Ids for server-initiated requests. Starts at 0 on purpose: they collide
/// with the client's own request ids, which JSON-RPC allows.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static NEXT_ELICITATION: AtomicU64 = AtomicU64::new(1);
static PENDING: Mutex<BTreeMap<u64, Sender<Value>>> = Mutex::new(BTreeMap::new());

/// Send a request to the client and block (no timeout) until its response
/// arrives. Returns the whole response message.
fn server_request(method: &str, params: Option<&Value>) -> Value {
    // The sender lives in PENDING until the response arrives, so recv only
    // fails if the map was poisoned and dropped; treat that as a null reply.
    start_server_request(method, params)
        .recv()
        .unwrap_or(Value::Null)
}

/// Send a request to the client without waiting; the receiver gets the
/// whole response message.
fn start_server_request(method: &str, params: Option<&Value>) -> mpsc::Receiver<Value> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel();
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, tx);
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    buf.extend_from_slice(id.to_string().as_bytes());
    buf.extend_from_slice(b",\"method\":");
    put_str(&mut buf, method);
    if let Some(p) = params {
        buf.extend_from_slice(b",\"params\":");
        put_value(&mut buf, p);
    }
    buf.extend_from_slice(b"}\n");
    emit(&buf);
    rx
}

/// Route a response message (no `method`, has `id`) to its waiting thread.
fn route_response(msg: Value) {
    let key = match msg.get("id") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    let tx = key.and_then(|k| PENDING.lock().unwrap_or_else(|e| e.into_inner()).remove(&k));
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

/// `Ok(result)` or `Err(error)` of a response message.
fn split_response(mut msg: Value) -> Result<Value, Value> {
    if let Some(err) = msg.get_mut("error") {
        return Err(err.take());
    }
    Ok(msg
        .get_mut("result")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

fn elicit_form(message: &str) -> Result<Value, Value> {
    elicit_form_with(
        message,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name"},
                "age": {"type": "integer", "default": 30},
                "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
                "subscribe": {"type": "boolean"}
            },
            "required": ["name"]
        }),
    )
}

/// A form elicitation with the given `requestedSchema`.
fn elicit_form_with(message: &str, schema: Value) -> Result<Value, Value> {
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema
    });
    split_response(server_request("elicitation/create", Some(&params)))
}

/// `ask_many`: n form elicitations written back to back (all outstanding at
/// once), then every answer awaited. Text: `accepted K of N`.
fn ask_many(n: u64) -> String {
    let receivers: Vec<mpsc::Receiver<Value>> = (0..n)
        .map(|i| {
            let params = json!({
                "mode": "form",
                "message": format!("question {}", i + 1),
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }
            });
            start_server_request("elicitation/create", Some(&params))
        })
        .collect();
    let accepted = receivers
        .into_iter()
        .filter(|rx| {
            let reply = rx.recv().unwrap_or(Value::Null);
            reply.pointer("/result/action").and_then(Value::as_str) == Some("accept")
        })
        .count();
    format!("accepted {accepted} of {n}")
}

fn elicit_url(url: &str) -> Result<Value, Value> {
    let n = NEXT_ELICITATION.fetch_add(1, Ordering::Relaxed);
    let params = json!({
        "mode": "url",
        "message": "Please authorize",
        "url": url,
        "elicitationId": format!("el-{n}"),
    });
    split_response(server_request("elicitation/create", Some(&params)))
}

fn send_elicitation_outcome(buf: &mut Vec<u8>, id: &Value, outcome: Result<Value, Value>) {
    match outcome {
        Ok(result) => send_text(buf, id, &result.to_string(), false),
        Err(error) => send_text(buf, id, &format!("elicitation error: {error}"), true),
    }
}

/// The blocking tools, run on their own thread.
fn run_blocking_tool(id: Value, name: &str, args: Value) {
    let mut buf = Vec::with_capacity(256);
    let buf = &mut buf;
    match name {
        "ask_form" => {
            let msg = arg_str(&args, "message").unwrap_or("Who are you?");
            let outcome = match args.get("schema") {
                Some(schema) => elicit_form_with(msg, schema.clone()),
                None => elicit_form(msg),
            };
            send_elicitation_outcome(buf, &id, outcome);
        }
        "ask_url" => {
            let url = arg_str(&args, "url").unwrap_or("https://example.test/auth");
            send_elicitation_outcome(buf, &id, elicit_url(url));
        }
        "ask_twice" => {
            let first = match elicit_form("first?") {
                Ok(r) => r,
                Err(e) => return send_elicitation_outcome(buf, &id, Err(e)),
            };
            let outcome = elicit_form("second?").map(|second| json!([first, second]));
            send_elicitation_outcome(buf, &id, outcome);
        }
        "slow" => match arg_u64(&args, "ms") {
            Some(ms) => {
                thread::sleep(Duration::from_millis(ms));
                send_text(buf, &id, &format!("slept {ms}"), false);
            }
            None => send_text(buf, &id, "slow: missing integer argument 'ms'", true),
        },
        "ping_client" => {
            let reply = server_request("ping", None);
            send_text(buf, &id, &reply.to_string(), false);
        }
        "unknown_request" => {
            let params = json!({"messages": [], "maxTokens": 1});
            let reply = server_request("sampling/createMessage", Some(&params));
            send_text(buf, &id, &reply.to_string(), false);
        }
        "elicit_then_slow" => match arg_u64(&args, "ms") {
            Some(ms) => {
                let outcome = elicit_form("Who are you?");
                thread::sleep(Duration::from_millis(ms));
                send_elicitation_outcome(buf, &id, outcome);
            }
            None => send_text(
                buf,
                &id,
                "elicit_then_slow: missing integer argument 'ms'",
                true,
            ),
        },
        "ask_many" => match arg_u64(&args, "n") {
            Some(n) => send_text(buf, &id, &ask_many(n), false),
            None => send_text(buf, &id, "ask_many: missing integer argument 'n'", true),
        },
        "partial_then_echo" => {
            // The whole response, written in 4 pieces with pauses (one line overall).
            let text = arg_str(&args, "text").unwrap_or("");
            begin_result(buf, &id);
            buf.extend_from_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
            put_str(buf, text);
            buf.extend_from_slice(b"}]}}\n");
            let _guard = OUT.lock().unwrap_or_else(|e| e.into_inner());
            let mut out = io::stdout().lock();
            let step = buf.len().div_ceil(4).max(1);
            for (i, piece) in buf.chunks(step).enumerate() {
                if i > 0 {
                    thread::sleep(Duration::from_millis(50));
                }
                if out.write_all(piece).and_then(|()| out.flush()).is_err() {
                    process::exit(0);
                }
            }
        }
        _ => send_error(buf, &id, -32603, "not a blocking tool"),
    }
}

fn is_blocking_tool(name: &str) -> bool {
    matches!(
        name,
        "ask_form"
            | "ask_url"
            | "ask_twice"
            | "slow"
            | "ping_client"
            | "unknown_request"
            | "elicit_then_slow"
            | "ask_many"
            | "partial_then_echo"
    )
}

// ---------------------------------------------------------------------------
// Argument helpers
// ---------------------------------------------------------------------------

fn arg_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn arg_u64(args: &Value, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}

/// Integer value of a JSON number written as an integer (no '.', no
/// exponent), using its exact text (arbitrary_precision keeps it).
fn number_as_i128(n: &serde_json::Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    n.to_string().parse::<i128>().ok()
}

fn add_numbers(args: &Value) -> Result<String, &'static str> {
    let a = match args.get("a") {
        Some(Value::Number(n)) => n,
        _ => return Err("add: 'a' must be a number"),
    };
    let b = match args.get("b") {
        Some(Value::Number(n)) => n,
        _ => return Err("add: 'b' must be a number"),
    };
    if let (Some(x), Some(y)) = (number_as_i128(a), number_as_i128(b)) {
        if let Some(sum) = x.checked_add(y) {
            return Ok(sum.to_string());
        }
    }
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
        return Err("add: numbers out of range");
    };
    match serde_json::Number::from_f64(x + y) {
        Some(n) => Ok(n.to_string()),
        None => Err("add: result is not finite"),
    }
}

// ---------------------------------------------------------------------------
// Raw JSON scanning (for texts that must be returned byte-exact)
// ---------------------------------------------------------------------------

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `s[i]` is '"'; returns the index just past the closing quote.
fn skip_string(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match *s.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Returns the index just past the JSON value starting at `s[i]`.
fn skip_value(s: &[u8], i: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => skip_string(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *s.get(j)? {
                    b'"' => {
                        j = skip_string(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while j < s.len() && !matches!(s[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// Raw text of the top-level member `key` of the JSON object in `s` (the
/// last one if duplicated, like serde_json). `s` must already be valid JSON.
fn raw_member<'a>(s: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let mut i = skip_ws(s, 0);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut found = None;
    loop {
        i = skip_ws(s, i);
        match *s.get(i)? {
            b'}' => return found,
            b'"' => {}
            _ => return None,
        }
        let key_end = skip_string(s, i)?;
        let k = &s[i + 1..key_end - 1];
        i = skip_ws(s, key_end);
        if s.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(s, i + 1);
        let value_end = skip_value(s, i)?;
        if k == key.as_bytes() {
            found = Some(&s[i..value_end]);
        }
        i = skip_ws(s, value_end);
        match *s.get(i)? {
            b',' => i += 1,
            b'}' => return found,
            _ => return None,
        }
    }
}

// ---------------------------------------------------------------------------
// Tool listing
// ---------------------------------------------------------------------------

fn base_tools() -> Vec<Value> {
    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }
    fn tool(name: &str, description: &str, schema: Value) -> Value {
        json!({"name": name, "description": description, "inputSchema": schema})
    }
    vec![
        tool(
            "echo",
            "Echo the text back",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        tool(
            "add",
            "Add two numbers",
            obj(json!({"a": {"type": "number"}, "b": {"type": "number"}})),
        ),
        tool("structured", "Return structured content", obj(json!({}))),
        tool("fail", "Always fail with a tool error", obj(json!({}))),
        tool("image", "Return a tiny PNG image", obj(json!({}))),
        tool(
            "mixed",
            "Return text, image and resource link",
            obj(json!({})),
        ),
        tool(
            "env",
            "Return an environment variable",
            obj(json!({"name": {"type": "string"}})),
        ),
        tool("cwd", "Return the working directory", obj(json!({}))),
        tool(
            "client_info",
            "Return the raw initialize params",
            obj(json!({})),
        ),
        tool(
            "cancelled_ids",
            "Return the request ids of received cancellations",
            obj(json!({})),
        ),
        tool(
            "big_text",
            "Return a large text",
            obj(json!({"bytes": {"type": "integer"}})),
        ),
        json!({
            "name": "annotated",
            "title": "Annotated Tool",
            "description": "A tool with every optional listing field",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "properties": {"z": {"type": "number"}}},
            "annotations": {"readOnlyHint": true},
            "icons": [{"src": "https://example.test/i.png"}],
            "_meta": {"k": "v"}
        }),
        tool(
            "dots.and spaces",
            "A tool with an awkward name",
            obj(json!({})),
        ),
        tool(
            "ask_form",
            "Ask the user for a form (elicitation)",
            obj(json!({"message": {"type": "string"}})),
        ),
        tool(
            "ask_url",
            "Ask the user to visit a URL (elicitation)",
            obj(json!({"url": {"type": "string"}})),
        ),
        tool(
            "ask_twice",
            "Two form elicitations in a row",
            obj(json!({})),
        ),
        tool(
            "slow",
            "Sleep before answering",
            obj(json!({"ms": {"type": "integer"}})),
        ),
        tool(
            "crash",
            "Exit the server process",
            obj(json!({"code": {"type": "integer"}})),
        ),
        tool(
            "noisy",
            "Write noise to stderr",
            obj(json!({"kb": {"type": "integer"}})),
        ),
        tool("ping_client", "Ping the client", obj(json!({}))),
        tool(
            "unknown_request",
            "Send the client a request it does not support",
            obj(json!({})),
        ),
        tool(
            "notify_then_echo",
            "Send a log notification, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool("pid", "Return the server's process id", obj(json!({}))),
        tool(
            "spawn_child",
            "Spawn a `sleep 1000` grandchild in our process group; return its pid",
            obj(json!({})),
        ),
        tool(
            "junk_then_echo",
            "Write non-JSON and non-message lines to stdout, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "unknown_id_then_echo",
            "Write responses for ids never used, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "stderr_lines",
            "Write n numbered lines to stderr, then answer ok",
            obj(json!({"n": {"type": "integer"}})),
        ),
        tool(
            "sleep_then_crash",
            "In the background: sleep ms, then exit without answering",
            obj(json!({"ms": {"type": "integer"}, "code": {"type": "integer"}})),
        ),
        tool(
            "elicit_then_slow",
            "Form elicitation, then sleep ms, then return the answer",
            obj(json!({"ms": {"type": "integer"}})),
        ),
    ]
}

/// The tools listed only with `--hardening-tools` (callable either way), so
/// the default listing stays as it was.
fn hardening_tools() -> Vec<Value> {
    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }
    fn tool(name: &str, description: &str, schema: Value) -> Value {
        json!({"name": name, "description": description, "inputSchema": schema})
    }
    vec![
        tool(
            "flood_notifications",
            "Send n notifications/message lines, then answer",
            obj(json!({"n": {"type": "integer"}})),
        ),
        tool(
            "answer_twice",
            "Answer the same request id twice (text, then text + ' (again)')",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "ask_many",
            "Send n form elicitations at once; return how many were accepted",
            obj(json!({"n": {"type": "integer"}})),
        ),
        tool(
            "partial_then_echo",
            "Echo, with the response line written in pieces with pauses",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "bad_utf8_then_echo",
            "A response for this id that is not UTF-8, then echo",
            obj(json!({"text": {"type": "string"}})),
        ),
        tool(
            "crash_mid_line",
            "Write half a response line, then exit",
            obj(json!({"code": {"type": "integer"}})),
        ),
    ]
}

/// Each tool pre-serialized as compact JSON.
fn build_tool_list(extra: usize) -> Vec<Vec<u8>> {
    let mut tools = base_tools();
    if opts().hardening_tools {
        tools.extend(hardening_tools());
    }
    let mut out: Vec<Vec<u8>> = tools
        .iter()
        .map(|t| serde_json::to_vec(t).unwrap_or_default())
        .collect();
    out.reserve(extra);
    for i in 0..extra {
        let mut b = Vec::with_capacity(96);
        b.extend_from_slice(b"{\"name\":\"");
        b.extend_from_slice(extra_tool_name(i).as_bytes());
        b.extend_from_slice(b"\",\"description\":\"extra tool ");
        b.extend_from_slice(i.to_string().as_bytes());
        b.extend_from_slice(b"\",\"inputSchema\":{\"type\":\"object\"}}");
        out.push(b);
    }
    out
}

fn extra_tool_name(i: usize) -> String {
    format!("t{i:04}")
}

fn is_extra_tool(name: &str) -> bool {
    let Some(digits) = name.strip_prefix('t') else {
        return false;
    };
    if digits.len() < 4 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    match digits.parse::<usize>() {
        Ok(i) => i < opts().extra_tools && extra_tool_name(i) == name,
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------
// Literal results
// ---------------------------------------------------------------------------

const STRUCTURED_RESULT: &str = r#"{"content":[{"type":"text","text":"ignored when structured"}],"structuredContent":{"zeta":1.50,"alpha":"é😀","big":123456789012345678901234567890,"nested":{"b":[true,null],"a":1e2}}}"#;
const FAIL_RESULT: &str = r#"{"content":[{"type":"text","text":"first problem"},{"type":"text","text":"  "},{"type":"text","text":"second problem"}],"isError":true}"#;
const IMAGE_RESULT: &str =
    r#"{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}"#;
const MIXED_RESULT: &str = r#"{"content":[{"type":"text","text":"see attached"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"resource_link","uri":"file:///tmp/x.txt","name":"x.txt"}]}"#;
/// Lines a client must skip: not JSON, truncated JSON, invalid UTF-8, and a
/// JSON value that is not a message.
const JUNK_LINES: &[u8] = b"this is not json\n{\"truncated\":\n\xff\xfe{}\n[1,2,3]\n";
/// Responses for request ids the client never used.
const UNKNOWN_ID_LINES: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":987654321,\"result\":{}}\n\
{\"jsonrpc\":\"2.0\",\"id\":\"not-ours\",\"result\":{}}\n";
const LOG_NOTIFICATION: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hello\"}}\n";

// ---------------------------------------------------------------------------
// Main loop state
// ---------------------------------------------------------------------------

struct Server {
    /// Raw text of the last initialize `params` received.
    init_params: Option<String>,
    /// Raw (compact) JSON of each cancelled requestId, in arrival order.
    cancelled: Vec<String>,
    tools: Option<Vec<Vec<u8>>>,
    buf: Vec<u8>,
    /// Set once stdout is closed (`--stdout-close-after-init`): every later
    /// input line is discarded unread.
    discard: bool,
}

impl Server {
    fn handle_line(&mut self, line: &[u8]) {
        let msg: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(_) => {
                eprintln!("fixture: bad line");
                return;
            }
        };
        let Value::Object(mut obj) = msg else {
            eprintln!("fixture: bad line");
            return;
        };
        let method = match obj.get_mut("method") {
            Some(Value::String(m)) => Some(std::mem::take(m)),
            Some(_) => {
                if let Some(id) = obj.get("id") {
                    send_error(&mut self.buf, id, -32600, "Invalid Request");
                } else {
                    eprintln!("fixture: bad line");
                }
                return;
            }
            None => None,
        };
        match (method, obj.contains_key("id")) {
            (Some(method), true) => {
                let id = obj.get_mut("id").map(Value::take).unwrap_or(Value::Null);
                let params = obj.get_mut("params").map(Value::take);
                self.handle_request(&method, id, params, line);
            }
            (Some(method), false) => {
                let params = obj.get_mut("params").map(Value::take);
                self.handle_notification(&method, params);
            }
            (None, true) => route_response(Value::Object(obj)),
            (None, false) => eprintln!("fixture: message with neither method nor id"),
        }
    }

    fn handle_notification(&mut self, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => {
                let o = opts();
                if let Some(code) = o.exit_after_init {
                    eprintln!("fixture: bye");
                    process::exit(code);
                }
            }
            "notifications/cancelled" => {
                let rid = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .map(Value::to_string)
                    .unwrap_or_else(|| "null".to_owned());
                self.cancelled.push(rid);
            }
            _ => {}
        }
    }

    /// `--stdout-close-after-init` / `--close-stdin-after-init` act once the client has its
    /// tool list (closing earlier would make the client's connect fail instead).
    fn after_list(&mut self) {
        let o = opts();
        if o.stdout_close_after_init {
            // SAFETY: closing a descriptor we own; the main thread
            // writes nothing more because `discard` is set.
            unsafe { libc::close(1) };
            self.discard = true;
            eprintln!("fixture: closed stdout");
        }
        if o.close_stdin_after_init {
            // SAFETY: the main thread (us) is the only stdin reader,
            // and it never reads again.
            unsafe { libc::close(0) };
            eprintln!("fixture: closed stdin");
            sleep_forever();
        }
        if o.stop_reading_after_init {
            eprintln!("fixture: no longer reading stdin");
            sleep_forever();
        }
    }

    fn handle_request(&mut self, method: &str, id: Value, params: Option<Value>, line: &[u8]) {
        match method {
            "tools/call" => self.tools_call(id, params),
            "ping" => send_raw_result(&mut self.buf, &id, "{}"),
            "tools/list" => {
                self.tools_list(&id, params.as_ref());
                self.after_list();
            }
            "initialize" => self.initialize(&id, params.as_ref(), line),
            _ => send_error(&mut self.buf, &id, -32601, "Method not found"),
        }
    }

    fn initialize(&mut self, id: &Value, params: Option<&Value>, line: &[u8]) {
        let o = opts();
        if let Some(code) = o.exit_on_init {
            eprintln!("fixture: refusing to initialize");
            process::exit(code);
        }
        self.init_params = Some(match raw_member(line, "params") {
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
        let result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": o.name, "version": "1.0.0"}
        });
        send_value_result(&mut self.buf, id, &result);
    }

    fn tools_list(&mut self, id: &Value, params: Option<&Value>) {
        let o = opts();
        if o.silent_tool_list {
            return;
        }
        if o.no_tools_list {
            send_error(&mut self.buf, id, -32603, "tools/list exploded");
            return;
        }
        let tools = self
            .tools
            .get_or_insert_with(|| build_tool_list(o.extra_tools));
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
                        send_error(&mut self.buf, id, -32602, "Invalid cursor");
                        return;
                    }
                },
                Some(_) => {
                    send_error(&mut self.buf, id, -32602, "Invalid cursor");
                    return;
                }
            };
            let end = start.saturating_add(size).min(total);
            (start, end, (end < total).then(|| end.to_string()))
        } else {
            (0, total, None)
        };
        let buf = &mut self.buf;
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
        end_result(buf);
    }

    fn tools_call(&mut self, id: Value, params: Option<Value>) {
        let mut params = params.unwrap_or(Value::Null);
        let name = match params.get_mut("name") {
            Some(Value::String(s)) => std::mem::take(s),
            _ => {
                send_error(
                    &mut self.buf,
                    &id,
                    -32602,
                    "Invalid params: missing tool name",
                );
                return;
            }
        };
        let args = params
            .get_mut("arguments")
            .map(Value::take)
            .unwrap_or(Value::Null);
        let buf = &mut self.buf;
        match name.as_str() {
            "echo" => echo(buf, &id, &args),
            "add" => match add_numbers(&args) {
                Ok(text) => send_text(buf, &id, &text, false),
                Err(e) => send_text(buf, &id, e, true),
            },
            "structured" => send_raw_result(buf, &id, STRUCTURED_RESULT),
            "fail" => send_raw_result(buf, &id, FAIL_RESULT),
            "image" => send_raw_result(buf, &id, IMAGE_RESULT),
            "mixed" => send_raw_result(buf, &id, MIXED_RESULT),
            "env" => match arg_str(&args, "name") {
                Some(var) => {
                    let value = std::env::var_os(var)
                        .map(|v| v.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "<unset>".to_owned());
                    send_text(buf, &id, &value, false);
                }
                None => send_text(buf, &id, "env: missing string argument 'name'", true),
            },
            "cwd" => match std::env::current_dir() {
                Ok(dir) => send_text(buf, &id, &dir.to_string_lossy(), false),
                Err(e) => send_text(buf, &id, &format!("cwd: {e}"), true),
            },
            "client_info" => {
                let text = self.init_params.as_deref().unwrap_or("null");
                send_text(buf, &id, text, false);
            }
            "cancelled_ids" => {
                let text = format!("[{}]", self.cancelled.join(","));
                send_text(buf, &id, &text, false);
            }
            "big_text" => match arg_u64(&args, "bytes").and_then(|n| usize::try_from(n).ok()) {
                Some(n) => {
                    begin_result(buf, &id);
                    buf.reserve(n + 64);
                    buf.extend_from_slice(b"{\"content\":[{\"type\":\"text\",\"text\":\"");
                    buf.resize(buf.len() + n, b'x');
                    buf.extend_from_slice(b"\"}]}");
                    end_result(buf);
                    // Don't keep a huge buffer around for the next echo.
                    if buf.capacity() > (1 << 20) {
                        *buf = Vec::with_capacity(4096);
                    }
                }
                None => send_text(buf, &id, "big_text: missing integer argument 'bytes'", true),
            },
            "annotated" => send_text(buf, &id, "annotated ok", false),
            "dots.and spaces" => send_text(buf, &id, "weird ok", false),
            "crash" => {
                let code = args.get("code").and_then(Value::as_i64).unwrap_or(3);
                crash_with(code);
            }
            "noisy" => match arg_u64(&args, "kb") {
                Some(kb) => {
                    write_noise(kb.saturating_mul(1024));
                    send_text(buf, &id, "noisy done", false);
                }
                None => send_text(buf, &id, "noisy: missing integer argument 'kb'", true),
            },
            "notify_then_echo" => {
                emit(LOG_NOTIFICATION);
                echo(buf, &id, &args);
            }
            "pid" => send_text(buf, &id, &process::id().to_string(), false),
            "spawn_child" => match spawn_sleeper() {
                Ok(pid) => send_text(buf, &id, &pid.to_string(), false),
                Err(e) => send_text(buf, &id, &format!("spawn_child: {e}"), true),
            },
            "junk_then_echo" => {
                emit(JUNK_LINES);
                echo(buf, &id, &args);
            }
            "unknown_id_then_echo" => {
                emit(UNKNOWN_ID_LINES);
                echo(buf, &id, &args);
            }
            "flood_notifications" => match arg_u64(&args, "n") {
                Some(n) => {
                    flood_notifications(n);
                    send_text(buf, &id, &format!("flooded {n}"), false);
                }
                None => send_text(
                    buf,
                    &id,
                    "flood_notifications: missing integer argument 'n'",
                    true,
                ),
            },
            "answer_twice" => {
                let text = arg_str(&args, "text").unwrap_or("");
                send_text(buf, &id, text, false);
                send_text(buf, &id, &format!("{text} (again)"), false);
            }
            "bad_utf8_then_echo" => {
                // A response for this very id whose text is not UTF-8, then the real one.
                begin_result(buf, &id);
                buf.extend_from_slice(
                    b"{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe utf8\"}]}",
                );
                end_result(buf);
                echo(buf, &id, &args);
            }
            "crash_mid_line" => {
                let code = args.get("code").and_then(Value::as_i64).unwrap_or(3);
                begin_result(buf, &id);
                buf.extend_from_slice(b"{\"content\":[{\"type\":\"te");
                {
                    let _guard = OUT.lock().unwrap_or_else(|e| e.into_inner());
                    let mut out = io::stdout().lock();
                    let _ = out.write_all(buf).and_then(|()| out.flush());
                }
                eprintln!("fixture: crashing mid-line with {code}");
                process::exit(code as i32);
            }
            "stderr_lines" => match arg_u64(&args, "n") {
                Some(n) => {
                    write_stderr_lines(n);
                    send_text(buf, &id, "ok", false);
                }
                None => send_text(buf, &id, "stderr_lines: missing integer argument 'n'", true),
            },
            "sleep_then_crash" => match arg_u64(&args, "ms") {
                Some(ms) => {
                    let code = args.get("code").and_then(Value::as_i64).unwrap_or(3);
                    thread::spawn(move || {
                        thread::sleep(Duration::from_millis(ms));
                        crash_with(code);
                    });
                }
                None => send_text(
                    buf,
                    &id,
                    "sleep_then_crash: missing integer argument 'ms'",
                    true,
                ),
            },
            n if is_blocking_tool(n) => {
                let id_copy = id.clone();
                let spawned = thread::Builder::new()
                    .name(format!("tool-{name}"))
                    .spawn(move || run_blocking_tool(id, &name, args));
                if let Err(e) = spawned {
                    send_error(buf, &id_copy, -32603, &format!("spawn failed: {e}"));
                }
            }
            n if is_extra_tool(n) => send_text(buf, &id, &format!("{n} ok"), false),
            n => send_error(buf, &id, -32602, &format!("Unknown tool: {n}")),
        }
    }
}

/// Grandchildren from `spawn_child`. Never waited on or dropped.
static CHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

/// Spawn `sleep 1000` in our own process group with null stdio; return its pid.
fn spawn_sleeper() -> io::Result<u32> {
    let child = Command::new("sleep")
        .arg("1000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id();
    CHILDREN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(child);
    Ok(pid)
}

/// Write `n` `notifications/message` lines (one buffered write per 64 KiB,
/// under the stdout lock, so they are whole lines).
fn flood_notifications(n: u64) {
    let _guard = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    for i in 1..=n {
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"flood {i}\"}}}}\n"
        );
        if out.write_all(line.as_bytes()).is_err() {
            process::exit(0);
        }
    }
    if out.flush().is_err() {
        process::exit(0);
    }
}

/// Write `stderr line 1` … `stderr line <n>` to stderr.
fn write_stderr_lines(n: u64) {
    let mut err = io::BufWriter::with_capacity(64 * 1024, io::stderr().lock());
    for i in 1..=n {
        if writeln!(err, "stderr line {i}").is_err() {
            return;
        }
    }
    let _ = err.flush();
}

fn sleep_forever() -> ! {
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

fn echo(buf: &mut Vec<u8>, id: &Value, args: &Value) {
    match arg_str(args, "text") {
        Some(text) => send_text(buf, id, text, false),
        None => send_text(buf, id, "echo: missing string argument 'text'", true),
    }
}

/// Write our pid (no newline) to `path`, atomically via a rename.
fn write_pid_file(path: &str) {
    let tmp = format!("{path}.tmp{}", process::id());
    let written =
        std::fs::write(&tmp, process::id().to_string()).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        eprintln!("fixture: cannot write pid file {path:?}: {e}");
        process::exit(2);
    }
}

/// stdin reached EOF (or failed): exit 0, unless told to linger.
fn stdin_ended(server: &Server) -> ! {
    if opts().ignore_stdin_eof || server.discard {
        sleep_forever();
    }
    if let Some(ms) = opts().stdout_outlives_exit_ms {
        use std::os::unix::process::CommandExt;
        // A `sleep` in its own process group keeps our stdout open: the client reads EOF only
        // after this process is gone (and reaped), and the group kill does not reach it.
        let spawned = Command::new("sleep")
            .arg(format!("{}.{:03}", ms / 1000, ms % 1000))
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        if let Err(e) = spawned {
            eprintln!("fixture: cannot start sleep: {e}");
        }
    }
    process::exit(0);
}

fn main() {
    let o = OPTS.get_or_init(parse_opts);
    if o.ignore_sigterm {
        // SAFETY: installing SIG_IGN runs no handler code.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    }
    // After the signal setup: once the file exists, SIGTERM is already ignored.
    if let Some(path) = &o.print_pid_file {
        write_pid_file(path);
    }
    if o.stderr_flood_mb > 0 {
        let bytes = o.stderr_flood_mb.saturating_mul(1 << 20);
        thread::spawn(move || write_noise(bytes));
    }

    let mut server = Server {
        init_params: None,
        cancelled: Vec::new(),
        tools: None,
        buf: Vec::with_capacity(4096),
        discard: false,
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut line: Vec<u8> = Vec::with_capacity(4096);
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => stdin_ended(&server),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("fixture: stdin error: {e}");
                stdin_ended(&server);
            }
        }
        if server.discard {
            continue;
        }
        let start = skip_ws(&line, 0);
        if start == line.len() {
            continue; // blank line
        }
        server.handle_line(&line[start..]);
        if line.capacity() > (1 << 20) {
            line = Vec::with_capacity(4096);
        }
    }
}
