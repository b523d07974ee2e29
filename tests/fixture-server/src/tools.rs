//! The tools: `tools/call` for both transports.

use crate::listing::is_extra_tool;
use crate::out::{
    begin_result, end_result, put_str, send_error, send_raw_result, send_text, server_request,
    split_response, Out,
};
use crate::proto::State;
use crate::util::{add_numbers, arg_str, arg_u64};
use serde_json::{json, Value};
use std::io::{self, Write};
use std::process::{self, Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

static NEXT_ELICITATION: AtomicU64 = AtomicU64::new(1);

// ---------------------------------------------------------------------------
// stderr noise
// ---------------------------------------------------------------------------

/// Writes the crash line and exits while holding stderr, so that a noise thread cannot bury the
/// line (tests read it as the last line of the stderr tail).
fn crash_with(code: i64) -> ! {
    let mut e = io::stderr().lock();
    let _ = writeln!(e, "fixture: crashing with {code}");
    let _ = e.flush();
    process::exit(code as i32)
}

/// Write about `bytes` bytes of 100-byte noise lines to stderr.
pub fn write_noise(bytes: u64) {
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

fn form_params(message: &str) -> Value {
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name"},
                "age": {"type": "integer", "default": 30},
                "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
                "subscribe": {"type": "boolean"}
            },
            "required": ["name"]
        }
    })
}

fn elicit_form(out: &dyn Out, message: &str) -> Result<Value, Value> {
    let params = form_params(message);
    split_response(server_request(out, "elicitation/create", Some(&params)))
}

/// `ask_unrelated`: a form elicitation tied to no client request. Over HTTP it
/// goes only on the standalone GET stream; when none is open it is dropped,
/// and after `wait_ms` (default 10000) the tool answers with an error.
fn ask_unrelated(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, args: &Value) {
    let message = arg_str(args, "message").unwrap_or("Unrelated question");
    let params = form_params(message);
    match out.unrelated_request("elicitation/create", Some(&params)) {
        Some(rx) => {
            let reply = rx.recv().unwrap_or(Value::Null);
            send_elicitation_outcome(out, buf, id, split_response(reply));
        }
        None => {
            let wait_ms = arg_u64(args, "wait_ms").unwrap_or(10_000);
            thread::sleep(Duration::from_millis(wait_ms));
            let text = "elicitation dropped: no standalone GET stream";
            send_text(out, buf, id, text, true);
        }
    }
}

