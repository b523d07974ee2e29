//! `toolnexus watch`: connects a config, prints each server's status, then every
//! event of the client as it comes (a server connected, restarting, failed; its tool list
//! changed; its log messages) until Ctrl-C or SIGTERM, then disconnects (no child is left).
//! It calls no tool, so there is no resolver: nothing can ask a question.

use crate::{read_config, status_line, Fail};
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolnexus::Client;

/// How often the loop looks at the stop flag while no event comes.
const TICK: Duration = Duration::from_millis(100);
/// Events printed late at most before the library's event thread waits for the terminal.
const EVENTS_AHEAD: usize = 256;

pub(crate) fn run(config: &PathBuf, json: bool) -> Result<ExitCode, Fail> {
    // Caught before connecting: a Ctrl-C while servers start ends the watch once they have.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| Fail(format!("cannot catch signal {sig}: {e}")))?;
    }
    let text = read_config(config)?;
    let client = Client::connect(&text, None)
        .map_err(|e| Fail(format!("{}: {}", config.display(), Fail::from(e).0)))?;
    // Printing happens here. A terminal that does not keep up fills this channel, then holds
    // up the library's event thread, never a reader: the library's own bounded queue drops
    // and counts what comes meanwhile (`droppedEvents` in the status).
    let (tx, rx) = mpsc::sync_channel::<String>(EVENTS_AHEAD);
    let registered = client.set_event_callback(Some(Arc::new(move |e: &str| {
        let _ = tx.send(e.to_string());
    })));
    if registered.is_ok() {
        print_until_stopped(&client, &rx, &stop, json);
    }
    // First: a callback blocked on a full channel returns at once, so removing it cannot wait.
    drop(rx);
    let _ = client.set_event_callback(None);
    client.close_begin();
    client.close_finish();
    registered.map_err(Fail::from).map(|()| ExitCode::SUCCESS)
}

/// The statuses, then each event, until `stop` is set or stdout is closed (`watch | head`
/// ends like Ctrl-C).
fn print_until_stopped(
    client: &Client,
    rx: &mpsc::Receiver<String>,
    stop: &AtomicBool,
    json: bool,
) {
    // After registering, so that a change between connect and now shows in one or the other.
    let statuses = client.statuses_json();
    let mut lines = Vec::new();
    if json {
        lines.push(statuses);
    } else {
        let v: Value = serde_json::from_str(&statuses).unwrap_or(Value::Null);
        let servers = v.get("servers").and_then(Value::as_object);
        if servers.is_none_or(|s| s.is_empty()) {
            lines.push(format!("{} (no servers in the config)", clock()));
        }
        for (name, s) in servers.into_iter().flatten() {
            lines.push(format!("{} {}", clock(), status_line(name, s)));
        }
    }
    let mut stdout = std::io::stdout().lock();
    for l in lines {
        if writeln!(stdout, "{l}").is_err() {
            return;
        }
    }
    drop(stdout);
    while !stop.load(Ordering::Relaxed) {
        let event = match rx.recv_timeout(TICK) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let line = if json {
            event
        } else {
            format!("{} {}", clock(), describe(client, &event))
        };
        if writeln!(std::io::stdout().lock(), "{line}").is_err() {
            break;
        }
    }
}

/// One event as a line: `fx: restarting (attempt 1, in 500 ms): why`, `fx: tools changed:
/// added a, b; removed c`, `fx: log error [db]: text`.
fn describe(client: &Client, event: &str) -> String {
    let Ok(Value::Object(e)) = serde_json::from_str::<Value>(event) else {
        return printable(event);
    };
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
    let server = s("server");
    let line = match s("type") {
        "status" => match s("status") {
            "connected" => {
                // The status now says how many tools and which protocol.
                let all: Value = serde_json::from_str(&client.statuses_json()).unwrap_or_default();
                let mut l = match all.pointer(&format!("/servers/{}", pointer_escape(server))) {
                    Some(st) if st.get("status").and_then(Value::as_str) == Some("connected") => {
                        status_line(server, st)
                    }
                    _ => format!("{server}: connected"),
                };
                if let Some(n) = e.get("restarts").and_then(Value::as_u64).filter(|n| *n > 0) {
                    l.push_str(&format!(
                        " after {n} restart{}",
                        if n == 1 { "" } else { "s" }
                    ));
                }
                l
            }
            "restarting" => {
                let attempt = e.get("attempt").and_then(Value::as_u64).unwrap_or(0);
                let delay = e.get("delayMs").and_then(Value::as_u64).unwrap_or(0);
                format!(
                    "{server}: restarting (attempt {attempt}, in {delay} ms): {}",
                    s("reason")
                )
            }
            "failed" => format!("{server}: failed: {}", s("error")),
            other => format!("{server}: {other}"),
        },
        "tools" => {
            let mut parts = Vec::new();
            for key in ["added", "removed", "changed"] {
                let names: Vec<&str> = e
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if !names.is_empty() {
                    parts.push(format!("{key} {}", names.join(", ")));
                }
            }
            if parts.is_empty() {
                parts.push("re-listed, no change".into());
            }
            format!("{server}: tools changed: {}", parts.join("; "))
        }
        "log" => {
            let logger = e
                .get("logger")
                .and_then(Value::as_str)
                .map(|l| format!(" [{l}]"))
                .unwrap_or_default();
            let data = match e.get("data") {
                Some(Value::String(t)) => t.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            format!("{server}: log {}{logger}: {data}", s("level"))
        }
        _ => event.to_string(),
    };
    printable(&line)
}

/// A server's text made safe for a terminal: control characters (escape sequences, carriage
/// returns, line breaks inside one event) shown escaped, so one event stays one line.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `name` as one JSON-pointer token (RFC 6901 §4).
fn pointer_escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The time of day (UTC) as `HH:MM:SS.mmm`, the start of every human line.
fn clock() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let s = d.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        d.subsec_millis()
    )
}
