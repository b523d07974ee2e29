//! The `toolnexus` command end to end: `tools`, `call` (Ctrl-C on a task prints its resume token), `resume`, `status`, `skills`, `watch`, `resources`, `read`, `prompts`, `prompt`, `complete` against the fixture server
//! (target/debug/tn-fixture-server, or $TN_FIXTURE; `cargo build --workspace` builds it), a
//! question declined without a terminal, and `bridge` over every shared parity vector and every
//! provider vector. The terminal form itself is tested through a pty by scripts/test-dist.sh.

use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_toolnexus");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixture() -> PathBuf {
    let p = std::env::var_os("TN_FIXTURE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/debug/tn-fixture-server"));
    assert!(
        p.exists(),
        "no fixture server at {} (cargo build --workspace builds it)",
        p.display()
    );
    p
}

/// A temporary directory with an mcp.json: the fixture as `fx`, and a server that cannot start.
fn config_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tn-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = serde_json::json!({"mcpServers": {
        "fx": {"command": [fixture()]},
        "broken": {"command": ["/nonexistent/tn-no-such-server"]},
    }});
    std::fs::write(dir.join("mcp.json"), config.to_string()).unwrap();
    dir
}

/// Runs the command in `dir` with stdin from /dev/null (not a terminal).
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(EXE)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn tools_lists_every_tool_and_names_the_failed_server() {
    let dir = config_dir("tools");
    let out = run(&dir, &["tools"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.lines().any(|l| l.starts_with("fx_echo ")),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 29, "{stdout}");
    assert!(
        stderr.contains("`broken`") && stderr.contains("cannot start"),
        "{stderr}"
    );
    // --json is the library's listing; --for the provider shape; --config after the subcommand.
    let out = run(&dir, &["tools", "--json", "--config", "mcp.json"]);
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tools.len(), 29);
    assert_eq!(tools[0]["source"], "mcp");
    let out = run(
        &dir,
        &["--config", "mcp.json", "tools", "--for", "anthropic"],
    );
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        tools.iter().all(|t| t.get("input_schema").is_some()),
        "{tools:?}"
    );
    let out = run(&dir, &["tools", "--for", "cohere"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn call_prints_the_output_and_exits_nonzero_on_is_error() {
    let dir = config_dir("call");
    let out = run(&dir, &["call", "fx_echo", r#"{"text":"héllo 😀"}"#]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "héllo 😀\n");

    let out = run(&dir, &["call", "fx_fail"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("first problem"));

    let out = run(&dir, &["call", "fx_add", r#"{"a":2,"b":3}"#, "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (r["output"].as_str(), r["isError"].as_bool()),
        (Some("5"), Some(false))
    );

    let out = run(&dir, &["call", "broken_x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("TN_ERR_NOT_FOUND") && err.contains("`broken`"),
        "{err}"
    );

    let out = run(&dir, &["call", "fx_echo", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not JSON"));
}

#[test]
fn a_question_without_a_terminal_is_declined_with_a_message() {
    let dir = config_dir("decline");
    let out = run(&dir, &["call", "fx_ask_form"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"action\":\"decline\"}\n");
    let err = text(&out.stderr);
    assert!(
        err.contains("Who are you?") && err.contains("no terminal was available"),
        "{err}"
    );
}

#[test]
fn status_reports_each_server_and_exits_1_when_one_failed() {
    let dir = config_dir("status");
    let out = run(&dir, &["status"]);
    assert_eq!(out.status.code(), Some(1));
    let s = text(&out.stdout);
    assert!(s.contains("fx: connected (29 tools"), "{s}");
    assert!(
        s.contains("broken: failed: ") && s.contains("cannot start"),
        "{s}"
    );

    let out = run(&dir, &["status", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"]["fx"]["status"], "connected");

    std::fs::write(
        dir.join("ok.json"),
        serde_json::json!({"mcpServers": {"fx": {"command": [fixture()]}}}).to_string(),
    )
    .unwrap();
    let out = run(&dir, &["status", "-c", "ok.json"]);
    assert!(out.status.success(), "{}", text(&out.stdout));

    let out = run(&dir, &["status", "--config", "missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read the config missing.json"));
    std::fs::write(dir.join("bad.json"), "{").unwrap();
    let out = run(&dir, &["status", "--config", "bad.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.json"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn skills_lists_gets_a_verified_skill_and_refuses_a_tampered_one() {
    let dir = config_dir("skills");
    std::fs::write(
        dir.join("skills.json"),
        serde_json::json!({"mcpServers": {
            "fx": {"command": [fixture(), "--skills"]},
            "plain": {"command": [fixture()]},
        }})
        .to_string(),
    )
    .unwrap();
    let out = run(&dir, &["skills", "-c", "skills.json"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    // One line per listed skill of the one server that offers them; the invalid entry named.
    assert_eq!(stdout.lines().count(), 8, "{stdout}");
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .starts_with("fx  skill://pdf-processing/SKILL.md ")
            && stdout.contains("Extract, fill, and assemble PDF documents"),
        "{stdout}"
    );
    assert!(
        stderr.contains("skill `skill://broken/SKILL.md` is not listed"),
        "{stderr}"
    );
    let out = run(&dir, &["skills", "--json", "-c", "skills.json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"].as_object().unwrap().len(), 1, "{v}");

    let pdf = "skill://pdf-processing/SKILL.md";
    let out = run(&dir, &["skills", "-c", "skills.json", "get", "fx", pdf]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("---\nname: pdf-processing\n"));
    let out = run(
        &dir,
        &[
            "skills",
            "-c",
            "skills.json",
            "read",
            "fx",
            pdf,
            "references/FORMS.md",
        ],
    );
    assert_eq!(text(&out.stdout), "Supporting content.\n");
    let out = run(
        &dir,
        &[
            "skills",
            "-c",
            "skills.json",
            "read",
            "fx",
            pdf,
            "assets/logo.png",
        ],
    );
    assert_eq!(out.stdout, b"\x89PNG\r\n\x1a\n\x00\x01\xfe\xff");

    let out = run(
        &dir,
        &[
            "skills",
            "-c",
            "skills.json",
            "get",
            "fx",
            "skill://tampered-digest/SKILL.md",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "nothing of a refused skill is printed"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("is refused: digest mismatch") && err.contains("TN_ERR_NOT_FOUND"),
        "{err}"
    );
    let out = run(&dir, &["skills", "-c", "skills.json", "get", "plain", pdf]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("server `plain` offers no skills"));
}

/// Feeds `lines` to `toolnexus bridge`; returns one output line per input line.
fn bridge(lines: &[String]) -> Vec<String> {
    let mut child = Command::new(EXE)
        .arg("bridge")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = lines.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    let got: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(got.len(), lines.len(), "one output line per input line");
    got
}

/// Replaces each Request id (`elc-<base36>-<n>`, checked) with `<ID>`.
fn normalize_ids(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\"elc-") {
        out.push_str(&rest[..=i]);
        let tail = &rest[i + 1..];
        let end = tail.find('"').expect("an unterminated id");
        let id = &tail[..end];
        let parts: Vec<&str> = id.splitn(3, '-').collect();
        let ok = parts.len() == 3
            && !parts[1].is_empty()
            && parts[1]
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
            && parts[2].bytes().all(|b| b.is_ascii_digit())
            && !parts[2].starts_with('0')
            && !parts[2].is_empty();
        assert!(ok, "a Request id not of the form elc-<base36>-<n>: {id}");
        out.push_str("<ID>");
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn raw_members(line: &str) -> HashMap<String, Box<RawValue>> {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON object ({e}): {line}"))
}

fn vector_text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(normalize_ids)
}

#[test]
fn bridge_passes_every_shared_parity_vector() {
    let path = std::env::var_os("TN_PARITY_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/parity/bridge-vectors.jsonl"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the parity vectors at {}: {e}", path.display()));
    // The vector lines go in verbatim: `fn`, `input` and `resolver` are read, the rest ignored.
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    assert!(lines.len() > 600, "{} vectors", lines.len());
    let got = bridge(&lines);
    let mut failures = Vec::new();
    for (line, out) in lines.iter().zip(&got) {
        let v: Value = serde_json::from_str(line).unwrap();
        let case = v.get("case").and_then(Value::as_str).unwrap_or("?");
        let m = raw_members(out);
        let ok = m.get("ok").map(|r| r.get()) == Some("true");
        if v.get("error") == Some(&Value::Bool(true)) {
            let status = m
                .get("status")
                .map(|r| r.get().to_string())
                .unwrap_or_default();
            let error = m.get("error").map(|r| r.get().len()).unwrap_or(0);
            if ok || !status.starts_with("\"TN_ERR_") || error <= 2 {
                failures.push(format!("{case}: expected an error, got {out}"));
            }
            continue;
        }
        if !ok {
            failures.push(format!("{case}: expected ok, got {out}"));
            continue;
        }
        let output = m.get("output").map(|r| normalize_ids(r.get()));
        let want = vector_text(&v, "output").unwrap_or_else(|| "null".into());
        if output.as_deref() != Some(want.as_str()) {
            failures.push(format!("{case}: output {output:?}, want {want}"));
        }
        if v["fn"] == "server_request_response" {
            let seen = m.get("request_seen").map(|r| normalize_ids(r.get()));
            let want = vector_text(&v, "request_seen").unwrap_or_else(|| "null".into());
            if seen.as_deref() != Some(want.as_str()) {
                failures.push(format!("{case}: request_seen {seen:?}, want {want}"));
            }
        } else if m.contains_key("request_seen") {
            failures.push(format!("{case}: request_seen on a {} line", v["fn"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} parity vectors passed through `toolnexus bridge`",
        lines.len()
    );
}

#[test]
fn bridge_maps_tools_for_every_provider_vector() {
    let text = std::fs::read_to_string(repo().join("tests/vectors/providers.jsonl")).unwrap();
    let vectors: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines: Vec<String> = vectors
        .iter()
        .map(|v| {
            serde_json::json!({"fn": "tools_to_provider", "input": v["input"], "style": v["style"]})
                .to_string()
        })
        .collect();
    let got = bridge(&lines);
    for (v, out) in vectors.iter().zip(&got) {
        let m = raw_members(out);
        match v.get("output").and_then(Value::as_str) {
            Some(want) => assert_eq!(m["output"].get(), want, "{v}"),
            None => {
                assert_eq!(m["ok"].get(), "false", "{v}: {out}");
                assert_eq!(m["status"].get(), v["error"].to_string(), "{v}: {out}");
            }
        }
    }
}

// ---------------------------------------------------------------- watch

/// A process this test started, killed and reaped when dropped (so no failure leaves it).
#[cfg(unix)]
struct Reaped(std::process::Child);

#[cfg(unix)]
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The HTTP fixture with `--live` on a free port: the process and its URL.
#[cfg(unix)]
fn http_fixture() -> (Reaped, String) {
    let mut child = Command::new(fixture())
        .args(["--http", "127.0.0.1:0", "--live"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    (Reaped(child), url)
}

/// `toolnexus watch` with stdout read line by line on a thread.
#[cfg(unix)]
fn spawn_watch(dir: &Path, args: &[&str]) -> (Reaped, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(EXE)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (Reaped(child), rx)
}

/// Waits (generously) for a line that contains every one of `parts`; every line seen so far
/// is kept in `seen`.
#[cfg(unix)]
fn wait_line(
    rx: &std::sync::mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    parts: &[&str],
) -> String {
    let matches = |l: &String| parts.iter().all(|p| l.contains(p));
    if let Some(l) = seen.iter().find(|l| matches(l)) {
        return l.clone();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) => {
                seen.push(l.clone());
                if matches(&l) {
                    return l;
                }
            }
            Err(_) => break,
        }
    }
    panic!(
        "no line with {parts:?}; the watch printed:\n{}",
        seen.join("\n")
    );
}

#[cfg(unix)]
fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {sig} {pid}");
}

/// Whether process `pid` runs (a zombie does not count; without /proc, `kill -0`).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    if !Path::new("/proc/self").exists() {
        return Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// Ends within a generous bound, or panics.
#[cfg(unix)]
fn exit_code(child: &mut Reaped) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            return st;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after the signal"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[cfg(unix)]
#[test]
fn watch_prints_status_changes_tool_list_changes_and_logs_until_ctrl_c() {
    let (_http, url) = http_fixture();
    let dir = std::env::temp_dir().join(format!("tn-cli-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("fx.pid");
    let _ = std::fs::remove_file(&pidfile);
    let watched = serde_json::json!({"mcpServers": {
        "fx": {"command": [fixture(), "--live", "--print-pid-file", &pidfile],
               "restart": {"backoffMs": 100}},
        "remote": {"url": &url, "logLevel": "warning"},
    }});
    std::fs::write(dir.join("mcp.json"), watched.to_string()).unwrap();
    // Another host of the same HTTP server: its calls change the list and log for every session.
    let other = serde_json::json!({"mcpServers": {"remote": {"url": &url}}});
    std::fs::write(dir.join("other.json"), other.to_string()).unwrap();
    let (mut watch, rx) = spawn_watch(&dir, &["watch"]);
    let mut seen = Vec::new();
    wait_line(&rx, &mut seen, &[" fx: connected (", " tools, protocol "]);
    wait_line(&rx, &mut seen, &[" remote: connected ("]);

    let out = run(
        &dir,
        &[
            "-c",
            "other.json",
            "call",
            "remote_toggle_tool",
            r#"{"on":true}"#,
        ],
    );
    assert_eq!(
        text(&out.stdout),
        "live_extra on\n",
        "{}",
        text(&out.stderr)
    );
    wait_line(
        &rx,
        &mut seen,
        &["remote: tools changed: added remote_live_extra"],
    );

    // Below the watched level: not printed; at it: printed, a terminal escape shown escaped.
    let quiet = r#"{"level":"info","message":"quiet","broadcast":true}"#;
    let loud =
        r#"{"level":"error","logger":"db","message":"disk \u001b[31mfull","broadcast":true}"#;
    for args in [quiet, loud] {
        let out = run(&dir, &["-c", "other.json", "call", "remote_log", args]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let line = wait_line(&rx, &mut seen, &["remote: log error [db]: disk "]);
    assert!(
        line.ends_with(r"disk \u{1b}[31mfull") && !line.contains('\u{1b}'),
        "{line}"
    );

    let first = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse::<u32>()
        .unwrap();
    signal(first, "-KILL");
    let line = wait_line(&rx, &mut seen, &["fx: restarting (attempt 1, in "]);
    assert!(line.contains("killed by signal 9"), "{line}");
    wait_line(&rx, &mut seen, &["fx: connected (", "after 1 restart"]);
    let second = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse::<u32>()
        .unwrap();
    assert!(
        second != first && alive(second),
        "the restarted child {second}"
    );

    signal(watch.0.id(), "-INT");
    let st = exit_code(&mut watch);
    assert!(st.success(), "Ctrl-C ends the watch with 0: {st}");
    while let Ok(l) = rx.recv_timeout(std::time::Duration::from_secs(5)) {
        seen.push(l);
    }
    assert!(!seen.iter().any(|l| l.contains("quiet")), "{seen:#?}");
    // Each line is `HH:MM:SS.mmm server: …`.
    for l in &seen {
        let (clock, rest) = l.split_once(' ').unwrap_or_default();
        assert!(clock.len() == 12 && clock.as_bytes()[2] == b':', "{l}");
        assert!(
            rest.starts_with("fx: ") || rest.starts_with("remote: "),
            "{l}"
        );
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(second) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!alive(second), "the watch left its server {second} running");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn watch_json_prints_the_statuses_then_each_event_and_ends_on_sigterm() {
    let dir = config_dir("watch-json");
    let pidfile = dir.join("fx.pid");
    let _ = std::fs::remove_file(&pidfile);
    let watched = serde_json::json!({"mcpServers": {"fx": {
        "command": [fixture(), "--print-pid-file", &pidfile], "restart": {"backoffMs": 100}}}});
    std::fs::write(dir.join("mcp.json"), watched.to_string()).unwrap();
    let (mut watch, rx) = spawn_watch(&dir, &["watch", "--json"]);
    let mut seen = Vec::new();
    let first = wait_line(&rx, &mut seen, &[r#""servers""#]);
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["servers"]["fx"]["status"], "connected", "{first}");
    let pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse::<u32>()
        .unwrap();
    signal(pid, "-KILL");
    let line = wait_line(&rx, &mut seen, &[r#""status":"restarting""#]);
    let e: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        (
            e["type"].as_str(),
            e["server"].as_str(),
            e["attempt"].as_u64()
        ),
        (Some("status"), Some("fx"), Some(1)),
        "{line}"
    );
    let line = wait_line(
        &rx,
        &mut seen,
        &[r#""type":"status""#, r#""status":"connected""#],
    );
    assert_eq!(
        serde_json::from_str::<Value>(&line).unwrap()["restarts"],
        1,
        "{line}"
    );
    signal(watch.0.id(), "-TERM");
    assert!(exit_code(&mut watch).success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C during a call that became a task prints the task's resume token (exit 130)
/// and leaves the task running on the server; `toolnexus resume TOKEN`, a second process,
/// collects its result. The server is the fixture over HTTP (a stdio child ends with its host).
#[cfg(unix)]
#[test]
fn call_interrupted_prints_the_task_token_and_resume_collects_it() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("tn-cli-tasks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("server.log");
    let _ = std::fs::remove_file(&log);
    let mut server = Command::new(fixture())
        .args(["--http", "127.0.0.1:0", "--tasks", "--log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.split_whitespace().last().unwrap().to_string();
    let config = serde_json::json!({"mcpServers": {"fx": {"url": url}}});
    std::fs::write(dir.join("mcp.json"), config.to_string()).unwrap();
    let child = Command::new(EXE)
        .args(["call", "fx_task_slow", r#"{"ms":4000,"steps":4}"#])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once the library polls the task (so the token exists), within 60 s.
    let polled = || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("tasks/get"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !polled() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(polled(), "the task was never polled");
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let token = err
        .lines()
        .find_map(|l| l.strip_prefix("toolnexus resume "))
        .unwrap_or_else(|| panic!("no resume token printed: {err}"))
        .to_string();
    assert!(token.starts_with("tn1."), "{token}");
    let out = run(&dir, &["resume", &token]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "slow task done after 4 steps\n");
}

/// A temporary directory with an mcp.json: the fixture as `fx` with `--resources` (and `args`).
fn resources_dir(name: &str, args: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tn-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut command = vec![fixture().display().to_string(), "--resources".into()];
    command.extend(args.iter().map(|a| a.to_string()));
    let config = serde_json::json!({"mcpServers": {"fx": {"command": command}}});
    std::fs::write(dir.join("mcp.json"), config.to_string()).unwrap();
    dir
}

#[test]
fn resources_lists_resources_and_templates_and_read_prints_or_writes_them() {
    for (era, args) in [("legacy", &[][..]), ("modern", &["--modern"][..])] {
        let dir = resources_dir(&format!("resources-{era}"), args);
        let out = run(&dir, &["resources"]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        let first: Vec<&str> = stdout.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(first[..3], ["fx", "fx://ask", "text/plain"], "{stdout}");
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["fx", "fx://doc/1", "text/plain", "Document", "1"]),
            "{stdout}"
        );
        let out = run(&dir, &["resources", "--json"]);
        let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(listed[2]["uri"], "fx://doc/1");
        assert_eq!(listed[2]["_meta"]["fx/note"], "first");
        let out = run(&dir, &["resources", "--templates"]);
        let stdout = text(&out.stdout);
        assert!(stdout.starts_with("fx  fx://item/{id}"), "{stdout}");
        assert_eq!(stdout.lines().count(), 2, "{stdout}");

        // Text to stdout; a blob as raw bytes to a stdout that is a pipe, or to -o FILE.
        let out = run(&dir, &["read", "fx", "fx://doc/1"]);
        assert_eq!(text(&out.stdout), "document 1\n");
        let out = run(&dir, &["read", "fx", "fx://bin/1"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(out.stdout, (0..=255u8).collect::<Vec<u8>>());
        let file = dir.join("part2.png");
        let out = run(
            &dir,
            &["read", "fx", "fx://multi", "-o", file.to_str().unwrap()],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "part 1\n");
        assert!(std::fs::read(&file).unwrap().starts_with(b"\x89PNG"));
        assert!(text(&out.stderr).contains("fx://multi/part2 (8 bytes) written to"));
        let out = run(&dir, &["read", "fx", "fx://bin/1", "--json"]);
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["contents"][0]["mimeType"], "application/octet-stream");

        let out = run(&dir, &["read", "fx", "fx://nothing"]);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(
            err.contains("fx://nothing") && err.contains("TN_ERR_NOT_FOUND"),
            "{err}"
        );
        let out = run(&dir, &["read", "nope", "fx://doc/1"]);
        assert_eq!(out.status.code(), Some(2));
    }
}

#[test]
fn prompts_lists_prompt_prints_the_messages_and_complete_prints_values() {
    for (era, args) in [("legacy", &[][..]), ("modern", &["--modern"][..])] {
        let dir = resources_dir(&format!("prompts-{era}"), args);
        let out = run(&dir, &["prompts"]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["fx_greet", "name=", "[lang=]", "Greets", "someone"]),
            "{stdout}"
        );
        let out = run(&dir, &["prompts", "--json"]);
        let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert!(listed
            .iter()
            .any(|p| p["name"] == "fx_code_review" && p["prompt"] == "code_review"));

        let out = run(&dir, &["prompt", "fx_greet", "name=Ada", "lang=fr"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "[user]\nBonjour, Ada !\n");
        let out = run(&dir, &["prompt", "fx_code_review", "code=a=b"]);
        assert_eq!(text(&out.stdout), "[user]\nReview this code: a=b\n");
        // Text blocks as text, the others as one JSON line each.
        let out = run(&dir, &["prompt", "fx_blocks"]);
        let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
        assert_eq!(lines.len(), 14, "{lines:?}");
        assert_eq!(lines[0], "[user]");
        assert_eq!(lines[2], "[assistant]");
        let image: Value = serde_json::from_str(&lines[3]).unwrap();
        assert_eq!(image["type"], "image");
        let custom: Value = serde_json::from_str(&lines[13]).unwrap();
        assert_eq!(
            custom,
            serde_json::json!({"type": "x-fixture", "foo": [1, 2]})
        );
        let out = run(&dir, &["prompt", "fx_greet", "--json", "name=Bo"]);
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["messages"][0]["content"]["text"], "Hello, Bo!");

        let out = run(&dir, &["prompt", "fx_greet"]);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(
            err.contains("Missing required argument: name") && err.contains("TN_ERR_SERVER"),
            "{err}"
        );
        for bad in [
            &["prompt", "fx_greet", "name"][..],
            &["prompt", "fx_greet", "name=a", "name=b"],
        ] {
            let out = run(&dir, bad);
            assert_eq!(out.status.code(), Some(2), "{bad:?}");
            assert!(
                text(&out.stderr).contains("argument"),
                "{}",
                text(&out.stderr)
            );
        }
        let out = run(&dir, &["prompt", "fx_nope"]);
        assert_eq!(out.status.code(), Some(2));

        // The server's name or the host name; the chosen arguments as context.
        let out = run(
            &dir,
            &["complete", "fx", "prompt", "code_review", "language", "p"],
        );
        assert_eq!(text(&out.stdout), "python\n", "{}", text(&out.stderr));
        let out = run(
            &dir,
            &[
                "complete", "fx", "prompt", "fx_greet", "name", "a", "lang=fr",
            ],
        );
        assert_eq!(text(&out.stdout), "Amélie\nAntoine\n");
        let out = run(
            &dir,
            &["complete", "fx", "resource", "fx://item/{id}", "id", "1"],
        );
        assert_eq!(text(&out.stdout), "1\n10\n11\n");
        let out = run(&dir, &["complete", "fx", "prompt", "greet", "nothing", ""]);
        assert!(out.status.success() && out.stdout.is_empty());
        let out = run(&dir, &["complete", "fx", "tool", "x", "y", ""]);
        assert_eq!(out.status.code(), Some(2));
    }
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    // `toolnexus tools | head -0`: stdout closed before the command writes; no panic, exit 0.
    let dir = config_dir("pipe");
    for args in [&["tools"][..], &["status"][..], &["resources"][..]] {
        let mut child = Command::new(EXE)
            .args(args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}
