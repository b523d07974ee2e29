//! The JSON fast paths against serde_json: the hot-path scanner accepts exactly the objects
//! serde_json accepts and decodes strings as it does; what its one pass notes for the caller
//! (the top-level `result` and `error`, a common-shape result's text parts) is what serde_json
//! reads there; text the canonical check accepts is exactly what serde_json writes after
//! parsing it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::fuzzing::{
    canonical, scanned_entries, scanned_members, scanned_object, scanned_string, to_text,
};

fuzz_target!(|data: &[u8]| {
    let ours = scanned_object(data);
    // The scanner works on bytes; the reader checks UTF-8 after it (§5).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // serde_json with `arbitrary_precision` and `raw_value` reads these keys as its own number
    // and raw-value tokens and refuses such objects (found by this target): a known limit of
    // serde_json, not of the scanner.
    if text.contains("$serde_json::private::") {
        return;
    }
    let parsed = serde_json::from_str::<Value>(text);
    let serde = parsed.as_ref().is_ok_and(|v| v.is_object());
    assert_eq!(ours, serde, "validity differs on {text:?}");
    if ours {
        let entries = scanned_entries(text).expect("entries of a valid object");
        for (k, v) in &entries {
            assert_eq!(scanned_string(k), serde_json::from_str::<String>(k).ok(), "key {k:?}");
            if v.starts_with('"') {
                assert_eq!(scanned_string(v), serde_json::from_str::<String>(v).ok(), "{v:?}");
            }
        }
        members_agree(text, parsed.as_ref().expect("valid"), &entries);
    }
    if canonical(text) {
        let v = parsed.expect("canonical text is JSON");
        assert_eq!(to_text(&v), text, "canonical, yet not as serde_json writes it");
    }
});

/// What the validating pass noted of `text` is what serde_json reads there.
fn members_agree(text: &str, v: &Value, entries: &[(String, String)]) {
    let (result, error, parse_instead, shape) = scanned_members(text.as_bytes()).expect("valid");
    let escaped = entries.iter().any(|(k, _)| k.contains('\\'));
    assert_eq!(parse_instead, escaped, "parse_instead on {text:?}");
    if escaped {
        return;
    }
    let at = |raw: &Option<String>| raw.as_deref().map(|r| serde_json::from_str::<Value>(r).ok());
    assert_eq!(at(&result), v.get("result").map(|r| Some(r.clone())), "result of {text:?}");
    assert_eq!(at(&error), v.get("error").map(|e| Some(e.clone())), "error of {text:?}");
    let Some((is_error, texts)) = shape else {
        return;
    };
    // A common shape: exactly the text parts, with `isError` as it reads.
    let r = v.get("result").and_then(Value::as_object).expect("a common result is an object");
    assert_eq!(r.get("isError") == Some(&Value::Bool(true)), is_error, "isError of {text:?}");
    assert!(matches!(r.get("structuredContent"), None | Some(Value::Null)), "{text:?}");
    let parts: &[Value] = r.get("content").and_then(Value::as_array).map_or(&[], |a| a);
    assert_eq!(parts.len(), texts.len(), "text parts of {text:?}");
    for (part, raw) in parts.iter().zip(&texts) {
        assert_eq!(part.get("type"), Some(&Value::String("text".into())), "{text:?}");
        let decoded = serde_json::from_str::<Value>(raw).ok();
        assert_eq!(part.get("text"), decoded.as_ref(), "a text part of {text:?}");
    }
}
