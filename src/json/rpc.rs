//! JSON-RPC 2.0 framing: classifying an inbound message (by `method` first: servers number
//! their own requests and may reuse our ids) and building reply frames.

use crate::error::{Error, Result};
use crate::json::scan::Members;
use serde::Deserialize;
use serde_json::{Map, Value};

/// What a raw line is, from its top-level `id` and `method` ([`super::scan`]).
#[derive(Debug, PartialEq)]
pub enum LineKind {
    /// A response to our request with this (numeric) id, and what the validating pass noted
    /// of it for its caller.
    Response(u64, Members),
    /// A server request or notification: parsed in full by the slow path.
    Message,
    /// A response to an id we never issue, or anything else: ignored.
    Other,
    /// Not a JSON object.
    Invalid,
}

/// Classifies one raw line (by `method` first, then `id`), validating it as strictly as
/// serde_json but without building anything: the reader's hot path.
pub fn line_kind(line: &[u8]) -> LineKind {
    let Some(top) = crate::json::scan::top_level(line) else {
        return LineKind::Invalid;
    };
    match (top.method, top.id) {
        (Some(m), _) if m.first() == Some(&b'"') => LineKind::Message,
        (None, Some(id)) => match std::str::from_utf8(id).ok().and_then(|t| t.parse().ok()) {
            Some(id) => LineKind::Response(id, top.members),
            None => LineKind::Other,
        },
        _ => LineKind::Other,
    }
}

/// The `result` of a response line, or its `error` object as the Err.
pub fn result_value(line: &str) -> std::result::Result<Value, Value> {
    #[derive(Deserialize)]
    struct Reply {
        #[serde(default)]
        result: Option<Value>,
        #[serde(default)]
        error: Option<Value>,
    }
    match serde_json::from_str::<Reply>(line) {
        Ok(Reply {
            result: Some(r), ..
        }) => Ok(r),
        Ok(Reply { error, .. }) => Err(error.unwrap_or(Value::Null)),
        Err(e) => Err(Value::String(format!("the response is not valid: {e}"))),
    }
}

/// What one inbound message is.
#[derive(Debug, PartialEq)]
pub enum Classified<'a> {
    /// A server request: a non-null `id` and a string `method`.
    Request {
        id: &'a Value,
        method: &'a str,
        params: Option<&'a Value>,
    },
    /// A string `method` and no (or a null) `id`.
    Notification {
        method: &'a str,
        params: Option<&'a Value>,
    },
    /// No `method`, a non-null `id`: the answer to one of our requests.
    Response { id: &'a Value },
    /// Anything else (a non-string `method`, neither id nor method): ignored.
    Other,
}

/// Classifies one message; only a message that is not a JSON object is an error.
pub fn classify(msg: &Value) -> Result<Classified<'_>> {
    let obj = msg.as_object().ok_or_else(|| {
        Error::invalid_argument(format!(
            "a JSON-RPC message must be a JSON object, got {}",
            crate::json::type_name(msg)
        ))
    })?;
    Ok(classify_object(obj))
}

