//! The JSON fast paths against serde_json: the hot-path scanner accepts exactly the objects
//! serde_json accepts and decodes strings as it does; text the canonical check accepts is
//! exactly what serde_json writes after parsing it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::fuzzing::{canonical, scanned_entries, scanned_object, scanned_string, to_text};

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
    let parsed = serde_json::from_str::<serde_json::Value>(text);
    let serde = parsed.as_ref().is_ok_and(|v| v.is_object());
    assert_eq!(ours, serde, "validity differs on {text:?}");
    if ours {
        for (k, v) in scanned_entries(text).expect("entries of a valid object") {
            assert_eq!(scanned_string(&k), serde_json::from_str::<String>(&k).ok(), "key {k:?}");
            if v.starts_with('"') {
                assert_eq!(scanned_string(&v), serde_json::from_str::<String>(&v).ok(), "{v:?}");
            }
        }
    }
    if canonical(text) {
        let v = parsed.expect("canonical text is JSON");
        assert_eq!(to_text(&v), text, "canonical, yet not as serde_json writes it");
    }
});
