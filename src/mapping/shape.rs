//! `tools/call` result → §0.1 ToolResult `{output, isError, metadata?}` (contract §1). Non-text
//! parts are never lost: they ride in `metadata.parts`, and are described in `output` when it
//! would otherwise be empty.

use crate::json::scan::{self, Members, TextResult};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A common-shape result ([`Members::text_result`], noted by the reader's one pass over
/// `line`) as a ToolResult; None when the value path must decide (an isError with only blank
/// text parts), which gives the same ToolResult for every shape.
fn from_text_parts(line: &str, t: &TextResult) -> Option<String> {
    let raw = |r: std::ops::Range<usize>| line.get(r);
    let text = |r: std::ops::Range<usize>| -> Option<Cow<'_, str>> {
        let lit = raw(r)?;
        if lit.contains('\\') {
            scan::decode_string(lit)
        } else {
            Some(Cow::Borrowed(&lit[1..lit.len() - 1]))
        }
    };
    let mut parts = t.texts();
    match (parts.len(), t.is_error) {
        // The hot path: one text part whose escapes are the ones serde_json writes (or none)
        // is already written as `render` writes it (the scan refused raw control characters
        // and quotes; nothing else is escaped), so it is copied as it is.
        (1, false) => {
            let one = parts.next()?;
            let lit = raw(one.clone())?;
            if !scan::escaped_as_serde_json(lit) {
                return Some(render(&text(one)?, false, None));
            }
            // Exactly its length and the NUL the C string adds: handed out without a realloc.
            let mut s = String::with_capacity(lit.len() + 28);
            s.push_str("{\"output\":");
            s.push_str(lit);
            s.push_str(",\"isError\":false}");
            Some(s)
        }
        (_, false) => {
            let texts: Option<Vec<Cow<'_, str>>> = parts.map(text).collect();
            Some(render(&texts?.join("\n"), false, None))
        }
        (_, true) => {
            let mut texts: Vec<Cow<'_, str>> = parts.map(text).collect::<Option<_>>()?;
            texts.retain(|t| !t.trim().is_empty());
            if texts.is_empty() {
                return None;
            }
            Some(render(&texts.join("\n\n"), true, None))
        }
    }
}

/// A `tools/call` response line (validated JSON) → ToolResult JSON text, or the JSON-RPC error
/// object, from what the reader's validating pass noted of it (`members`): the common shape
/// straight from its text parts, the rest through [`tool_result`].
pub fn from_members(line: &str, members: &Members) -> Result<String, Value> {
    if !members.parse_instead {
        if let Some(out) = members
            .text_result
            .as_ref()
            .and_then(|t| from_text_parts(line, t))
        {
            return Ok(out);
        }
    }
    match crate::json::rpc::result_value(line) {
        Ok(v) => Ok(tool_result(&v)),
        Err(e) => Err(e),
    }
}

/// [`from_members`] for a line not scanned yet (tests and the fuzz targets).
#[cfg(any(test, feature = "fuzzing"))]
pub fn from_response(line: &str) -> Result<String, Value> {
    let members = scan::top_level(line.as_bytes())
        .map(|t| t.members)
        .unwrap_or_default();
    from_members(line, &members)
}

/// Shapes a successful JSON-RPC `result` of `tools/call` into ToolResult JSON text.
pub fn tool_result(result: &Value) -> String {
    let empty = Map::new();
    let obj = result.as_object().unwrap_or(&empty);
    let content: &[Value] = match obj.get("content") {
        Some(Value::Array(items)) => items,
        _ => &[],
    };
    let is_error = obj.get("isError") == Some(&Value::Bool(true));
    let mut texts: Vec<&str> = Vec::new();
    let mut parts: Vec<&Value> = Vec::new();
    for item in content {
        match (item.get("type").and_then(Value::as_str), item.get("text")) {
            (Some("text"), Some(Value::String(t))) => texts.push(t),
            _ => parts.push(item),
        }
    }
    let mut output = if is_error {
        let non_blank: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !t.trim().is_empty())
            .collect();
        if non_blank.is_empty() && parts.is_empty() {
            "MCP tool returned an error".to_string()
        } else {
            non_blank.join("\n\n")
        }
    } else {
        match obj.get("structuredContent") {
            Some(sc) if !sc.is_null() => crate::json::to_text(sc),
            _ => texts.join("\n"),
        }
    };
    if output.is_empty() && !parts.is_empty() {
        output = parts
            .iter()
            .map(|p| part_line(p))
            .collect::<Vec<_>>()
            .join("\n");
    }
    let metadata = if parts.is_empty() {
        None
    } else {
        let mut m = Map::new();
        m.insert(
            "parts".into(),
            Value::Array(parts.into_iter().cloned().collect()),
        );
        Some(Value::Object(m))
    };
    render(&output, is_error, metadata)
}

/// `result` (a ToolResult this module rendered) with `line` appended to its output as a new
/// last line (§4 "Capability"); `isError` and `metadata` stay as they were. Off the hot path.
pub fn append_line(result: &str, line: &str) -> String {
    let Ok(Value::Object(mut r)) = serde_json::from_str::<Value>(result) else {
        return result.to_string();
    };
    let mut output = match r.swap_remove("output") {
        Some(Value::String(o)) => o,
        _ => String::new(),
    };
    if !output.is_empty() {
        output.push('\n');
    }
    output.push_str(line);
    let is_error = r.get("isError") == Some(&Value::Bool(true));
    render(&output, is_error, r.swap_remove("metadata"))
}

