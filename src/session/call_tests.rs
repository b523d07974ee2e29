//! The call loop ([`super::call`]) against a fake transport: what a `tools/call` sends in each
//! era, how its result is shaped, MRTR rounds (their bound, `requestState` echoed, a new id per
//! round), a server that asks with no resolver registered, an unknown `resultType`, a
//! timeout (the server told), a -32042 without a resolver, a call cancelled before it is sent.

use super::{on_fake, CallCtl, CallState, Era};
use crate::host::Host;
use crate::responder::{Resolver, ResolverReturn, Token};
use crate::transport::fake::id_of;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SPEC: &str = r#"{"command":["unused"],"timeout":5000}"#;

fn result(text: &str, body: Value) -> Vec<String> {
    match id_of(text) {
        Some(id) => vec![json!({"jsonrpc":"2.0","id":id,"result":body}).to_string()],
        None => Vec::new(),
    }
}

fn output(r: &str) -> (String, bool) {
    let v: Value = serde_json::from_str(r).unwrap();
    (
        v["output"].as_str().unwrap_or("").to_string(),
        v["isError"] == json!(true),
    )
}

/// A resolver that accepts every question at once, counting them.
struct Accept(AtomicUsize);

impl Resolver for Accept {
    fn call(&self, _request_json: &str, token: Token) -> ResolverReturn {
        self.0.fetch_add(1, Ordering::Relaxed);
        let _ = crate::responder::answer(token, r#"{"ok":true,"data":{"name":"Ada"}}"#);
        ResolverReturn::Resolved
    }
}

fn host(r: Arc<dyn Resolver>) -> Host {
    Host {
        resolver: r,
        elicitation_timeout: Duration::from_secs(10),
        owner: 4242,
        active: Arc::default(),
    }
}

#[test]
fn a_handshake_era_call_sends_its_progress_token_and_shapes_the_result() {
    let (s, fake) = on_fake(SPEC, Era::Legacy, None, |t| {
        result(t, json!({"content":[{"type":"text","text":"hi"}]}))
    });
    let r = s.call("echo", r#"{"text":"hi"}"#, &CallCtl::PLAIN).unwrap();
    assert_eq!(r, r#"{"output":"hi","isError":false}"#);
    let sent = fake.sent_values();
    assert_eq!(sent[0]["method"], "tools/call");
    assert_eq!(sent[0]["params"]["name"], "echo");
    assert_eq!(sent[0]["params"]["arguments"], json!({"text":"hi"}));
    assert!(
        sent[0]["params"]["_meta"]["progressToken"].is_u64(),
        "{}",
        sent[0]
    );
}

#[test]
fn a_2026_call_carries_the_envelope() {
    let (s, fake) = on_fake(SPEC, Era::Modern, None, |t| {
        result(
            t,
            json!({"resultType":"complete","content":[{"type":"text","text":"ok"}]}),
        )
    });
    assert_eq!(
        output(&s.call("echo", "{}", &CallCtl::PLAIN).unwrap()),
        ("ok".into(), false)
    );
    let meta = &fake.sent_values()[0]["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({}),
        "no resolver: no elicitation"
    );
}

#[test]
fn mrtr_rounds_are_bounded_and_echo_the_request_state_with_a_new_id() {
    let rounds = Arc::new(AtomicUsize::new(0));
    let r2 = rounds.clone();
    let (s, fake) = on_fake(
        SPEC,
        Era::Modern,
        Some(host(Arc::new(Accept(AtomicUsize::new(0))))),
        move |t| {
            let n = r2.fetch_add(1, Ordering::Relaxed);
            result(
                t,
                json!({"resultType":"input_required","requestState":format!("state-{n}"),
            "inputRequests":{"q":{"method":"elicitation/create","params":{"message":"again?",
                "requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}}}),
            )
        },
    );
    let (out, err) = output(&s.call("ask", "{}", &CallCtl::PLAIN).unwrap());
    assert!(err && out.contains("after 10 rounds"), "{out}");
    let sent: Vec<Value> = fake.sent_values();
    assert_eq!(sent.len(), 11, "the first request and 10 retries");
    for (i, r) in sent.iter().enumerate().skip(1) {
        assert_eq!(
            r["params"]["requestState"],
            format!("state-{}", i - 1),
            "{r}"
        );
        assert_eq!(
            r["params"]["inputResponses"]["q"]["action"], "accept",
            "{r}"
        );
        assert_ne!(r["id"], sent[i - 1]["id"], "a new id per round");
    }
}

#[test]
fn a_server_that_asks_with_no_resolver_registered_says_so() {
    let (s, _) = on_fake(SPEC, Era::Modern, None, |t| {
        result(
            t,
            json!({"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"?"}}}}),
        )
    });
    let (out, err) = output(&s.call("ask", "{}", &CallCtl::PLAIN).unwrap());
    assert!(err && out.contains("no resolver is registered"), "{out}");
}

#[test]
fn an_unknown_result_type_is_an_is_error_naming_it() {
    let (s, _) = on_fake(SPEC, Era::Modern, None, |t| {
        result(t, json!({"resultType":"sideways"}))
    });
    let (out, err) = output(&s.call("x", "{}", &CallCtl::PLAIN).unwrap());
    assert!(
        err && out.contains("unknown resultType `sideways`") && out.contains("server `fx`"),
        "{out}"
    );
}

#[test]
fn a_timeout_is_an_is_error_and_the_server_is_told() {
    let (s, fake) = on_fake(SPEC, Era::Legacy, None, |_| Vec::new());
    let ctl = CallCtl {
        timeout: Some(Duration::from_millis(100)),
        ..CallCtl::PLAIN
    };
    let (out, err) = output(&s.call("slow", "{}", &ctl).unwrap());
    assert!(
        err && out.contains("timed out: no answer within 100 ms"),
        "{out}"
    );
    let sent = fake.sent_values();
    let cancel = sent
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("told");
    assert_eq!(cancel["params"]["requestId"], sent[0]["id"]);
}

#[test]
fn a_browser_step_without_a_resolver_is_named() {
    let (s, _) = on_fake(SPEC, Era::Legacy, None, |t| {
        match id_of(t) {
        Some(id) => vec![json!({"jsonrpc":"2.0","id":id,"error":{"code":-32042,"message":"go",
            "data":{"elicitations":[{"mode":"url","url":"https://example.com/a","elicitationId":"e1","message":"Sign in"}]}}}).to_string()],
        None => Vec::new(),
    }
    });
    let (out, err) = output(&s.call("x", "{}", &CallCtl::PLAIN).unwrap());
    assert!(
        err && out.contains("browser step (-32042)") && out.contains("no resolver"),
        "{out}"
    );
}

#[test]
fn a_call_cancelled_before_it_is_sent_sends_nothing() {
    let (s, fake) = on_fake(SPEC, Era::Legacy, None, |t| {
        result(t, json!({"content":[]}))
    });
    let state = CallState::default();
    state.cancel();
    let ctl = CallCtl {
        state: Some(&state),
        ..CallCtl::PLAIN
    };
    let (out, err) = output(&s.call("x", "{}", &ctl).unwrap());
    assert!(err && out.contains("was cancelled"), "{out}");
    assert!(fake.sent_values().is_empty());
}
