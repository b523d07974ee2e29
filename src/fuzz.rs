//! In-test fuzzing on stable: a small mutation fuzzer over seed corpora for the pure
//! bridge functions (through the C ABI), JSON-RPC line classification, SSE parsing, config
//! parsing and result shaping. The invariant everywhere: no panic, and every success is valid
//! JSON. Short by default (part of `cargo test`); `FUZZ_SECONDS=600 cargo test --release
//! fuzz_ -- --nocapture --test-threads 1` runs each target for ten minutes.
#![allow(unsafe_code)] // calls the C ABI, as a host would

use std::ffi::{c_char, c_void, CStr, CString};
use std::time::{Duration, Instant};

/// xorshift64*: deterministic per seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b"\\u",
    b"\\ud800",
    b":",
    b",",
    b"0",
    b"-1",
    b"1e999",
    b"1.5E+3",
    b"null",
    b"true",
    b"false",
    b"\xff",
    b"\xc3\xa9",
    b"\xf0\x9f\x98\x80",
    b"\n",
    b"\r",
    b"\"mode\":\"url\"",
    b"\"ok\":true",
    b"\"data\":",
    b"\"method\":",
    b"\"id\":",
    b"data: ",
    b"id: ",
    b"retry: ",
    b"event: ",
    b"\"requestedSchema\":",
    b"\"url\":\"u\"",
    b"\"params\":",
    b"\"elicitation/create\"",
    b"\"ping\"",
    b"\x00",
];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                let i = rng.below(v.len() + 1);
                v.splice(i..i, t.iter().copied());
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                let j = (i + 1 + rng.below(8)).min(v.len());
                v.drain(i..j);
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                let j = (i + 1 + rng.below(16)).min(v.len());
                let chunk = v[i..j].to_vec();
                let k = rng.below(v.len() + 1);
                v.splice(k..k, chunk);
            }
            4 if !corpus.is_empty() => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(v.len() + 1);
                let from = rng.below(other.len() + 1);
                v.truncate(cut);
                v.extend_from_slice(&other[from..]);
            }
            _ => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
        }
    }
    v
}

fn budget() -> Duration {
    std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map(Duration::from_secs_f64)
        .unwrap_or(Duration::from_millis(1500))
}

/// Runs `target` on mutations of `seeds` until the time budget is spent.
fn fuzz(name: &str, seeds: &[&str], mut target: impl FnMut(&[u8])) {
    let corpus: Vec<Vec<u8>> = seeds.iter().map(|s| s.as_bytes().to_vec()).collect();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ name.len() as u64);
    let deadline = Instant::now() + budget();
    let mut runs = 0u64;
    for s in &corpus {
        target(s);
    }
    while Instant::now() < deadline {
        for _ in 0..64 {
            let base = &corpus[rng.below(corpus.len())];
            let input = mutate(&mut rng, base, &corpus);
            target(&input);
            runs += 1;
        }
    }
    eprintln!("fuzz {name}: {runs} inputs, no failure");
}

fn assert_json(text: &str, what: &str) {
    assert!(
        serde_json::from_str::<serde_json::Value>(text).is_ok(),
        "{what} produced invalid JSON: {text}"
    );
}

fn take(p: *mut c_char) -> String {
    // SAFETY: a string the library just returned; freed right after the copy.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: returned by the library, freed once.
    unsafe { crate::ffi::tn_string_free(p) };
    s
}

type PureFn = unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> i32;

fn check_pure(f: PureFn, input: &[u8], what: &str) {
    let Ok(c) = CString::new(input) else { return };
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: a valid C string and out-pointer.
    let st = unsafe { f(c.as_ptr(), &mut out) };
    assert_ne!(
        st,
        crate::ffi::TN_ERR_PANIC,
        "{what} panicked on {:?}",
        String::from_utf8_lossy(input)
    );
    if st == crate::ffi::TN_OK {
        assert_json(&take(out), what);
    } else {
        assert!(out.is_null(), "{what} set output on error");
    }
}

const PARAMS: &[&str] = &[
    r#"{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}"#,
    r#"{"mode":"url","message":"Log in","url":"https://x/auth","elicitationId":"e"}"#,
    r#"{"message":1E2,"requestedSchema":{"minimum":1.0,"x":[true,null]}}"#,
    r#"{"ok":true,"data":{"name":"muthu","n":123456789012345678901234567890}}"#,
    r#"{"ok":false,"reason":"declined"}"#,
    r#""emoji😀 name.x""#,
];

#[test]
fn fuzz_bridge_pure_functions() {
    fuzz("bridge", PARAMS, |input| {
        check_pure(
            crate::ffi::tn_elicitation_to_request,
            input,
            "tn_elicitation_to_request",
        );
        check_pure(
            crate::ffi::tn_answer_to_result,
            input,
            "tn_answer_to_result",
        );
        check_pure(crate::ffi::tn_sanitize_name, input, "tn_sanitize_name");
    });
}

