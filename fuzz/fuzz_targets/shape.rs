//! Result shaping (§1): the fast path, from what the reader's one validating pass noted of a
//! response line, gives exactly what the value path gives, and both give JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::fuzzing::{shaped, shaped_line};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let slow = shaped(&v);
    assert!(serde_json::from_str::<serde_json::Value>(&slow).is_ok(), "not JSON: {slow}");
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
        String::from_utf8_lossy(data)
    );
    if let Some(fast) = shaped_line(&line) {
        assert_eq!(fast, slow, "fast and value paths differ on {line}");
    }
});
