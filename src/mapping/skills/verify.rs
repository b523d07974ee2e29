//! A skill's bytes as read, verified against its entry (SEP-2640): a `resources/read` result's
//! content, its size, its SHA-256 digest, and a `SKILL.md`'s frontmatter field by field.

use super::entry::{File, SkillEntry};
use super::frontmatter::frontmatter;
use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What `resources/read` returned for one URI.
#[derive(Debug, PartialEq)]
pub(crate) struct Content {
    /// The raw bytes (a text's UTF-8, a blob decoded): what size and digest cover.
    pub(crate) bytes: Vec<u8>,
    /// The text, when the server sent text.
    pub(crate) text: Option<String>,
    /// The base64 blob as sent, when the server sent a blob.
    pub(crate) blob: Option<String>,
    pub(crate) mime_type: Option<String>,
}

/// The content of `uri` in a `resources/read` result: the item with that URI (or the only one).
pub(crate) fn content(result: &Value, uri: &str) -> Result<Content, String> {
    let items = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the resources/read result has no `contents` array")?;
    let item = match items
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
    {
        Some(c) => c,
        None if items.len() == 1 => &items[0],
        None => {
            return Err(format!(
                "the resources/read result has no content for `{}`",
                crate::util::quoted(uri)
            ))
        }
    };
    let mime_type = item
        .get("mimeType")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(text) = item.get("text").and_then(Value::as_str) {
        return Ok(Content {
            bytes: text.as_bytes().to_vec(),
            text: Some(text.to_string()),
            blob: None,
            mime_type,
        });
    }
    if let Some(blob) = item.get("blob").and_then(Value::as_str) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|_| "the resources/read result's `blob` is not base64".to_string())?;
        return Ok(Content {
            bytes,
            text: None,
            blob: Some(blob.to_string()),
            mime_type,
        });
    }
    Err("the resources/read result's content has neither `text` nor `blob`".into())
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Verification on read (SEP-2640): the byte length against the entry's `size` (a mismatch on
/// its own), then the SHA-256 against its `digest`. The error says which, and both values.
pub(crate) fn check_bytes(file: &File, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 != file.size {
        return Err(format!(
            "size mismatch: it is {} bytes, its entry says {}",
            bytes.len(),
            file.size
        ));
    }
    let got = digest(bytes);
    if got != file.digest {
        return Err(format!(
            "digest mismatch: its SHA-256 is {got}, its entry says {}",
            file.digest
        ));
    }
    Ok(())
}

/// Frontmatter verification (SEP-2640): the SKILL.md's YAML frontmatter, parsed, equals the
/// entry's `frontmatter` field by field; the error names each field that differs.
pub(crate) fn check_frontmatter(entry: &SkillEntry, text: &str) -> Result<(), String> {
    let file = frontmatter(text)?;
    let mut fields: Vec<&String> = entry.frontmatter.keys().collect();
    fields.extend(file.keys().filter(|k| !entry.frontmatter.contains_key(*k)));
    let differ: Vec<String> = fields
        .into_iter()
        .filter(|k| match (entry.frontmatter.get(*k), file.get(*k)) {
            (Some(a), Some(b)) => !same(a, b),
            _ => true,
        })
        .map(|k| {
            let say = |v: Option<&Value>| {
                v.map_or_else(
                    || "nothing".to_string(),
                    |v| crate::util::quoted(&crate::json::to_text(v)),
                )
            };
            format!(
                "`{}` (the file says {}, the entry {})",
                crate::util::quoted(k),
                say(file.get(k)),
                say(entry.frontmatter.get(k))
            )
        })
        .collect();
    if differ.is_empty() {
        return Ok(());
    }
    Err(format!(
        "frontmatter mismatch: its YAML frontmatter differs from its entry's in {}",
        differ.join(", ")
    ))
}

/// JSON equality with numbers compared as numbers (`1` and `1.0` are the same value, as a
/// deep-equal comparison in JavaScript has them).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.to_string() == y.to_string(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