unsafe extern "C" fn answering_resolver(
    ud: *mut c_void,
    _req: *const c_char,
    responder: *mut crate::ffi::resolver::tn_responder,
) -> i32 {
    // SAFETY: the test passes a pointer to a live CString as user data.
    let answer = unsafe { &*(ud as *const CString) };
    // SAFETY: valid responder handle and C string.
    unsafe { crate::ffi::tn_responder_answer(responder, answer.as_ptr()) };
    crate::ffi::TN_RESOLVED
}

#[test]
fn fuzz_server_request_response() {
    let seeds = [
        r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"m","requestedSchema":{}}}"#,
        r#"{"jsonrpc":"2.0","id":"s","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
    ];
    let answers = [
        CString::new(r#"{"ok":true,"data":{"name":"x"}}"#).unwrap(),
        CString::new(r#"{"ok":"yes"}"#).unwrap(),
        CString::new("not json").unwrap(),
    ];
    let mut i = 0;
    fuzz("server_request_response", &seeds, |input| {
        let Ok(c) = CString::new(input) else { return };
        i += 1;
        let ud = &answers[i % answers.len()] as *const CString as *mut c_void;
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid strings, out-pointer and resolver.
        let st = unsafe {
            crate::ffi::tn_server_request_response(
                Some(answering_resolver),
                ud,
                c.as_ptr(),
                &mut out,
            )
        };
        assert_ne!(
            st,
            crate::ffi::TN_ERR_PANIC,
            "panicked on {:?}",
            String::from_utf8_lossy(input)
        );
        if st == crate::ffi::TN_OK && !out.is_null() {
            assert_json(&take(out), "tn_server_request_response");
        }
    });
}

#[test]
fn fuzz_config_parsing() {
    let seeds = [
        r#"{"mcpServers":{"a":{"command":["x","y"],"env":{"K":"V"},"timeout":5,"tools":{"t":true}}}}"#,
        r#"{"servers":{"r":{"url":"https://h/mcp","headers":{"A":"${HOME}"},"type":"remote"}}}"#,
        r#"{"b":{"command":"npx","args":["-y"],"disabled":false,"elicitationTimeout":1.5}}"#,
    ];
    fuzz("config", &seeds, |input| {
        if let Ok(text) = std::str::from_utf8(input) {
            let _ = crate::config::parse(text);
        }
    });
}

struct NoResolver;
impl crate::responder::Resolver for NoResolver {
    fn call(&self, _: &str, token: crate::responder::Token) -> crate::responder::ResolverReturn {
        let _ = crate::responder::answer(token, r#"{"ok":true,"data":{"a":1}}"#);
        crate::responder::ResolverReturn::Resolved
    }
}

#[test]
fn fuzz_jsonrpc_line_classification() {
    let conn = crate::conn::Conn::new(
        "fuzz",
        Some(crate::live_bridge::LiveBridge {
            resolver: std::sync::Arc::new(NoResolver),
            elicitation_timeout: Duration::from_secs(5),
            owner: u64::MAX,
            active: std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }),
    );
    let seeds = [
        r#"{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"integer","default":3}},"required":["a"]}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
    ];
    fuzz("jsonrpc", &seeds, |input| conn.on_line(input));
}

#[test]
fn fuzz_sse_parsing() {
    use futures_util::StreamExt;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let seeds = [
        "id: 1\nretry: 500\ndata: \n\nevent: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        ": ping\r\ndata: [{\"a\":1},{\"b\":2}]\r\n\r\nevent: endpoint\r\ndata: /m?x=1\r\n\r\n",
        "data: {\"x\":\ndata: 1}\n\n",
    ];
    let mut rng = Rng(42);
    fuzz("sse", &seeds, |input| {
        // random chunking exercises the parser's and the cap's state across chunk borders
        let mut chunks = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let n = 1 + rng.below(rest.len().min(17));
            chunks.push(Ok::<_, std::io::Error>(bytes::Bytes::copy_from_slice(
                &rest[..n],
            )));
            rest = &rest[n..];
        }
        let max = 16 + rng.below(200);
        rt.block_on(async {
            let capped = crate::transport::sse::capped(futures_util::stream::iter(chunks), max);
            let mut events = sse_stream::SseByteStream::new(capped);
            while let Some(Ok(ev)) = events.next().await {
                if let Some(d) = ev.data {
                    assert!(d.len() <= max, "an event beyond the cap got through");
                    for m in crate::transport::sse::messages(&d) {
                        assert_ne!(
                            crate::jsonrpc::line_kind(m.as_bytes()),
                            crate::jsonrpc::LineKind::Invalid,
                            "sse passed on a message the reader rejects: {m}"
                        );
                    }
                }
            }
        });
    });
}

#[test]
fn fuzz_result_shaping() {
    let seeds = [
        r#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}"#,
        r#"{"content":[{"type":"text","text":" "}],"isError":true}"#,
        r#"{"content":[],"structuredContent":{"b":1.50,"a":[1e2]}}"#,
        r#"{"content":[{"type":"resource","resource":{"uri":"file:///x"}},{"type":"audio","data":"=="}]}"#,
    ];
    fuzz("shape", &seeds, |input| {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(input) {
            let slow = crate::shape::tool_result(&v);
            assert_json(&slow, "tool_result");
            // the borrowed fast path must agree with the value path
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
                String::from_utf8_lossy(input)
            );
            if let Ok(fast) = crate::shape::from_response(&line) {
                assert_eq!(
                    fast,
                    slow,
                    "fast and slow shaping differ on {:?}",
                    String::from_utf8_lossy(input)
                );
            }
        }
    });
}

/// Text that `canon::canonical` accepts must be exactly what serde_json writes after parsing it
/// (the listed tools are passed on as their text on that promise).
#[test]
fn fuzz_canonical_is_serde_json_output() {
    let seeds = [
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"echo","description":"Echo \"it\"\n\u001f","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}],"nextCursor":"c"}}"#,
        r#"{"a":[1,-0.5,123456789012345678901234567890,true,false,null,{"b":{}},[]],"s":"\\\b\f\n\r\t\u0000é😀"}"#,
        r#"[{"a":1,"b":{"a":2}},"x",0.0,-0]"#,
    ];
    let mut accepted = 0u64;
    fuzz("canonical", &seeds, |input| {
        let Ok(text) = std::str::from_utf8(input) else {
            return;
        };
        if !crate::canon::canonical(text) {
            return;
        }
        accepted += 1;
        let v: serde_json::Value = serde_json::from_str(text).expect("canonical text is JSON");
        assert_eq!(
            crate::json::to_text(&v),
            text,
            "not as serde_json writes it"
        );
    });
    eprintln!("fuzz canonical: {accepted} of them canonical");
    assert!(accepted >= 3, "the seeds are canonical");
}

/// A `tools/list` page read by position gives the same tools, names, rendering and cursor as
/// the same page parsed into values.
#[test]
fn fuzz_listing_by_position_matches_parsing() {
    let seeds = [
        r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"echo","description":"Echo "it"
","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},{"name":"x.y","source":1,"annotations":{"title":"é"},"inputSchema":[]},7],"nextCursor":"c2"}}"#,
        r#"{"id":3,"error":{"code":-32601},"result":{"x":{"tools":[{"name":"no"}]},"tools":[{"description":null,"name":"a"}]}}"#,
    ];
    let render = |t: &crate::listing::ListedTool| {
        let mut out = Vec::new();
        t.write(&mut out, "s_t", "s", "t");
        out
    };
    let mut by_position = 0u64;
    fuzz("listing", &seeds, |input| {
        let Ok(text) = std::str::from_utf8(input) else {
            return;
        };
        let Some((fast, fast_cursor)) = crate::listing::page(text) else {
            return;
        };
        by_position += 1;
        let (slow, slow_cursor) =
            crate::listing::parsed_page(text).expect("a canonical page parses");
        assert_eq!(fast_cursor, slow_cursor, "{text}");
        assert_eq!(fast.len(), slow.len(), "{text}");
        for (a, b) in fast.iter().zip(&slow) {
            assert_eq!(a.name(), b.name(), "{text}");
            assert_eq!(render(a), render(b), "{text}");
        }
    });
    eprintln!("fuzz listing: {by_position} of them read by position");
    assert!(by_position >= 2, "the seeds are read by position");
}

