//! The fixture's modern era (`--modern`, `--dual`, `--exit-on-discover`), raw over stdio
//! and HTTP.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tn-fixture-server");

fn envelope(caps: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": caps})
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

    fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.w, "{msg}").unwrap();
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn modern_stdio() {
    let mut s = Pipe::start(&["--modern"]);
    let caps = json!({"elicitation": {}});
    let d = s.ask(
        1,
        "server/discover",
        json!({"_meta": envelope(caps.clone())}),
    );
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(d["result"]["resultType"], "complete");
    let i = s.ask(2, "initialize", json!({"protocolVersion": "2025-11-25"}));
    assert_eq!(i["error"]["code"], -32022);
    assert_eq!(i["error"]["data"]["requested"], "2025-11-25");
    let bare = s.ask(3, "tools/list", json!({}));
    assert_eq!(bare["error"]["code"], -32022);
    assert!(bare["error"]["data"].get("requested").is_none());
    let no_caps = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    assert_eq!(s.ask(4, "tools/list", no_caps)["error"]["code"], -32602);
    let list = s.ask(5, "tools/list", json!({"_meta": envelope(caps.clone())}));
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["ttlMs"], 0);
    let ask = json!({"name": "mrtr_ask", "arguments": {}, "_meta": envelope(caps.clone())});
    let r = s.ask(6, "tools/call", ask.clone());
    assert_eq!(r["result"]["resultType"], "input_required");
    assert_eq!(r["result"]["requestState"], "s1");
    let mut retry = ask.clone();
    retry["inputResponses"] = json!({"who": {"action": "decline"}});
    retry["requestState"] = json!("s1");
    let done = s.ask(7, "tools/call", retry);
    assert_eq!(
        done["result"]["content"][0]["text"],
        r#"{"requestState":"s1","action":"decline"}"#
    );
    let mut no_elicitation = ask;
    no_elicitation["_meta"] = envelope(json!({}));
    assert_eq!(
        s.ask(8, "tools/call", no_elicitation)["error"]["code"],
        -32021
    );
    let echo = json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": envelope(caps)});
    let e = s.ask(9, "tools/call", echo);
    assert_eq!(
        e["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}]})
    );
}

#[test]
fn dual_stdio_serves_both_eras() {
    let mut s = Pipe::start(&["--dual"]);
    let d = s.ask(1, "server/discover", json!({"_meta": envelope(json!({}))}));
    assert_eq!(d["result"]["resultType"], "complete");
    let i = s.ask(2, "initialize", json!({"protocolVersion": "2025-11-25"}));
    assert_eq!(i["result"]["protocolVersion"], "2025-11-25");
    let e = s.ask(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    assert!(e["result"].get("resultType").is_none());
    let m = s.ask(
        4,
        "tools/call",
        json!({"name": "mrtr_unknown_result", "arguments": {}}),
    );
    assert_eq!(
        m["result"]["isError"], true,
        "MRTR tools need the modern era"
    );
}

#[test]
fn exit_on_discover() {
    let mut s = Pipe::start(&["--exit-on-discover"]);
    writeln!(
        s.w,
        r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover"}}"#
    )
    .unwrap();
    assert_eq!(s.child.wait().unwrap().code(), Some(3));
    let mut s = Pipe::start(&["--exit-on-discover"]);
    let i = s.ask(1, "initialize", json!({}));
    assert!(i.get("result").is_some());
    let d = s.ask(2, "server/discover", json!({}));
    assert_eq!(d["error"]["code"], -32601, "after initialize: answered");
}

/// One POST on its own connection (`Connection: close`): status and body.
fn post(addr: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp.split(' ').nth(1).unwrap().parse().unwrap();
    let body = resp.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

#[test]
fn modern_http() {
    let mut child = Command::new(BIN)
        .args(["--http", "127.0.0.1:0", "--modern"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim_end()["listening on http://".len()..].trim_end_matches("/mcp");
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "hi"},
                                 "_meta": envelope(json!({}))}});
    let v = ("MCP-Protocol-Version", "2026-07-28");
    let m = ("Mcp-Method", "tools/call");
    let (st, body) = post(addr, &[v, m, ("Mcp-Name", "echo")], &call);
    assert_eq!(st, 200, "{body}");
    assert!(body.contains(r#""resultType":"complete""#), "{body}");
    let (st, body) = post(addr, &[v, m, ("Mcp-Name", "=?base64?ZWNobw==?=")], &call);
    assert_eq!(st, 200, "{body}");
    for headers in [
        &[v, m][..],
        &[v, ("Mcp-Name", "echo")],
        &[m, ("Mcp-Name", "echo")],
    ] {
        let (st, body) = post(addr, headers, &call);
        assert_eq!(st, 400, "{body}");
        let e: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!(7), json!(-32020))
        );
    }
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25"}});
    let (st, body) = post(addr, &[], &init);
    assert!(st == 400 && body.contains("-32022"), "{st} {body}");
    let _ = child.kill();
    let _ = child.wait();
}
