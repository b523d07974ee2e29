//! The tools a server listed (contract §3) and their §0.1 objects. A `tools/list` page written
//! the way serde_json writes JSON (as most servers write it: compact, no exotic escapes, see
//! [`scan::canonical`]) is taken apart by position and its tools kept as text; any other page
//! is parsed into values as before. Either way the rendered tool list is byte for byte what
//! rendering the parsed tools gives (§4: values untouched, numbers as `json::to_text` writes
//! them). Why: every connect lists every tool (§3), and building a tree of each schema only to
//! write it out again was most of the library's own work in a connect (callgrind, the bench
//! fixture's 29 tools: ~40% of the host's user-space instructions per connect).

use crate::scan;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// One tool object as a server listed it.
pub(crate) enum ListedTool {
    /// Its JSON text, canonical ([`scan::canonical`]): the text `json::to_text` would write.
    Text(String),
    Parsed(Map<String, Value>),
}

/// The tools and `nextCursor` of a `tools/list` response line, read without building a tree;
/// None when the line is not canonical or has no object `result` (then the caller parses it).
pub(crate) fn page(line: &str) -> Option<(Vec<ListedTool>, Option<String>)> {
    if !scan::canonical(line) {
        return None;
    }
    // Canonical text spells each key one way and has each key once.
    let mut result = None;
    scan::for_each_entry(line, |k, v| {
        if k == r#""result""# {
            result = Some(v);
        }
    });
    let result = result.filter(|r| r.starts_with('{'))?;
    let (mut tools, mut cursor) = (Vec::new(), None);
    scan::for_each_entry(result, |k, v| match k {
        r#""tools""# => {
            tools = scan::elements(v)
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.starts_with('{'))
                .map(|t| ListedTool::Text(t.to_string()))
                .collect();
        }
        r#""nextCursor""# => cursor = scan::decode_string(v).map(Cow::into_owned),
        _ => {}
    });
    Some((tools, cursor))
}