/// The hot-path scanner must accept exactly what serde_json accepts (as an object), and decode
/// strings exactly as it does.
#[test]
fn fuzz_scanner_matches_serde_json() {
    let seeds = [
        r#"{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"a\"\u00e9\ud83d\ude00"}],"isError":false}}"#,
        r#"{"a":[1,-0.5e-3,1E+2,true,false,null,{"b":{}},[]],"s":"\\\/\b\f\n\r\t"}"#,
        r#"{"deep":[[[[[[[[[[{"x":[0]}]]]]]]]]]]}"#,
    ];
    fuzz("scanner", &seeds, |input| {
        let ours = crate::scan::top_level(input).is_some();
        let Ok(text) = std::str::from_utf8(input) else {
            return;
        };
        let serde = serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_object());
        assert_eq!(ours, serde, "validity differs on {text:?}");
        if ours {
            for (k, v) in crate::scan::entries(text).expect("entries of a valid object") {
                assert_eq!(
                    crate::scan::decode_string(k).map(|c| c.into_owned()),
                    serde_json::from_str::<String>(k).ok(),
                    "key decoding differs on {k:?}"
                );
                if v.starts_with('"') {
                    assert_eq!(
                        crate::scan::decode_string(v).map(|c| c.into_owned()),
                        serde_json::from_str::<String>(v).ok(),
                        "string decoding differs on {v:?}"
                    );
                }
            }
        }
    });
}
