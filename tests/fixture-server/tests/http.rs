//! The fixture's HTTP mode, driven by a raw HTTP/1.1 client on std::net.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const ACCEPT: &str = "application/json, text/event-stream";

struct Server {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        static N: AtomicU32 = AtomicU32::new(0);
        let log = std::env::temp_dir().join(format!(
            "tn-fixture-http-{}-{}.log",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&log);
        let mut child = Command::new(env!("CARGO_BIN_EXE_tn-fixture-server"))
            .args(["--http", "127.0.0.1:0", "--log"])
            .arg(&log)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the fixture");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim_end().strip_prefix("listening on http://");
        let addr = url.and_then(|u| u.strip_suffix("/mcp")).expect(&line);
        Server {
            child,
            addr: addr.to_owned(),
            log,
        }
    }

    fn conn(&self) -> Conn {
        let s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Conn {
            r: BufReader::new(s),
        }
    }

    fn log_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// initialize + notifications/initialized; returns the session id.
    fn session(&self) -> String {
        let mut c = self.conn();
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize",
            "params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}});
        let r = c.post(None, &init.to_string());
        assert_eq!(r.status, 200);
        let sid = r.header("mcp-session-id").expect("session id").to_owned();
        let r = c.post(
            Some(&sid),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        assert_eq!(r.status, 202);
        sid
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    /// The whole body for Content-Length responses; empty for chunked ones (read them with `event`).
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

struct Conn {
    r: BufReader<TcpStream>,
}

impl Conn {
    fn send(&mut self, method: &str, headers: &[(&str, &str)], body: &str) {
        let mut req = format!("{method} /mcp HTTP/1.1\r\nHost: x\r\n");
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        if method == "POST" {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.r.get_mut().write_all(req.as_bytes()).unwrap();
    }

    fn send_post(&mut self, sid: Option<&str>, body: &str) {
        let mut h = vec![("Accept", ACCEPT), ("MCP-Protocol-Version", "2025-11-25")];
        if let Some(s) = sid {
            h.push(("Mcp-Session-Id", s));
        }
        self.send("POST", &h, body);
    }

    fn post(&mut self, sid: Option<&str>, body: &str) -> Resp {
        self.send_post(sid, body);
        self.response()
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        l.trim_end_matches(['\r', '\n']).to_owned()
    }

    /// Status and headers; the body too unless it is chunked.
    fn response(&mut self) -> Resp {
        let status_line = self.line();
        let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let l = self.line();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.to_owned(), v.trim().to_owned()));
        }
        let mut resp = Resp {
            status,
            headers,
            body: String::new(),
        };
        if let Some(len) = resp.header("content-length") {
            let mut b = vec![0; len.parse().unwrap()];
            self.r.read_exact(&mut b).unwrap();
            resp.body = String::from_utf8(b).unwrap();
        }
        resp
    }

    /// The next SSE event of a chunked event stream: its fields, or None at the last chunk.
    /// (The fixture writes one whole event per chunk.)
    fn event(&mut self) -> Option<Vec<(String, String)>> {
        let size = usize::from_str_radix(&self.line(), 16).unwrap();
        if size == 0 {
            assert_eq!(self.line(), "");
            return None;
        }
        let mut b = vec![0; size + 2];
        self.r.read_exact(&mut b).unwrap();
        let text = String::from_utf8(b[..size].to_vec()).unwrap();
        assert!(text.ends_with("\n\n"), "{text:?}");
        Some(
            text.trim_end_matches('\n')
                .lines()
                .map(|l| {
                    let (n, v) = l.split_once(':').unwrap_or((l, ""));
                    (n.to_owned(), v.strip_prefix(' ').unwrap_or(v).to_owned())
                })
                .collect(),
        )
    }

    /// The next event's `data` as JSON (skipping events without data).
    fn message(&mut self) -> Value {
        loop {
            let ev = self.event().expect("an event");
            let data = ev.iter().find(|(n, _)| n == "data").map(|(_, v)| v);
            match data {
                Some(d) if !d.is_empty() => {
                    assert!(ev.iter().any(|(n, v)| n == "event" && v == "message"));
                    assert!(ev.iter().any(|(n, _)| n == "id"));
                    return serde_json::from_str(d).unwrap();
                }
                _ => {}
            }
        }
    }

    fn get(&mut self, sid: &str) -> Resp {
        self.send(
            "GET",
            &[("Accept", "text/event-stream"), ("Mcp-Session-Id", sid)],
            "",
        );
        self.response()
    }
}

fn call(id: u64, name: &str, args: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}})
        .to_string()
}