/// A failed call (timeout, closed transport, JSON-RPC error) as an isError ToolResult.
pub fn failure(message: &str) -> String {
    render(message, true, None)
}

fn render(output: &str, is_error: bool, metadata: Option<Value>) -> String {
    // +1 leaves room for the NUL the C string adds, so handing it out does not reallocate.
    let mut s = String::with_capacity(output.len() + 48);
    s.push_str("{\"output\":");
    crate::json::rpc::push_json_string(&mut s, output);
    s.push_str(if is_error {
        ",\"isError\":true"
    } else {
        ",\"isError\":false"
    });
    if let Some(m) = metadata {
        s.push_str(",\"metadata\":");
        s.push_str(&crate::json::to_text(&m));
    }
    s.push('}');
    s
}

/// One line describing a non-text part, e.g. `image (image/png, 8 bytes)`.
fn part_line(part: &Value) -> String {
    let kind = part.get("type").and_then(Value::as_str).unwrap_or("part");
    let s = |k: &str| part.get(k).and_then(Value::as_str);
    match kind {
        "image" | "audio" => format!(
            "{kind} ({}, {} bytes)",
            s("mimeType").unwrap_or("unknown type"),
            s("data").map_or(0, base64_len)
        ),
        "resource_link" => format!(
            "resource_link {}{}",
            s("uri").unwrap_or("?"),
            s("name").map(|n| format!(" ({n})")).unwrap_or_default()
        ),
        "resource" => {
            let r = part.get("resource");
            let uri = r.and_then(|r| r.get("uri")).and_then(Value::as_str);
            format!("resource {}", uri.unwrap_or("?"))
        }
        other => format!("{other} part"),
    }
}

/// Decoded length of base64 text (padding-aware; whitespace ignored).
fn base64_len(data: &str) -> usize {
    let chars: Vec<u8> = data.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let pad = chars.iter().rev().take_while(|&&b| b == b'=').count();
    (chars.len() * 3 / 4).saturating_sub(pad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn shape(t: &str) -> String {
        tool_result(&parse(t, "r").unwrap())
    }

    /// The borrowed fast path and the value path agree on every shape.
    #[test]
    fn fast_path_matches_value_path() {
        let results = [
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b\u00e9\n"}]}"#,
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":" "}],"isError":true}"#,
            r#"{"content":[{"type":"text","text":" "}],"isError":true}"#,
            r#"{"content":[],"isError":true}"#,
            r#"{"content":[]}"#,
            r#"{}"#,
            r#"{"content":[{"type":"text","text":"x"}],"structuredContent":{"b":1.50,"a":1E2}}"#,
            r#"{"content":[{"type":"text","text":"x"}],"structuredContent":null}"#,
            r#"{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}"#,
            r#"{"content":"nope","isError":"yes"}"#,
            r#"{"content":[{"type":"text","text":5}]}"#,
        ];
        for r in results {
            let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{r}}}"#);
            let fast = from_response(&line).unwrap();
            let slow = tool_result(&parse(r, "r").unwrap());
            assert_eq!(fast, slow, "{r}");
        }
        let err =
            from_response(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}"#);
        assert_eq!(err.unwrap_err()["code"], -32602);
    }

    /// §4 "Capability": the note is a new last line; isError and metadata (numbers, key order,
    /// raw UTF-8) come through unchanged.
    #[test]
    fn append_line_keeps_the_rest() {
        let note = "the server asked for input; no resolver is registered";
        assert_eq!(
            append_line(r#"{"output":"a\nb","isError":true}"#, note),
            format!(r#"{{"output":"a\nb\n{note}","isError":true}}"#)
        );
        assert_eq!(
            append_line(r#"{"output":"","isError":false}"#, note),
            format!(r#"{{"output":"{note}","isError":false}}"#)
        );
        let with_parts = shape(
            r#"{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","n":1.50,"é":1E2}]}"#,
        );
        assert_eq!(
            append_line(&with_parts, note),
            format!(
                r#"{{"output":"image (image/png, 8 bytes)\n{note}","isError":false,"metadata":{{"parts":[{{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","n":1.50,"é":1e+2}}]}}}}"#
            )
        );
    }

    #[test]
    fn shapes() {
        assert_eq!(
            shape(r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#),
            r#"{"output":"a\nb","isError":false}"#
        );
        assert_eq!(
            shape(
                r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":" "},{"type":"text","text":"b"}],"isError":true}"#
            ),
            r#"{"output":"a\n\nb","isError":true}"#
        );
        assert_eq!(
            shape(r#"{"content":[],"isError":true}"#),
            r#"{"output":"MCP tool returned an error","isError":true}"#
        );
        assert_eq!(
            shape(
                r#"{"content":[{"type":"text","text":"x"}],"structuredContent":{"b":1.50,"a":"é"}}"#
            ),
            r#"{"output":"{\"b\":1.50,\"a\":\"é\"}","isError":false}"#
        );
        assert_eq!(
            shape(r#"{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}"#),
            r#"{"output":"image (image/png, 8 bytes)","isError":false,"metadata":{"parts":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}}"#
        );
    }
}
