//! The tools a server listed (contract §3) and their §0.1 objects. A `tools/list` page written
//! the way serde_json writes JSON (as most servers write it: compact, no exotic escapes, see
//! [`canon::is_canonical`]) is taken apart by position and its tools kept as text; any other page
//! is parsed into values as before. Either way the rendered tool list is byte for byte what
//! rendering the parsed tools gives (§4: values untouched, numbers as `json::to_text` writes
//! them). Why: every connect lists every tool (§3), and building a tree of each schema only to
//! write it out again was most of the library's own work in a connect (callgrind, the bench
//! fixture's 29 tools: ~40% of the host's user-space instructions per connect).

use crate::json::canon::{self, Member};
use crate::json::scan;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;

/// One tool object as a server listed it.
pub(crate) enum ListedTool {
    /// Its JSON text, canonical ([`canon::is_canonical`]: the text `json::to_text` would write),
    /// and where in it each member's key (quotes included) and value are.
    Text {
        text: String,
        members: Vec<(Range<usize>, Range<usize>)>,
    },
    Parsed(Map<String, Value>),
}

/// One `tools/list` page: its tools, `nextCursor`, and MCP 2026-07-28's `ttlMs` (docs/live-servers.md).
pub(crate) struct Page {
    pub(crate) tools: Vec<ListedTool>,
    pub(crate) cursor: Option<String>,
    /// `ttlMs` when it is a number (milliseconds the list may be taken as fresh).
    pub(crate) ttl_ms: Option<f64>,
}

/// The tools and `nextCursor` of a `tools/list` response line, taken apart in the one pass that
/// checks it; None when the line is not canonical or has no object `result` (then the caller
/// parses it).
pub(crate) fn page(line: &str) -> Option<Page> {
    // Noted: the response's members (depth 1), the result's (2), the tools (3), theirs (4).
    let mut tape = Vec::new();
    if !canon::is_canonical(line, 4, &mut tape) {
        return None;
    }
    let text = |r: &Range<usize>| &line[r.clone()];
    let inside =
        |m: &Member, outer: &Range<usize>| outer.start <= m.value.start && m.value.end <= outer.end;
    // Canonical text spells each key one way and has each key once per object.
    let result = tape
        .iter()
        .find(|m| m.depth == 1 && text(&m.key) == r#""result""#)?
        .value
        .clone();
    if !text(&result).starts_with('{') {
        return None;
    }
    let (mut list, mut cursor, mut ttl_ms) = (None, None, None);
    for m in tape.iter().filter(|m| m.depth == 2 && inside(m, &result)) {
        match text(&m.key) {
            r#""tools""# if text(&m.value).starts_with('[') => list = Some(m.value.clone()),
            r#""nextCursor""# => cursor = scan::decode_string(text(&m.value)).map(Cow::into_owned),
            r#""ttlMs""# => ttl_ms = text(&m.value).parse::<f64>().ok(),
            _ => {}
        }
    }
    let mut tools = Vec::new();
    let Some(list) = list else {
        return Some(Page {
            tools,
            cursor,
            ttl_ms,
        });
    };
    // Each element comes after its own members on the tape, and after those of the element
    // (or other depth-3 member) noted before it.
    let mut first = 0;
    for (at, m) in tape.iter().enumerate() {
        if m.depth != 3 {
            continue;
        }
        let before = &tape[first..at];
        first = at + 1;
        if !inside(m, &list) || !text(&m.value).starts_with('{') {
            continue;
        }
        let base = m.value.start;
        let members = before
            .iter()
            .filter(|x| x.depth == 4 && inside(x, &m.value))
            .map(|x| {
                (
                    x.key.start - base..x.key.end - base,
                    x.value.start - base..x.value.end - base,
                )
            })
            .collect();
        tools.push(ListedTool::Text {
            text: text(&m.value).to_string(),
            members,
        });
    }
    Some(Page {
        tools,
        cursor,
        ttl_ms,
    })
}

/// A `tools/list` page parsed into values: its tools (moved out of it, not copied) and its
/// `nextCursor`; the error object (or what was wrong) when it has no `result`.
pub(crate) fn parsed_page(line: &str) -> Result<Page, Value> {
    let mut page = crate::json::rpc::result_value(line)?;
    let mut tools = Vec::new();
    if let Some(Value::Array(items)) = page.get_mut("tools").map(Value::take) {
        tools.extend(items.into_iter().filter_map(|t| match t {
            Value::Object(m) => Some(ListedTool::Parsed(m)),
            _ => None,
        }));
    }
    let next = page
        .get("nextCursor")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Page {
        tools,
        cursor: next,
        ttl_ms: page.get("ttlMs").and_then(Value::as_f64),
    })
}