impl ListedTool {
    /// The tool's `name`, when it is a string.
    pub(crate) fn name(&self) -> Option<Cow<'_, str>> {
        match self {
            ListedTool::Parsed(m) => m.get("name").and_then(Value::as_str).map(Cow::Borrowed),
            ListedTool::Text(t) => {
                let mut name = None;
                scan::for_each_entry(t, |k, v| {
                    if k == r#""name""# {
                        name = Some(v);
                    }
                });
                name.and_then(scan::decode_string)
            }
        }
    }

    /// The tool as a map of values (the modern era's routing headers read it, §6).
    pub(crate) fn to_map(&self) -> Cow<'_, Map<String, Value>> {
        match self {
            ListedTool::Parsed(m) => Cow::Borrowed(m),
            ListedTool::Text(t) => {
                Cow::Owned(crate::json::parse_object(t, "tool").unwrap_or_default())
            }
        }
    }

    /// Writes the §0.1 tool object: the fixed keys first, then whatever else the server sent,
    /// in its order.
    pub(crate) fn write(&self, out: &mut Vec<u8>, host: &str, server: &str, remote: &str) {
        let (description, schema, rest) = match self {
            ListedTool::Parsed(m) => {
                return write_parsed(out, host, server, remote, m);
            }
            ListedTool::Text(t) => {
                let (mut description, mut schema, mut rest) = (None, None, Vec::new());
                scan::for_each_entry(t, |k, v| match k {
                    r#""description""# => description = Some(v),
                    r#""inputSchema""# => schema = Some(v),
                    _ if TOOL_KEYS
                        .iter()
                        .any(|f| k.len() == f.len() + 2 && &k[1..k.len() - 1] == *f) => {}
                    _ => rest.push((k, v)),
                });
                (description, schema, rest)
            }
        };
        head(out, host);
        match description.filter(|d| d.starts_with('"')) {
            Some(d) => out.extend_from_slice(d.as_bytes()),
            None => out.extend_from_slice(br#""""#),
        }
        out.extend_from_slice(br#","inputSchema":"#);
        match schema.filter(|s| s.starts_with('{')) {
            Some(s) => out.extend_from_slice(s.as_bytes()),
            None => out.extend_from_slice(br#"{"type":"object"}"#),
        }
        tail(out, server, remote);
        for (k, v) in rest {
            out.push(b',');
            out.extend_from_slice(k.as_bytes());
            out.push(b':');
            out.extend_from_slice(v.as_bytes());
        }
        out.push(b'}');
    }
}

/// The keys of a §0.1 tool object that the library sets; a server's own keys of these names
/// are not copied.
const TOOL_KEYS: [&str; 6] = [
    "name",
    "description",
    "inputSchema",
    "source",
    "server",
    "remoteName",
];

/// `{"name":<host>,"description":`
fn head(out: &mut Vec<u8>, host: &str) {
    out.extend_from_slice(br#"{"name":"#);
    put(out, host);
    out.extend_from_slice(br#","description":"#);
}

/// `,"source":"mcp","server":<server>,"remoteName":<remote>`
fn tail(out: &mut Vec<u8>, server: &str, remote: &str) {
    out.extend_from_slice(br#","source":"mcp","server":"#);
    put(out, server);
    out.extend_from_slice(br#","remoteName":"#);
    put(out, remote);
}

/// [`ListedTool::write`] for a parsed tool.
fn write_parsed(out: &mut Vec<u8>, host: &str, server: &str, remote: &str, t: &Map<String, Value>) {
    head(out, host);
    match t.get("description") {
        Some(d @ Value::String(_)) => put(out, d),
        _ => out.extend_from_slice(br#""""#),
    }
    out.extend_from_slice(br#","inputSchema":"#);
    match t.get("inputSchema") {
        Some(s @ Value::Object(_)) => put(out, s),
        _ => out.extend_from_slice(br#"{"type":"object"}"#),
    }
    tail(out, server, remote);
    for (k, v) in t {
        if !TOOL_KEYS.contains(&k.as_str()) {
            out.push(b',');
            put(out, k.as_str());
            out.push(b':');
            put(out, v);
        }
    }
    out.push(b'}');
}

/// `v` as compact JSON, escaped as `json::to_text` escapes (serde_json's writer).
fn put<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The §0.1 tool object built as a `Value`, then `to_text` (how it was first written).
    fn as_value(host: &str, server: &str, remote: &str, t: &Map<String, Value>) -> String {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(host.to_string()));
        m.insert(
            "description".into(),
            t.get("description")
                .filter(|d| d.is_string())
                .cloned()
                .unwrap_or_else(|| Value::String(String::new())),
        );
        m.insert(
            "inputSchema".into(),
            t.get("inputSchema")
                .filter(|s| s.is_object())
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        );
        m.insert("source".into(), Value::String("mcp".into()));
        m.insert("server".into(), Value::String(server.to_string()));
        m.insert("remoteName".into(), Value::String(remote.to_string()));
        for (k, v) in t {
            if !m.contains_key(k) && k != "name" {
                m.insert(k.clone(), v.clone());
            }
        }
        crate::json::to_text(&Value::Object(m))
    }

    fn written(t: &ListedTool) -> String {
        let mut out = Vec::new();
        t.write(&mut out, "my_server_x", "my server", "x.y");
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn both_forms_write_the_value_rendering() {
        let tools = [
            r#"{"name":"echo","description":"Echo \"it\"\n","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1E2,"default":1.50}}}}"#,
            r#"{"name":"echo","description":"Echo \"it\"\n\u001f","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":-0.5,"default":1.50}}}}"#,
            r#"{"name":"bare"}"#,
            r#"{"name":"odd","description":7,"inputSchema":[],"source":"x","server":"y","remoteName":"z","annotations":{"title":"é😀\u0001"},"_meta":null}"#,
            r#"{"z":1,"name":"late","inputSchema":{},"a":[1,{"b":123456789012345678901234567890}],"desc":"\/"}"#,
            r#"{"name":"twice","a":1,"a":2}"#,
            r#"{ "name" : "spaced" }"#,
        ];
        let mut texts = 0;
        for text in tools {
            let t = crate::json::parse_object(text, "tool").unwrap();
            let want = as_value("my_server_x", "my server", "x.y", &t);
            assert_eq!(written(&ListedTool::Parsed(t)), want, "{text}");
            if scan::canonical(text) {
                texts += 1;
                assert_eq!(written(&ListedTool::Text(text.into())), want, "{text}");
            }
        }
        assert_eq!(texts, 3, "the canonical ones are written from their text");
    }

    #[test]
    fn a_page_is_read_by_position_only_when_canonical() {
        let line = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a\"b"},7,{"name":1}],"nextCursor":"c\n"}}"#;
        let (tools, cursor) = page(line).unwrap();
        assert_eq!(cursor.as_deref(), Some("c\n"));
        let names: Vec<_> = tools
            .iter()
            .map(|t| t.name().map(Cow::into_owned))
            .collect();
        assert_eq!(names, [Some("a\"b".to_string()), None]);
        assert!(page(r#"{"jsonrpc":"2.0","id":3, "result":{"tools":[]}}"#).is_none());
        assert!(page(r#"{"jsonrpc":"2.0","id":3,"result":null}"#).is_none());
        assert!(page(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#).is_none());
        let (tools, cursor) = page(r#"{"id":3,"result":{"tools":{},"nextCursor":5}}"#).unwrap();
        assert!(tools.is_empty() && cursor.is_none());
    }
}
