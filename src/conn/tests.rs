//! The connection against a fake transport (no process, no socket): what it sends, how it
//! files what comes in (architecture principle 2), how a request waits, is woken, times out,
//! fails with the connection, gets its progress and is cancelled.

use super::*;
use crate::transport::fake::{id_of, Fake};
use crate::transport::Inbound;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Requests {
    seen: Mutex<Vec<(Value, String)>>,
}

impl ServerRequests for Requests {
    fn on_request(
        &self,
        _conn: &Arc<Conn>,
        id: Value,
        method: &str,
        _params: Option<Value>,
        _carrier: Option<u64>,
    ) {
        lock(&self.seen).push((id, method.to_string()));
    }
}

#[derive(Default)]
struct Watch {
    notes: Mutex<Vec<String>>,
    failed: Mutex<Vec<String>>,
}

impl Watcher for Watch {
    fn notification(&self, _conn: &Conn, method: &str, _params: Option<Value>) {
        lock(&self.notes).push(method.to_string());
    }
    fn failed(&self, _conn: &Conn, why: &RequestError) {
        lock(&self.failed).push(format!("{why:?}"));
    }
}

fn connect(
    script: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
) -> (Arc<Conn>, Arc<Fake>, Arc<Requests>, Arc<Watch>) {
    let requests = Arc::new(Requests::default());
    let conn = Conn::new(requests.clone());
    let watch = Arc::new(Watch::default());
    conn.watch(watch.clone());
    let fake = Fake::new(script);
    let inbound: Arc<dyn Inbound> = conn.clone();
    fake.file_into(&inbound);
    conn.attach(fake.clone());
    (conn, fake, requests, watch)
}

fn echo_result(text: &str) -> Vec<String> {
    match id_of(text) {
        Some(id) => vec![format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"ok":{id}}}}}"#
        )],
        None => Vec::new(),
    }
}

#[test]
fn a_reply_wakes_its_request_with_the_line_as_sent() {
    let (conn, fake, _, _) = connect(echo_result);
    let (reply, asked) = conn.request(&Req::plain("ping", Some("{}"), Duration::from_secs(5)));
    let line = reply.unwrap();
    let id = id_of(&line).unwrap();
    assert_eq!(
        line,
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"ok":{id}}}}}"#)
    );
    assert!(!asked);
    let sent = lock(&fake.sent).clone();
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].contains(r#""method":"ping""#) && sent[0].contains(r#""params":{}"#),
        "{sent:?}"
    );
    // Each request gets its own id.
    let (again, _) = conn.request(&Req::plain("ping", None, Duration::from_secs(5)));
    assert_ne!(id_of(&again.unwrap()), Some(id));
}

#[test]
fn a_server_request_is_filed_by_method_first_even_with_one_of_our_ids() {
    // The server numbers its own requests and may reuse an id we sent (principle 2).
    let (conn, _, requests, watch) = connect(|text| match id_of(text) {
        Some(id) => vec![
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"elicitation/create","params":{{}}}}"#),
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_string(),
            "not json at all".to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#),
        ],
        None => Vec::new(),
    });
    let (reply, _) = conn.request(&Req::plain("tools/call", None, Duration::from_secs(5)));
    assert!(reply.unwrap().contains(r#""result":{}"#));
    let seen = lock(&requests.seen).clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1, "elicitation/create");
    // The lines are filed in order on one thread: both were filed before the reply.
    assert_eq!(*lock(&watch.notes), ["notifications/tools/list_changed"]);
    assert_eq!(
        conn.skipped_lines(),
        1,
        "a line that is not JSON is counted and skipped"
    );
}

#[test]
fn an_answer_to_an_id_nobody_waits_for_is_ignored() {
    let (conn, _, requests, _) = connect(|text| match id_of(text) {
        Some(id) => vec![
            r#"{"jsonrpc":"2.0","id":999,"result":{"stray":true}}"#.to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"mine":true}}}}"#),
        ],
        None => Vec::new(),
    });
    let (reply, _) = conn.request(&Req::plain("x", None, Duration::from_secs(5)));
    assert!(reply.unwrap().contains("mine"));
    assert!(lock(&requests.seen).is_empty());
}

#[test]
fn no_answer_is_a_timeout_naming_the_request() {
    let (conn, _, _, _) = connect(|_| Vec::new());
    let t0 = Instant::now();
    let (reply, _) = conn.request(&Req::plain("slow", None, Duration::from_millis(100)));
    match reply {
        Err(RequestError::Timeout(id)) => assert!(id > 0),
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(!conn.is_pending(1), "given up: no longer pending");
}

#[test]
fn progress_restarts_the_idle_timeout_and_goes_to_the_sink() {
    // Progress every 60 ms for 300 ms against an idle timeout of 150 ms: the call lives.
    let (conn, _, _, _) = connect(|text| {
        let Some(id) = id_of(text) else {
            return Vec::new();
        };
        let token = serde_json::from_str::<Value>(text).unwrap()["params"]["_meta"]
            ["progressToken"]
            .as_u64()
            .unwrap();
        let mut lines = Vec::new();
        for i in 1..=5 {
            lines.push(format!("sleep:{}", 60));
            lines.push(format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":{i},"total":5}}}}"#
            ));
        }
        lines.push(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"done":true}}}}"#
        ));
        lines
    });
    let notes: Mutex<Vec<String>> = Mutex::default();
    let sink = |p: &str| lock(&notes).push(p.to_string());
    let req = Req {
        progress_token: Some(77),
        sink: Some(&sink),
        limits: Limits {
            idle: Duration::from_millis(150),
            total: Duration::from_secs(10),
        },
        ..Req::plain(
            "tools/call",
            Some(r#"{"_meta":{"progressToken":77}}"#),
            Duration::ZERO,
        )
    };
    let (reply, _) = conn.request(&req);
    assert!(reply.unwrap().contains("done"));
    let got = lock(&notes).clone();
    assert_eq!(got.len(), 5, "{got:?}");
    assert_eq!(got[0], r#"{"progress":1,"total":5}"#);
}

#[test]
fn a_failed_connection_fails_what_waits_and_what_comes_after() {
    let (conn, _, _, watch) = connect(|_| Vec::new());
    let waiting = {
        let conn = conn.clone();
        std::thread::spawn(move || {
            conn.request(&Req::plain("x", None, Duration::from_secs(30)))
                .0
        })
    };
    while !conn.is_pending(1) {
        std::thread::sleep(Duration::from_millis(2));
    }
    conn.fail_all(RequestError::Lost("the child exited".into()));
    assert_eq!(
        waiting.join().unwrap(),
        Err(RequestError::Lost("the child exited".into()))
    );
    assert!(conn.is_dead());
    let (later, _) = conn.request(&Req::plain("y", None, Duration::from_secs(30)));
    assert_eq!(later, Err(RequestError::Lost("the child exited".into())));
    assert_eq!(lock(&watch.failed).len(), 1, "the watcher is told once");
}

#[test]
fn a_cancel_ends_the_request_it_names() {
    let (conn, _, _, _) = connect(|_| Vec::new());
    let (tx, rx) = mpsc::channel();
    let waiting = {
        let conn = conn.clone();
        std::thread::spawn(move || {
            let started = move |id: u64| {
                let _ = tx.send(id);
            };
            let req = Req {
                started: &started,
                ..Req::plain("x", None, Duration::from_secs(30))
            };
            conn.request(&req).0
        })
    };
    let id = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(conn.cancel_request(id));
    assert_eq!(waiting.join().unwrap(), Err(RequestError::Cancelled));
    assert!(!conn.cancel_request(id), "once");
}