impl ListedTool {
    /// The tool's `name`, when it is a string.
    pub(crate) fn name(&self) -> Option<Cow<'_, str>> {
        match self {
            ListedTool::Parsed(m) => m.get("name").and_then(Value::as_str).map(Cow::Borrowed),
            ListedTool::Text { text, members } => members
                .iter()
                .find(|(k, _)| &text[k.clone()] == r#""name""#)
                .and_then(|(_, v)| scan::decode_string(&text[v.clone()])),
        }
    }

    /// The tool as a map of values (the modern era's routing headers read it, §6).
    pub(crate) fn to_map(&self) -> Cow<'_, Map<String, Value>> {
        match self {
            ListedTool::Parsed(m) => Cow::Borrowed(m),
            ListedTool::Text { text, .. } => {
                Cow::Owned(crate::json::parse_object(text, "tool").unwrap_or_default())
            }
        }
    }

    /// Writes the §0.1 tool object: the fixed keys first, then whatever else the server sent,
    /// in its order.
    pub(crate) fn write(&self, out: &mut Vec<u8>, host: &str, server: &str, remote: &str) {
        let (text, members) = match self {
            ListedTool::Parsed(m) => return write_parsed(out, host, server, remote, m),
            ListedTool::Text { text, members } => (text, members),
        };
        let member = |key: &str| {
            members
                .iter()
                .find(|(k, _)| {
                    text[k.clone()]
                        .strip_prefix('"')
                        .and_then(|k| k.strip_suffix('"'))
                        == Some(key)
                })
                .map(|(_, v)| &text[v.clone()])
        };
        head(out, host);
        match member("description").filter(|d| d.starts_with('"')) {
            Some(d) => out.extend_from_slice(d.as_bytes()),
            None => out.extend_from_slice(br#""""#),
        }
        out.extend_from_slice(br#","inputSchema":"#);
        match member("inputSchema").filter(|s| s.starts_with('{')) {
            Some(s) => out.extend_from_slice(s.as_bytes()),
            None => out.extend_from_slice(br#"{"type":"object"}"#),
        }
        tail(out, server, remote);
        for (k, v) in members {
            let key = &text[k.clone()];
            if !TOOL_KEYS
                .iter()
                .any(|f| key.len() == f.len() + 2 && &key[1..key.len() - 1] == *f)
            {
                out.push(b',');
                out.extend_from_slice(key.as_bytes());
                out.push(b':');
                out.extend_from_slice(text[v.clone()].as_bytes());
            }
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
            let line = format!(r#"{{"result":{{"tools":[{text}]}}}}"#);
            if let Some(Page { tools: listed, .. }) = page(&line) {
                texts += 1;
                assert_eq!(written(&listed[0]), want, "{text}");
            }
        }
        assert_eq!(texts, 3, "the canonical ones are written from their text");
    }

    #[test]
    fn a_page_is_read_by_position_only_when_canonical() {
        let line = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a\"b"},7,{"name":1}],"nextCursor":"c\n"}}"#;
        let Page { tools, cursor, .. } = page(line).unwrap();
        assert_eq!(cursor.as_deref(), Some("c\n"));
        let names: Vec<_> = tools
            .iter()
            .map(|t| t.name().map(Cow::into_owned))
            .collect();
        assert_eq!(names, [Some("a\"b".to_string()), None]);
        assert!(page(r#"{"jsonrpc":"2.0","id":3, "result":{"tools":[]}}"#).is_none());
        assert!(page(r#"{"jsonrpc":"2.0","id":3,"result":null}"#).is_none());
        assert!(page(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#).is_none());
        let Page { tools, cursor, .. } =
            page(r#"{"id":3,"result":{"tools":{},"nextCursor":5}}"#).unwrap();
        assert!(tools.is_empty() && cursor.is_none());
        let ttl = |line: &str| {
            (
                page(line).unwrap().ttl_ms,
                parsed_page(line).unwrap().ttl_ms,
            )
        };
        let line = r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","ttlMs":1500,"tools":[]}}"#;
        assert_eq!(ttl(line), (Some(1500.0), Some(1500.0)));
        assert_eq!(
            ttl(r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#),
            (None, None)
        );
    }
}