fn text_of(msg: &Value) -> &str {
    msg["result"]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn initialize_list_and_echo_on_one_connection() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let r = c.post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    assert_eq!(sid.len(), 36, "{sid}");
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
    let r = c.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!((r.status, r.body.as_str()), (202, ""));
    let r = c.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    let names: Vec<String> = r.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.iter().any(|n| n == "echo"));
    assert!(names.iter().any(|n| n == "ask_unrelated"));
    for i in 0..3 {
        let r = c.post(Some(&sid), &call(10 + i, "echo", json!({"text": "hé"})));
        assert_eq!(r.status, 200);
        assert_eq!(
            r.body,
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":"hé"}}]}}}}"#,
                10 + i
            )
        );
    }
    // A chunked request body.
    let body = call(20, "add", json!({"a": 2, "b": 3}));
    let (a, b) = body.split_at(10);
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nAccept: {ACCEPT}\r\nContent-Type: application/json\r\n\
         Mcp-Session-Id: {sid}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    c.r.get_mut().write_all(req.as_bytes()).unwrap();
    assert_eq!(text_of(&c.response().json()), "5");
}

#[test]
fn session_and_accept_errors() {
    let s = Server::start(&[]);
    let sid = s.session();
    let mut c = s.conn();
    assert_eq!(
        c.post(None, &call(1, "echo", json!({"text": "x"}))).status,
        400
    );
    assert_eq!(
        c.post(Some("nope"), &call(1, "echo", json!({"text": "x"})))
            .status,
        404
    );
    c.send(
        "POST",
        &[("Accept", "application/json"), ("Mcp-Session-Id", &sid)],
        &call(1, "echo", json!({"text": "x"})),
    );
    assert_eq!(c.response().status, 406);
    assert_eq!(c.post(Some(&sid), "{not json").status, 400);
    // Still usable after the errors.
    let r = c.post(Some(&sid), &call(2, "echo", json!({"text": "ok"})));
    assert_eq!(text_of(&r.json()), "ok");
}

#[test]
fn ask_form_streams_its_question_on_the_post() {
    let s = Server::start(&[]);
    let sid = s.session();
    let mut c = s.conn();
    c.send_post(
        Some(&sid),
        &call(5, "ask_form", json!({"message": "Name?"})),
    );
    let r = c.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let priming = c.event().unwrap();
    assert_eq!(priming[0].0, "id");
    assert_eq!(priming[1], ("data".to_owned(), String::new()));
    let ask = c.message();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Name?");
    assert_eq!(ask["id"], 0);
    let mut a = s.conn();
    let answer =
        json!({"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"name":"Ann"}}});
    let r = a.post(Some(&sid), &answer.to_string());
    assert_eq!((r.status, r.body.as_str()), (202, ""));
    let result = c.message();
    assert_eq!(result["id"], 5);
    assert_eq!(
        text_of(&result),
        r#"{"action":"accept","content":{"name":"Ann"}}"#
    );
    assert!(c.event().is_none(), "the stream ends after the result");
    // The connection is reusable.
    let r = c.post(Some(&sid), &call(6, "echo", json!({"text": "again"})));
    assert_eq!(text_of(&r.json()), "again");
}

#[test]
fn unrelated_question_is_dropped_without_a_get_stream() {
    let s = Server::start(&[]);
    let sid = s.session();
    let mut c = s.conn();
    let r = c.post(
        Some(&sid),
        &call(3, "ask_unrelated", json!({"wait_ms": 50})),
    );
    assert_eq!(r.status, 200);
    let msg = r.json();
    assert_eq!(msg["result"]["isError"], true);
    assert_eq!(
        text_of(&msg),
        "elicitation dropped: no standalone GET stream"
    );
    let log = s.log_lines();
    assert_eq!(
        log.last().unwrap(),
        &json!({"event":"dropped","rpc":"elicitation/create"})
    );
}

#[test]
fn unrelated_question_goes_on_the_get_stream() {
    let s = Server::start(&[]);
    let sid = s.session();
    let mut g = s.conn();
    let r = g.get(&sid);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let priming = g.event().unwrap();
    assert_eq!(priming[0].0, "id");
    // Only one standalone stream per session.
    assert_eq!(s.conn().get(&sid).status, 409);

    let mut c = s.conn();
    c.send_post(
        Some(&sid),
        &call(7, "ask_unrelated", json!({"message": "Why?"})),
    );
    let ask = g.message();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Why?");
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"decline"}});
    assert_eq!(s.conn().post(Some(&sid), &answer.to_string()).status, 202);
    let r = c.response();
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(text_of(&r.json()), r#"{"action":"decline"}"#);

    // DELETE ends the session and its GET stream.
    let mut d = s.conn();
    d.send("DELETE", &[("Mcp-Session-Id", &sid)], "");
    assert_eq!(d.response().status, 200);
    assert!(g.event().is_none());
    assert_eq!(
        d.post(Some(&sid), &call(8, "echo", json!({"text": "x"})))
            .status,
        404
    );
}

