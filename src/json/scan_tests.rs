//! The byte scanner against serde_json (`scan.rs`; the fuzz targets `json` and `shape` check
//! far more inputs).

use super::scan::*;
use std::ops::Range;

#[test]
fn finds_top_level_keys_only() {
    let t = top_level(br#" {"jsonrpc":"2.0","result":{"id":9,"method":"x","s":"a\"}b"},"id":12} "#)
        .unwrap();
    assert_eq!(t.id, Some(&b"12"[..]));
    assert_eq!(t.method, None);
    let t = top_level(br#"{"method":"ping","id":"s-1","params":[1,{"a":[]}]}"#).unwrap();
    assert_eq!(t.method, Some(&br#""ping""#[..]));
    assert_eq!(t.id, Some(&br#""s-1""#[..]));
    assert_eq!(top_level(b"{}"), Some(TopLevel::default()));
}

/// Agrees with serde_json on what is valid (the fuzz target checks far more inputs).
#[test]
fn as_strict_as_serde_json() {
    let cases: &[&[u8]] = &[
        b"[1]",
        b"nope",
        b"{",
        br#"{"a":1"#,
        br#"{"a":1} x"#,
        br#"{"a" 1}"#,
        br#"{"a":}"#,
        br#"{"a":"unterminated}"#,
        br#"{"a":[1,2}"#,
        b"",
        br#"{"a":01}"#,
        br#"{"a":1.}"#,
        br#"{"a":-}"#,
        br#"{"a":1e}"#,
        br#"{"a":1E+2}"#,
        br#"{"a":-0.5e-3}"#,
        br#"{"a":tru}"#,
        br#"{"a":"\ud800"}"#,
        br#"{"a":"\udc00"}"#,
        br#"{"a":"\ud83d\ude00"}"#,
        br#"{"a":"\x"}"#,
        b"{\"a\":\"tab\there\"}",
        br#"{"a":[]}"#,
        br#"{"a":[,]}"#,
        br#"{"a":[1,]}"#,
        br#"{"a":{},}"#,
        br#"{"a":true,"b":false,"c":null}"#,
        br#"{"\u0069d":1}"#,
    ];
    for c in cases {
        let ours = top_level(c).is_some();
        let serde = serde_json::from_slice::<serde_json::Value>(c).is_ok_and(|v| v.is_object());
        assert_eq!(ours, serde, "{}", String::from_utf8_lossy(c));
    }
    let deep = |n: usize| format!("{{\"a\":{}{}}}", "[".repeat(n), "]".repeat(n));
    for n in [120, 125, 126, 127, 128] {
        let d = deep(n);
        let serde = serde_json::from_str::<serde_json::Value>(&d).is_ok();
        assert_eq!(top_level(d.as_bytes()).is_some(), serde, "depth {n}");
    }
}

#[test]
fn reads_parts_of_valid_text() {
    let e = entries(r#"{"a" : [1, {"b":2}], "c":"x\"y"}"#).unwrap();
    assert_eq!(
        e,
        vec![(r#""a""#, r#"[1, {"b":2}]"#), (r#""c""#, r#""x\"y""#)]
    );
    assert!(entries(r#"{"a":1"#).is_none());
    assert_eq!(decode_string(r#""plain""#).unwrap(), "plain");
    assert_eq!(
        decode_string(r#""a\n\"\u00e9\ud83d\ude00\/""#).unwrap(),
        "a\n\"é😀/"
    );
    assert!(decode_string(r#""\ud800""#).is_none());
    assert_eq!(decode_string(r#""a\\b\tc\u0041""#).unwrap(), "a\\b\tcA");
}

/// A literal counts as written the serde_json way exactly when re-escaping its content
/// gives it back.
#[test]
fn serde_json_escapes_are_recognised() {
    for lit in [
        r#""plain é""#,
        r#""{\"a\":\"b\\c\"}\n""#,
        r#""\u001f\u0000\b\f\r\t""#,
        r#""\/""#,
        r#""\u0041""#,
        r#""\u001F""#,
        r#""\u000a""#,
        r#""\ud83d\ude00""#,
        r#""\u00e9""#,
    ] {
        let decoded = decode_string(lit).unwrap();
        let again = serde_json::to_string(decoded.as_ref()).unwrap();
        assert_eq!(escaped_as_serde_json(lit), again == lit, "{lit}");
    }
}

fn members(line: &str) -> Members {
    top_level(line.as_bytes()).unwrap().members
}

fn texts<'a>(line: &'a str, t: &TextResult) -> Vec<&'a str> {
    t.texts().map(|r| &line[r]).collect()
}

/// The one pass notes where `result` and `error` are (the last of duplicates).
#[test]
fn notes_result_and_error() {
    let line = r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1]} ,"error":{"code":-1}}"#;
    let m = members(line);
    assert_eq!(&line[m.result().unwrap()], r#"{"a":[1]}"#);
    assert_eq!(&line[m.error().unwrap()], r#"{"code":-1}"#);
    assert!(!m.parse_instead);
    let line = r#"{"result":1,"result":"two","\u0069d":3}"#;
    let m = members(line);
    assert_eq!(&line[m.result().unwrap()], r#""two""#);
    assert!(m.parse_instead && m.text_result.is_none() && m.error().is_none());
}

/// A result's text parts are noted when it has the common shape, and only then.
#[test]
fn notes_the_common_shape() {
    let line = r#"{"id":1,"result":{"content":[{"type":"text","text":"a\n"},{"text":"b","type":"text","x":[{}]}],"isError":false}}"#;
    let t = members(line).text_result.unwrap();
    assert_eq!(texts(line, &t), [r#""a\n""#, r#""b""#]);
    assert!(!t.is_error);
    let line = r#"{"id":1,"result":{"isError":true,"structuredContent":null}}"#;
    let t = members(line).text_result.unwrap();
    assert!(t.is_error && t.texts().len() == 0);
    let line = r#"{"id":1,"result":{"content":5,"content":[{"type":"text","text":"z"}]}}"#;
    assert_eq!(texts(line, &members(line).text_result.unwrap()), [r#""z""#]);
    for not_common in [
        r#"{"result":{"content":[{"type":"image","data":""}]}}"#,
        r#"{"result":{"content":[{"type":"text","text":5}]}}"#,
        r#"{"result":{"content":[{"type":"text"}]}}"#,
        r#"{"result":{"content":[{"type":"t\u0065xt","text":"a"}]}}"#,
        r#"{"result":{"content":[{"type":"text","t\u0065xt":"a"}]}}"#,
        r#"{"result":{"content":[1]}}"#,
        r#"{"result":{"content":{}}}"#,
        r#"{"result":{"content":[],"structuredContent":{}}}"#,
        r#"{"result":{"content":[],"isError":1}}"#,
        r#"{"result":{"c\u006fntent":[]}}"#,
        r#"{"result":[]}"#,
        r#"{"result":{"content":[{"type":"text","text":"1"},{"type":"text","text":"2"},{"type":"text","text":"3"},{"type":"text","text":"4"},{"type":"text","text":"5"}]}}"#,
    ] {
        assert_eq!(members(not_common).text_result, None, "{not_common}");
    }
    // A later result replaces what an earlier one noted.
    let line = r#"{"result":{"content":[]},"result":null}"#;
    assert_eq!(members(line).text_result, None);
}

/// What the pass notes is what serde_json reads there (the fuzz target `json` checks far
/// more lines).
#[test]
fn members_match_serde_json() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}"#,
        r#"{"id":1,"error":{"code":-32042,"data":[1,{"a":"b"}]},"result":null}"#,
        r#"{"id":1,"result":{"content":[{"type":"text","text":"a\u00e9\n"},{"type":"text","text":"","type":"text"}],"isError":null}}"#,
        r#"{"id":1,"result":{"isError":true,"isError":false,"content":[]},"error":"x"}"#,
        r#" { "id" : 1 , "result" : { "content" : [ { "type" : "text" , "text" : "s p" } ] } } "#,
        r#"{"result":{"content":[{"type":"image"}]}}"#,
        r#"{"error":{"code":1},"error":{"code":2}}"#,
    ];
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let m = members(line);
        let at = |r: Option<Range<usize>>| r.map(|r| serde_json::from_str(&line[r]).unwrap());
        assert_eq!(at(m.result()).as_ref(), v.get("result"), "{line}");
        assert_eq!(at(m.error()).as_ref(), v.get("error"), "{line}");
        if let Some(t) = &m.text_result {
            let r = &v["result"];
            assert_eq!(
                r.get("isError") == Some(&serde_json::Value::Bool(true)),
                t.is_error
            );
            let parts = r
                .get("content")
                .and_then(|c| c.as_array())
                .cloned()
                .unwrap_or_default();
            let texts: Vec<serde_json::Value> = t
                .texts()
                .map(|r| serde_json::from_str(&line[r]).unwrap())
                .collect();
            let want: Vec<serde_json::Value> = parts.iter().map(|p| p["text"].clone()).collect();
            assert_eq!(texts, want, "{line}");
        }
    }
}

/// Strings are read eight bytes a step: a quote, backslash or control byte at any offset of a
/// step, and bytes at or above 0x80 beside them, read as serde_json reads them.
#[test]
fn strings_at_every_offset_of_a_step() {
    let specials = [
        "\"", "\\\\", "\\\"", "\\u0041", "\u{1}", "\u{1f}", "\u{7f}", "é", "😀", " ",
    ];
    for len in 0..20 {
        for at in 0..=len {
            for sp in specials {
                let body: String = (0..len).map(|i| if i == at { sp } else { "a" }).collect();
                for text in [format!(r#"{{"k":"{body}"}}"#), format!(r#"{{"{body}":1}}"#)] {
                    let serde = serde_json::from_str::<serde_json::Value>(&text).is_ok();
                    assert_eq!(top_level(text.as_bytes()).is_some(), serde, "{text:?}");
                    if serde {
                        let e = entries(&text).unwrap();
                        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                        let (k, raw) = e[0];
                        let key = decode_string(k).unwrap();
                        let want = &v[key.as_ref()];
                        let got: serde_json::Value = serde_json::from_str(raw).unwrap();
                        assert_eq!(&got, want, "{text:?}");
                    }
                }
            }
        }
    }
}