/// `ask_many`: n form elicitations written back to back (all outstanding at
/// once), then every answer awaited. Text: `accepted K of N`.
fn ask_many(out: &dyn Out, n: u64) -> String {
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
            out.request("elicitation/create", Some(&params))
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

fn elicit_url(out: &dyn Out, url: &str) -> Result<Value, Value> {
    let n = NEXT_ELICITATION.fetch_add(1, Ordering::Relaxed);
    let params = json!({
        "mode": "url",
        "message": "Please authorize",
        "url": url,
        "elicitationId": format!("el-{n}"),
    });
    split_response(server_request(out, "elicitation/create", Some(&params)))
}

fn send_elicitation_outcome(
    out: &dyn Out,
    buf: &mut Vec<u8>,
    id: &Value,
    outcome: Result<Value, Value>,
) {
    match outcome {
        Ok(result) => send_text(out, buf, id, &result.to_string(), false),
        Err(error) => send_text(out, buf, id, &format!("elicitation error: {error}"), true),
    }
}

/// The blocking tools: on their own thread in stdio mode, on the connection's
/// thread in HTTP mode.
fn run_blocking_tool(out: &dyn Out, id: Value, name: &str, args: Value) {
    let mut buf = Vec::with_capacity(256);
    let buf = &mut buf;
    match name {
        "ask_form" => {
            let msg = arg_str(&args, "message").unwrap_or("Who are you?");
            let outcome = match args.get("schema") {
                // An optional requestedSchema (unlisted, so the listing stays as it was).
                Some(schema) => {
                    let mut params = form_params(msg);
                    params["requestedSchema"] = schema.clone();
                    split_response(server_request(out, "elicitation/create", Some(&params)))
                }
                None => elicit_form(out, msg),
            };
            send_elicitation_outcome(out, buf, &id, outcome);
        }
        "ask_url" => {
            let url = arg_str(&args, "url").unwrap_or("https://example.test/auth");
            send_elicitation_outcome(out, buf, &id, elicit_url(out, url));
        }
        "ask_twice" => {
            let first = match elicit_form(out, "first?") {
                Ok(r) => r,
                Err(e) => return send_elicitation_outcome(out, buf, &id, Err(e)),
            };
            let outcome = elicit_form(out, "second?").map(|second| json!([first, second]));
            send_elicitation_outcome(out, buf, &id, outcome);
        }
        "slow" => match arg_u64(&args, "ms") {
            Some(ms) => {
                thread::sleep(Duration::from_millis(ms));
                send_text(out, buf, &id, &format!("slept {ms}"), false);
            }
            None => send_text(out, buf, &id, "slow: missing integer argument 'ms'", true),
        },
        "ping_client" => {
            let reply = server_request(out, "ping", None);
            send_text(out, buf, &id, &reply.to_string(), false);
        }
        "unknown_request" => {
            let params = json!({"messages": [], "maxTokens": 1});
            let reply = server_request(out, "sampling/createMessage", Some(&params));
            send_text(out, buf, &id, &reply.to_string(), false);
        }
        "elicit_then_slow" => match arg_u64(&args, "ms") {
            Some(ms) => {
                let outcome = elicit_form(out, "Who are you?");
                thread::sleep(Duration::from_millis(ms));
                send_elicitation_outcome(out, buf, &id, outcome);
            }
            None => send_text(
                out,
                buf,
                &id,
                "elicit_then_slow: missing integer argument 'ms'",
                true,
            ),
        },
        "ask_many" => match arg_u64(&args, "n") {
            Some(n) => send_text(out, buf, &id, &ask_many(out, n), false),
            None => send_text(
                out,
                buf,
                &id,
                "ask_many: missing integer argument 'n'",
                true,
            ),
        },
        "partial_then_echo" => {
            // The whole response, written in 4 pieces with pauses (one line overall).
            let text = arg_str(&args, "text").unwrap_or("");
            begin_result(buf, &id);
            buf.extend_from_slice(b"{\"content\":[{\"type\":\"text\",\"text\":");
            put_str(buf, text);
            buf.extend_from_slice(b"}]}}\n");
            out.respond_in_pieces(buf);
        }
        "ask_unrelated" => ask_unrelated(out, buf, &id, &args),
        _ => send_error(out, buf, &id, -32603, "not a blocking tool"),
    }
}

pub fn is_blocking_tool(name: &str) -> bool {
    matches!(
        name,
        "ask_form"
            | "ask_unrelated"
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

/// A tool call that blocks: the caller decides where it runs ([`run`]).
pub struct Blocking {
    pub id: Value,
    pub name: String,
    pub args: Value,
    /// The request's `_meta.progressToken`.
    pub progress_token: Option<Value>,
    /// Served in the modern era: results carry `resultType`.
    pub modern: bool,
}

/// Run a blocking tool.
pub fn run(out: &dyn Out, b: Blocking) {
    let complete = crate::modern::Complete::new(out, false);
    let out: &dyn Out = if b.modern { &complete } else { out };
    if b.name == "__tasks_result" {
        return crate::tasks::result(out, &b.id, &b.args);
    }
    if b.name == crate::resources::BLOCKING_READ {
        return crate::resources::run(out, &b);
    }
    if b.name == crate::prompts::BLOCKING_GET {
        return crate::prompts::run(out, &b);
    }
    if b.name == "slow_progress" {
        return crate::mrtr::slow_progress(out, &b.id, &b.args, b.progress_token.as_ref());
    }
    run_blocking_tool(out, b.id, &b.name, b.args);
}

/// `tools/call`: fast tools are answered here; a blocking one is handed back.
pub fn tools_call(
    out: &dyn Out,
    state: &State,
    buf: &mut Vec<u8>,
    id: Value,
    params: Option<Value>,
) -> Option<Blocking> {
    let mut params = params.unwrap_or(Value::Null);
    let name = match params.get_mut("name") {
        Some(Value::String(s)) => std::mem::take(s),
        _ => {
            send_error(out, buf, &id, -32602, "Invalid params: missing tool name");
            return None;
        }
    };
    let args = params
        .get_mut("arguments")
        .map(Value::take)
        .unwrap_or(Value::Null);
    let progress_token = crate::modern::progress_token(Some(&params));
    if crate::live::enabled() && crate::live::call(out, buf, &id, &name, &args, &params) {
        return None;
    }
    if crate::opts().resources && crate::notify::call(out, state, buf, &id, &name, &args) {
        return None;
    }
    match name.as_str() {
        "echo" => echo(out, buf, &id, &args),
        "add" => match add_numbers(&args) {
            Ok(text) => send_text(out, buf, &id, &text, false),
            Err(e) => send_text(out, buf, &id, e, true),
        },
        "structured" => send_raw_result(out, buf, &id, STRUCTURED_RESULT),
        "fail" => send_raw_result(out, buf, &id, FAIL_RESULT),
        "image" => send_raw_result(out, buf, &id, IMAGE_RESULT),
        "mixed" => send_raw_result(out, buf, &id, MIXED_RESULT),
        "env" => match arg_str(&args, "name") {
            Some(var) => {
                let value = std::env::var_os(var)
                    .map(|v| v.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "<unset>".to_owned());
                send_text(out, buf, &id, &value, false);
            }
            None => send_text(out, buf, &id, "env: missing string argument 'name'", true),
        },
        "cwd" => match std::env::current_dir() {
            Ok(dir) => send_text(out, buf, &id, &dir.to_string_lossy(), false),
            Err(e) => send_text(out, buf, &id, &format!("cwd: {e}"), true),
        },
        "client_info" => {
            let init = state.init_params.lock().unwrap_or_else(|e| e.into_inner());
            send_text(out, buf, &id, init.as_deref().unwrap_or("null"), false);
        }
        "cancelled_ids" => {
            let cancelled = state.cancelled.lock().unwrap_or_else(|e| e.into_inner());
            let text = format!("[{}]", cancelled.join(","));
            send_text(out, buf, &id, &text, false);
        }
        "big_text" => match arg_u64(&args, "bytes").and_then(|n| usize::try_from(n).ok()) {
            Some(n) => {
                begin_result(buf, &id);
                buf.reserve(n + 64);
                buf.extend_from_slice(b"{\"content\":[{\"type\":\"text\",\"text\":\"");
                buf.resize(buf.len() + n, b'x');
                buf.extend_from_slice(b"\"}]}");
                end_result(out, buf);
                // Don't keep a huge buffer around for the next echo.
                if buf.capacity() > (1 << 20) {
                    *buf = Vec::with_capacity(4096);
                }
            }
            None => send_text(
                out,
                buf,
                &id,
                "big_text: missing integer argument 'bytes'",
                true,
            ),
        },
        "annotated" => send_text(out, buf, &id, "annotated ok", false),
        "dots.and spaces" => send_text(out, buf, &id, "weird ok", false),
        "crash" => {
            let code = args.get("code").and_then(Value::as_i64).unwrap_or(3);
            crash_with(code);
        }
        "noisy" => match arg_u64(&args, "kb") {
            Some(kb) => {
                write_noise(kb.saturating_mul(1024));
                send_text(out, buf, &id, "noisy done", false);
            }
            None => send_text(out, buf, &id, "noisy: missing integer argument 'kb'", true),
        },
        "notify_then_echo" => {
            out.emit(LOG_NOTIFICATION);
            echo(out, buf, &id, &args);
        }
        "pid" => send_text(out, buf, &id, &process::id().to_string(), false),
        "spawn_child" => match spawn_sleeper() {
            Ok(pid) => send_text(out, buf, &id, &pid.to_string(), false),
            Err(e) => send_text(out, buf, &id, &format!("spawn_child: {e}"), true),
        },
        "junk_then_echo" => {
            out.emit(JUNK_LINES);
            echo(out, buf, &id, &args);
        }
        "unknown_id_then_echo" => {
            out.emit(UNKNOWN_ID_LINES);
            echo(out, buf, &id, &args);
        }
        "flood_notifications" => match arg_u64(&args, "n") {
            Some(n) => {
                flood_notifications(out, n);
                send_text(out, buf, &id, &format!("flooded {n}"), false);
            }
            None => send_text(
                out,
                buf,
                &id,
                "flood_notifications: missing integer argument 'n'",
                true,
            ),
        },
        "answer_twice" => {
            let text = arg_str(&args, "text").unwrap_or("");
            send_text(out, buf, &id, text, false);
            send_text(out, buf, &id, &format!("{text} (again)"), false);
        }
        "bad_utf8_then_echo" => {
            // A response for this very id whose text is not UTF-8, then the real one.
            begin_result(buf, &id);
            buf.extend_from_slice(
                b"{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe utf8\"}]}",
            );
            end_result(out, buf);
            echo(out, buf, &id, &args);
        }
        "crash_mid_line" => {
            let code = args.get("code").and_then(Value::as_i64).unwrap_or(3);
            begin_result(buf, &id);
            buf.extend_from_slice(b"{\"content\":[{\"type\":\"te");
            out.respond_truncated(buf);
            eprintln!("fixture: crashing mid-line with {code}");
            process::exit(code as i32);
        }
        "stderr_lines" => match arg_u64(&args, "n") {
            Some(n) => {
                write_stderr_lines(n);
                send_text(out, buf, &id, "ok", false);
            }
            None => send_text(
                out,
                buf,
                &id,
                "stderr_lines: missing integer argument 'n'",
                true,
            ),
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
                out,
                buf,
                &id,
                "sleep_then_crash: missing integer argument 'ms'",
                true,
            ),
        },
        n if is_blocking_tool(n) || (n == "slow_progress" && crate::modern::enabled()) => {
            return Some(Blocking {
                id,
                name,
                args,
                progress_token,
                modern: false,
            })
        }
        n if crate::mrtr::is_mrtr_tool(n) && crate::modern::enabled() => {
            let text = format!("{n} needs the {} era", crate::modern::VERSION);
            send_text(out, buf, &id, &text, true);
        }
        n if is_extra_tool(n) => send_text(out, buf, &id, &format!("{n} ok"), false),
        n => send_error(out, buf, &id, -32602, &format!("Unknown tool: {n}")),
    }
    None
}

/// Grandchildren from `spawn_child`. Never waited on or dropped.
static CHILDREN: Mutex<Vec<Child>> = Mutex::new(Vec::new());

/// Spawn `sleep 1000` in our own process group with null stdio; return its pid.
fn spawn_sleeper() -> io::Result<u32> {
    #[cfg(unix)]
    let mut cmd = Command::new("sleep");
    // Windows has no `sleep`: this program again, told to sleep.
    #[cfg(windows)]
    let mut cmd = Command::new(std::env::current_exe()?);
    #[cfg(windows)]
    cmd.arg("--sleep");
    let child = cmd
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

/// Write `n` `notifications/message` lines (one write per 64 KiB of whole lines).
fn flood_notifications(out: &dyn Out, n: u64) {
    let mut block = Vec::with_capacity(64 * 1024 + 256);
    for i in 1..=n {
        let _ = writeln!(
            block,
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"flood {i}\"}}}}"
        );
        if block.len() >= 64 * 1024 {
            out.emit(&block);
            block.clear();
        }
    }
    if !block.is_empty() {
        out.emit(&block);
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

fn echo(out: &dyn Out, buf: &mut Vec<u8>, id: &Value, args: &Value) {
    match arg_str(args, "text") {
        Some(text) => send_text(out, buf, id, text, false),
        None => send_text(out, buf, id, "echo: missing string argument 'text'", true),
    }
}