/// The members of a server request or notification the reader acts on (§5), read from its line
/// without building the top-level map: other members are skipped unbuilt, and a repeated member
/// keeps its last value, as a parsed map would.
#[derive(Default)]
pub struct Envelope {
    pub id: Option<Value>,
    pub method: Option<Value>,
    pub params: Option<Value>,
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, Visitor};
        /// A member name, compared without allocating (escaped names arrive decoded).
        enum Key {
            Id,
            Method,
            Params,
            Other,
        }
        impl<'de> Deserialize<'de> for Key {
            fn deserialize<D: serde::Deserializer<'de>>(
                d: D,
            ) -> std::result::Result<Self, D::Error> {
                struct K;
                impl Visitor<'_> for K {
                    type Value = Key;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a member name")
                    }
                    fn visit_str<E: serde::de::Error>(
                        self,
                        v: &str,
                    ) -> std::result::Result<Key, E> {
                        Ok(match v {
                            "id" => Key::Id,
                            "method" => Key::Method,
                            "params" => Key::Params,
                            _ => Key::Other,
                        })
                    }
                }
                d.deserialize_identifier(K)
            }
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Envelope;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Envelope, A::Error> {
                let mut e = Envelope::default();
                while let Some(key) = a.next_key::<Key>()? {
                    // An id of null reads as None, no id (as in `classify_object`).
                    match key {
                        Key::Id => e.id = a.next_value()?,
                        Key::Method => e.method = Some(a.next_value()?),
                        Key::Params => e.params = Some(a.next_value()?),
                        Key::Other => {
                            a.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

/// [`classify`] for a message already known to be an object.
pub fn classify_object(obj: &Map<String, Value>) -> Classified<'_> {
    let id = obj.get("id").filter(|v| !v.is_null());
    match (obj.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Classified::Request {
            id,
            method,
            params: obj.get("params"),
        },
        (Some(Value::String(method)), None) => Classified::Notification {
            method,
            params: obj.get("params"),
        },
        (None, Some(id)) => Classified::Response { id },
        _ => Classified::Other,
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}`
pub fn result_frame(id: &Value, result: Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    m.insert("id".into(), id.clone());
    m.insert("result".into(), result);
    Value::Object(m)
}

/// `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`
pub fn error_frame(id: &Value, code: i64, message: &str) -> Value {
    let mut err = Map::new();
    err.insert("code".into(), Value::from(code));
    err.insert("message".into(), Value::String(message.into()));
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    m.insert("id".into(), id.clone());
    m.insert("error".into(), Value::Object(err));
    Value::Object(m)
}

/// A request line with a numeric id; `params_json` is already-valid JSON text, embedded as is.
pub fn request_text(id: u64, method: &str, params_json: Option<&str>) -> String {
    let mut s = String::new();
    write_request(&mut s, id, method, params_json);
    s
}

/// [`request_text`] into `s` (cleared first), whose capacity it reuses.
pub fn write_request(s: &mut String, id: u64, method: &str, params_json: Option<&str>) {
    s.clear();
    s.reserve(64 + method.len() + params_json.map_or(0, str::len));
    s.push_str(r#"{"jsonrpc":"2.0","id":"#);
    push_u64(s, id);
    s.push_str(r#","method":"#);
    push_json_string(s, method);
    if let Some(p) = params_json {
        s.push_str(r#","params":"#);
        s.push_str(p);
    }
    s.push('}');
}

/// Appends `n` in decimal (what `{n}` writes, without the formatting machinery: this runs for
/// every request).
pub fn push_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[i..].iter().map(|&d| char::from(d)));
}

/// A notification line; `params_json` is already-valid JSON text.
pub fn notification_text(method: &str, params_json: Option<&str>) -> String {
    let mut s = String::with_capacity(48 + params_json.map_or(0, str::len));
    s.push_str(r#"{"jsonrpc":"2.0","method":"#);
    push_json_string(&mut s, method);
    if let Some(p) = params_json {
        s.push_str(r#","params":"#);
        s.push_str(p);
    }
    s.push('}');
    s
}

/// Appends `v` as a JSON string literal, escaped exactly as serde_json escapes (`"`, `\\`,
/// `\b \f \n \r \t`, other control characters as `\u00xx`; everything else raw UTF-8).
pub fn push_json_string(out: &mut String, v: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(v.len() + 2);
    out.push('"');
    // Most strings (names, methods) need no escape: copied whole.
    if !v.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(v);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (i, b) in v.bytes().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&v[start..i]);
        if esc.is_empty() {
            out.push_str("\\u00");
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0xf) as usize] as char);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&v[start..]);
    out.push('"');
}

/// Valid JSON `text` on one line, for newline-delimited framing: a raw CR or LF can only stand
/// between tokens (inside strings they must be escaped), so each becomes a space.
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        text.replace(['\n', '\r'], " ").into()
    } else {
        text.into()
    }
}

