//! `--resources`, raw over stdio and HTTP: the listings' cursors (offsets, loops, empty
//! cursors), subscriptions in both eras and the modern listen filter, one MRTR read.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_tn-fixture-server");

fn envelope() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

/// `params` with the modern envelope.
fn modern(mut params: Value) -> Value {
    params["_meta"] = envelope();
    params
}

struct Pipe {
    child: Child,
    w: ChildStdin,
    r: BufReader<ChildStdout>,
}

impl Pipe {
    fn start(flags: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let w = child.stdin.take().unwrap();
        let r = BufReader::new(child.stdout.take().unwrap());
        Pipe { child, w, r }
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.w, "{msg}").unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request; returns the notifications written before its answer, and the answer.
    fn call(&mut self, id: u64, method: &str, params: Value) -> (Vec<Value>, Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut notes = Vec::new();
        loop {
            let m = self.read();
            if m.get("id") == Some(&json!(id)) {
                return (notes, m);
            }
            notes.push(m);
        }
    }

    fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        let (notes, answer) = self.call(id, method, params);
        assert!(notes.is_empty(), "{notes:?}");
        answer
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A listing's page: the names (or URIs) shown and `nextCursor` (None: the last page).
fn page(s: &mut Pipe, method: &str, cursor: Option<&str>) -> (Vec<String>, Option<String>) {
    let (key, name) = match method {
        "resources/list" => ("resources", "uri"),
        "resources/templates/list" => ("resourceTemplates", "uriTemplate"),
        _ => ("prompts", "name"),
    };
    let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
    let r = s.ask(1, method, params);
    let names = r["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|x| x[name].as_str().unwrap().to_owned())
        .collect();
    let next = r["result"]
        .get("nextCursor")
        .map(|c| c.as_str().unwrap().to_owned());
    (names, next)
}

#[test]
fn offset_cursors_walk_every_listing() {
    let mut s = Pipe::start(&[
        "--resources",
        "--resource-page-size",
        "3",
        "--prompt-count",
        "2",
    ]);
    for (method, total) in [
        ("resources/list", 8usize),
        ("resources/templates/list", 2),
        ("prompts/list", 6),
    ] {
        let (mut all, mut next) = page(&mut s, method, None);
        let mut pages = 1;
        while let Some(c) = next.clone() {
            assert_eq!(
                c,
                all.len().to_string(),
                "{method}: the cursor is the offset"
            );
            let (more, n) = page(&mut s, method, Some(&c));
            all.extend(more);
            next = n;
            pages += 1;
        }
        assert_eq!(
            (all.len(), pages),
            (total, total.div_ceil(3)),
            "{method}: {all:?}"
        );
    }
    let bad = s.ask(2, "prompts/list", json!({"cursor": "x"}));
    assert_eq!(bad["error"]["code"], -32602);
    let (uris, _) = page(&mut s, "resources/list", None);
    assert_eq!(uris, ["fx://doc/1", "fx://doc/2", "fx://doc/3"]);
}

#[test]
fn cursor_loop_and_empty_cursors() {
    let mut s = Pipe::start(&["--resources", "--cursor-loop", "--resource-page-size", "2"]);
    let (first, a) = page(&mut s, "prompts/list", None);
    assert_eq!(
        (first, a.as_deref()),
        (vec!["greet".into(), "code_review".into()], Some("A"))
    );
    let (_, b) = page(&mut s, "prompts/list", Some("A"));
    assert_eq!(b.as_deref(), Some("B"));
    let (_, again) = page(&mut s, "resources/list", Some("B"));
    assert_eq!(again.as_deref(), Some("A"), "A -> B -> A forever");
    assert_eq!(
        s.ask(2, "resources/list", json!({"cursor": "2"}))["error"]["code"],
        -32602
    );

    // Modern era too: "" is a cursor like any other.
    let mut s = Pipe::start(&["--resources", "--dual", "--empty-cursor"]);
    let (first, next) = page(&mut s, "resources/list", None);
    assert_eq!((first.len(), next.as_deref()), (4, Some("")));
    let r = s.ask(3, "resources/list", modern(json!({"cursor": ""})));
    assert_eq!(r["result"]["resources"].as_array().unwrap().len(), 4);
    assert!(r["result"].get("nextCursor").is_none(), "{r}");
    assert_eq!(r["result"]["cacheScope"], "public");

    let mut s = Pipe::start(&["--resources", "--empty-cursor-loop"]);
    for cursor in [None, Some(""), Some("")] {
        let (_, next) = page(&mut s, "resources/templates/list", cursor);
        assert_eq!(next.as_deref(), Some(""));
    }
}

#[test]
fn without_the_option_nothing_is_served() {
    let mut s = Pipe::start(&[]);
    for m in [
        "resources/list",
        "prompts/list",
        "completion/complete",
        "resources/subscribe",
    ] {
        assert_eq!(s.ask(1, m, json!({}))["error"]["code"], -32601, "{m}");
    }
    assert_eq!(
        s.ask(2, "tools/list", json!({}))["result"]["tools"]
            .as_array()
            .unwrap()
            .len(),
        29
    );
}

#[test]
fn legacy_subscriptions_per_connection() {
    let mut s = Pipe::start(&["--resources"]);
    s.ask(1, "initialize", json!({"protocolVersion": "2025-11-25"}));
    let touch = |uri: &str| json!({"name": "touch", "arguments": {"uri": uri}});
    assert_eq!(
        s.ask(2, "resources/subscribe", json!({"uri": "fx://doc/2"}))["result"],
        json!({})
    );
    let (notes, r) = s.call(3, "tools/call", touch("fx://doc/2"));
    assert_eq!(
        notes,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "fx://doc/2"}})
        ]
    );
    assert_eq!(r["result"]["content"][0]["text"], "touched 1");
    s.ask(4, "resources/unsubscribe", json!({"uri": "fx://doc/2"}));
    let r = s.ask(5, "tools/call", touch("fx://doc/2"));
    assert_eq!(r["result"]["content"][0]["text"], "touched 0");
    let (notes, _) = s.call(
        6,
        "tools/call",
        json!({"name": "toggle_prompt", "arguments": {}}),
    );
    assert_eq!(
        notes,
        [json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})]
    );
}