#[test]
fn log_lines_in_arrival_order() {
    let s = Server::start(&[]);
    let sid = s.session();
    let mut g = s.conn();
    assert_eq!(g.get(&sid).status, 200);
    let mut c = s.conn();
    c.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    c.send_post(Some(&sid), &call(3, "ask_unrelated", json!({})));
    let ask = g.message();
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"cancel"}});
    s.conn().post(Some(&sid), &answer.to_string());
    c.response();
    let mut d = s.conn();
    d.send("DELETE", &[("Mcp-Session-Id", &sid)], "");
    d.response();

    let entry = |http: &str, rpc: Value, id: Value, kind: Value, sess: Value, pv: Value| {
        json!({"http":http,"rpc":rpc,"id":id,"kind":kind,"session":sess,
               "protocolVersion":pv,"lastEventId":null})
    };
    let v = json!("2025-11-25");
    let sv = json!(sid);
    let n = Value::Null;
    let expected = vec![
        entry(
            "POST",
            json!("initialize"),
            json!(1),
            json!("request"),
            n.clone(),
            v.clone(),
        ),
        entry(
            "POST",
            json!("notifications/initialized"),
            n.clone(),
            json!("notification"),
            sv.clone(),
            v.clone(),
        ),
        entry(
            "GET",
            n.clone(),
            n.clone(),
            n.clone(),
            sv.clone(),
            n.clone(),
        ),
        entry(
            "POST",
            json!("tools/list"),
            json!(2),
            json!("request"),
            sv.clone(),
            v.clone(),
        ),
        entry(
            "POST",
            json!("tools/call"),
            json!(3),
            json!("request"),
            sv.clone(),
            v.clone(),
        ),
        entry(
            "POST",
            n.clone(),
            ask["id"].clone(),
            json!("response"),
            sv.clone(),
            v.clone(),
        ),
        entry(
            "DELETE",
            n.clone(),
            n.clone(),
            n.clone(),
            sv.clone(),
            n.clone(),
        ),
    ];
    assert_eq!(s.log_lines(), expected);
}

#[test]
fn get_status_option() {
    let s = Server::start(&["--get-status", "405"]);
    let sid = s.session();
    let r = s.conn().get(&sid);
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST, DELETE"));
}

#[test]
fn get_close_after_and_retry() {
    let s = Server::start(&["--get-close-after-ms", "100", "--get-retry", "500"]);
    let sid = s.session();
    let mut g = s.conn();
    let t0 = Instant::now();
    assert_eq!(g.get(&sid).status, 200);
    let priming = g.event().unwrap();
    assert!(
        priming.contains(&("retry".to_owned(), "500".to_owned())),
        "{priming:?}"
    );
    assert!(g.event().is_none());
    assert!(t0.elapsed() >= Duration::from_millis(100));
    // The connection stays usable, and a new GET stream may open.
    assert_eq!(g.get(&sid).status, 200);
}

#[test]
fn sse_all_option() {
    let s = Server::start(&["--sse-all"]);
    let mut c = s.conn();
    c.send_post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
    );
    let r = c.response();
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let priming = c.event().unwrap();
    assert_eq!(priming[1], ("data".to_owned(), String::new()));
    assert_eq!(c.message()["result"]["protocolVersion"], "2025-11-25");
    assert!(c.event().is_none());
    c.send_post(Some(&sid), &call(2, "echo", json!({"text": "s"})));
    assert_eq!(
        c.response().header("content-type"),
        Some("text/event-stream")
    );
    assert_eq!(text_of(&c.message()), "s");
    assert!(c.event().is_none());
}