/// Checks that `text` is one JSON object, cheaply (no tree is built), for embedding as is.
pub fn check_object_text(text: &str, what: &str) -> Result<()> {
    if crate::json::scan::top_level(text.as_bytes()).is_some() {
        return Ok(());
    }
    // Not one strict JSON object: parse to say precisely what is wrong.
    crate::json::parse_object(text, what)?;
    Err(Error::invalid_argument(format!(
        "{what} must be a JSON object"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn classify_by_method_first() {
        let v = parse(r#"{"id":0,"method":"ping"}"#, "m").unwrap();
        assert!(matches!(classify(&v).unwrap(), Classified::Request { .. }));
        let v = parse(r#"{"id":null,"method":"x"}"#, "m").unwrap();
        assert!(matches!(
            classify(&v).unwrap(),
            Classified::Notification { .. }
        ));
        let v = parse(r#"{"id":3,"method":5}"#, "m").unwrap();
        assert_eq!(classify(&v).unwrap(), Classified::Other);
        let v = parse(r#"{"id":3,"result":{}}"#, "m").unwrap();
        assert!(matches!(classify(&v).unwrap(), Classified::Response { .. }));
        assert!(classify(&parse("[]", "m").unwrap()).is_err());
    }

    #[test]
    fn strings_escape_like_serde_json() {
        for s in [
            "plain",
            "q\"b\\s",
            "\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}",
            "é😀\u{2028}",
            "",
        ] {
            let mut out = String::new();
            push_json_string(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap());
        }
    }

    #[test]
    fn raw_lines() {
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        match line_kind(line) {
            LineKind::Response(7, m) => assert_eq!(m.result(), Some(33..35)),
            other => panic!("{other:?}"),
        }
        assert_eq!(line_kind(br#"{"id":7,"method":"ping"}"#), LineKind::Message);
        assert_eq!(line_kind(br#"{"method":"x"}"#), LineKind::Message);
        assert_eq!(line_kind(br#"{"id":"s","result":{}}"#), LineKind::Other);
        assert_eq!(line_kind(br#"{"id":null,"result":{}}"#), LineKind::Other);
        assert_eq!(line_kind(br#"{"id":1,"method":5}"#), LineKind::Other);
        assert_eq!(line_kind(b"[1,2]"), LineKind::Invalid);
        assert_eq!(line_kind(b"{nope"), LineKind::Invalid);
        assert_eq!(
            result_value(r#"{"id":1,"result":{"a":1}}"#).unwrap()["a"],
            1
        );
        assert_eq!(
            result_value(r#"{"id":1,"error":{"code":-1}}"#).unwrap_err()["code"],
            -1
        );
    }

    #[test]
    fn pretty_json_goes_on_one_line() {
        assert_eq!(
            one_line("{\n  \"a\": \"x\\ny\"\r\n}"),
            "{   \"a\": \"x\\ny\"  }"
        );
        assert!(matches!(one_line("{}"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn numbers_as_display_writes_them() {
        for n in [0, 7, 10, 99, 12345, u64::MAX] {
            let mut s = String::new();
            push_u64(&mut s, n);
            assert_eq!(s, n.to_string());
        }
    }

    #[test]
    fn frames() {
        assert_eq!(
            request_text(7, "tools/call", Some(r#"{"a":1}"#)),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":1}}"#
        );
        assert!(check_object_text(" {\"a\":1} ", "args").is_ok());
        assert!(check_object_text("[1]", "args").is_err());
        assert!(check_object_text("{", "args").is_err());
    }

    /// The envelope reads a line as the parsed map did (`classify_object` + `params`).
    #[test]
    fn envelope_matches_the_map() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"a":[1,{"b":null}]}}"#,
            r#"{"id":null,"method":"notifications/progress","params":{"progress":1}}"#,
            r#"{"method":"m","params":null,"id":"x"}"#,
            r#"{"method":"m","id":1,"id":null,"params":1,"params":{"p":2}}"#,
            r#"{"method":"ping","id":1.0e3,"extra":{"deep":[[["x"]]]}}"#,
            r#"{"method":1,"id":2}"#,
            r#"{"id":2,"result":{}}"#,
        ];
        for line in lines {
            let map = parse(line, "l").unwrap();
            let map = map.as_object().unwrap();
            let e: Envelope = serde_json::from_str(line).unwrap();
            let (id, method) = match classify_object(map) {
                Classified::Request { id, method, .. } => (Some(id), Some(method)),
                Classified::Notification { method, .. } => (None, Some(method)),
                _ => (map.get("id").filter(|v| !v.is_null()), None),
            };
            assert_eq!(e.id.as_ref(), id, "{line}");
            if let Some(m) = method {
                assert_eq!(e.method.as_ref().and_then(Value::as_str), Some(m), "{line}");
            }
            assert_eq!(e.params.as_ref(), map.get("params"), "{line}");
        }
        assert!(serde_json::from_str::<Envelope>("[1]").is_err());
    }
}