#[test]
fn modern_listens_get_what_they_asked_for() {
    let mut s = Pipe::start(&["--resources", "--modern"]);
    let listen = |id: &str, filter: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
               "params": modern(json!({"notifications": filter}))})
    };
    s.send(listen(
        "a",
        json!({"resourceSubscriptions": ["fx://doc/1"], "toolsListChanged": true}),
    ));
    let ack = s.read();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "a"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": ["fx://doc/1"]}),
        "toolsListChanged is not honoured without --live"
    );
    s.send(listen(
        "b",
        json!({"resourcesListChanged": true, "promptsListChanged": false}),
    ));
    assert_eq!(
        s.read()["params"]["notifications"],
        json!({"resourcesListChanged": true})
    );
    assert_eq!(
        s.ask(
            1,
            "resources/subscribe",
            modern(json!({"uri": "fx://doc/1"}))
        )["error"]["code"],
        -32601
    );

    let tool = |name: &str, args: Value| modern(json!({"name": name, "arguments": args}));
    let (notes, r) = s.call(2, "tools/call", tool("touch", json!({"uri": "fx://doc/1"})));
    assert_eq!(
        notes,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "fx://doc/1",
                           "_meta": {"io.modelcontextprotocol/subscriptionId": "a"}}})
        ]
    );
    assert_eq!(r["result"]["content"][0]["text"], "touched 1");
    let (notes, _) = s.call(3, "tools/call", tool("add_resource", json!({})));
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0]["method"], "notifications/resources/list_changed");
    assert_eq!(
        notes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "b"
    );
    let (notes, _) = s.call(4, "tools/call", tool("change_prompt", json!({})));
    assert!(
        notes.is_empty(),
        "nobody asked for prompt changes: {notes:?}"
    );

    s.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": "a"}}),
    );
    let (notes, r) = s.call(5, "tools/call", tool("touch", json!({"uri": "fx://doc/1"})));
    assert!(notes.is_empty());
    assert_eq!(
        r["result"]["content"][0]["text"], "touched 0",
        "a cancelled listen ends"
    );

    // One MRTR read: the question, then the retry with the answer and the requestState.
    let r = s.ask(6, "resources/read", modern(json!({"uri": "fx://ask"})));
    assert_eq!(r["result"]["resultType"], "input_required");
    assert_eq!(
        r["result"]["inputRequests"]["v"]["params"]["message"],
        "Which version?"
    );
    let retry = json!({"uri": "fx://ask", "requestState": r["result"]["requestState"],
                       "inputResponses": {"v": {"action": "accept", "content": {"version": "7"}}}});
    let r = s.ask(7, "resources/read", modern(retry));
    assert_eq!(r["result"]["contents"][0]["text"], "version 7");
    assert_eq!(r["result"]["ttlMs"], 0);
}

#[test]
fn modern_http_listen_filters_its_stream() {
    let mut child = Command::new(BIN)
        .args(["--http", "127.0.0.1:0", "--modern", "--resources"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim_end()["listening on http://".len()..]
        .trim_end_matches("/mcp")
        .to_owned();
    let post = |method: &str, id: u64, params: Value, close: bool| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method,
                          "params": modern(params.clone())})
        .to_string();
        let mut s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut conn = if close { "Connection: close\r\n" } else { "" }.to_owned();
        if let Some(n) = params.get("name").and_then(Value::as_str) {
            conn.push_str(&format!("Mcp-Name: {n}\r\n"));
        }
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\n{conn}Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).unwrap();
        BufReader::new(s)
    };
    // The next `data:` of an event stream.
    let data = |r: &mut BufReader<TcpStream>| loop {
        let mut l = String::new();
        assert!(r.read_line(&mut l).unwrap() > 0, "the stream ended");
        if let Some(d) = l.strip_prefix("data: ").filter(|d| d.trim().len() > 1) {
            return serde_json::from_str::<Value>(d).unwrap();
        }
    };
    let filter = json!({"resourceSubscriptions": ["fx://doc/3"], "promptsListChanged": true});
    let mut listen = post(
        "subscriptions/listen",
        9,
        json!({"notifications": filter}),
        false,
    );
    let ack = data(&mut listen);
    assert_eq!(ack["params"]["notifications"], filter);
    let touch = |uri: &str| {
        let mut r = post(
            "tools/call",
            1,
            json!({"name": "touch", "arguments": {"uri": uri}}),
            true,
        );
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        s
    };
    assert!(touch("fx://doc/2").contains("touched 0"));
    let mut r = post(
        "tools/call",
        2,
        json!({"name": "add_resource", "arguments": {}}),
        true,
    );
    r.read_to_string(&mut String::new()).unwrap();
    assert!(touch("fx://doc/3").contains("touched 1"));
    // Neither the other URI nor the resource list change went on this stream.
    let n = data(&mut listen);
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(
        n["params"],
        json!({"uri": "fx://doc/3", "_meta": {"io.modelcontextprotocol/subscriptionId": 9}})
    );
    let _ = child.kill();
    let _ = child.wait();
}
