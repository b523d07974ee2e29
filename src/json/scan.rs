//! A byte-level JSON reader for the per-call hot path (architecture: "the reader owns the id
//! match"), with no extra copies or trees per call. [`top_level`] validates a line as strictly
//! as serde_json does (UTF-8 aside, which the caller checks) and, in that one pass, picks out
//! what the connection and the caller need: the top-level `id` and `method`, where `result`
//! and `error` are, and a `tools/call` result's text parts when it has the common shape
//! ([`Members`]), so a response is shaped without reading its line again (contract §1);
//! [`decode_string`] reads a string literal. Fuzzed against serde_json (`fuzz/`, `json` and
//! `shape`).

use std::borrow::Cow;
use std::ops::Range;

/// Deepest nesting accepted, as serde_json (it refuses the 128th level).
pub(crate) const MAX_DEPTH: usize = 127;

/// The most text parts [`TextResult`] notes; a result with more is shaped from its value.
pub const MAX_TEXT_PARTS: usize = 4;

/// The raw JSON texts of the top-level `id` and `method` of an object, and its [`Members`].
#[derive(Debug, Default, PartialEq)]
pub struct TopLevel<'a> {
    pub id: Option<&'a [u8]>,
    pub method: Option<&'a [u8]>,
    pub members: Members,
}

/// What the validating pass noted of a message for who reads it next, as byte ranges of its
/// line (the last of duplicate members, as a parsed map keeps). Small, so that handing it on
/// with the line copies little.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Members {
    result: Option<Span>,
    error: Option<Span>,
    /// Who reads the line parses it instead: a top-level key is written with an escape (it may
    /// spell `result` or `error`), or the line is too long for the ranges (over 4 GiB).
    pub parse_instead: bool,
    /// `result` in the common shape of a `tools/call` result: an object with no escaped key,
    /// `isError` true, false or null, no (or a null) `structuredContent`, and a `content` (or
    /// none) of at most [`MAX_TEXT_PARTS`] objects each of `"type":"text"` with a string
    /// `text` and no escaped key.
    pub text_result: Option<TextResult>,
}

impl Members {
    /// Where the top-level `result` value is.
    pub fn result(&self) -> Option<Range<usize>> {
        self.result.map(Span::range)
    }

    /// Where the top-level `error` value is.
    pub fn error(&self) -> Option<Range<usize>> {
        self.error.map(Span::range)
    }
}

/// A byte range of a line, in 32 bits.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// Truncated past 4 GiB: [`top_level`] then notes nothing ([`Members::parse_instead`]).
    fn new(r: Range<usize>) -> Span {
        Span {
            start: r.start as u32,
            end: r.end as u32,
        }
    }

    fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A common-shape `tools/call` result ([`Members::text_result`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TextResult {
    pub is_error: bool,
    len: u8,
    texts: [Span; MAX_TEXT_PARTS],
}

impl TextResult {
    /// The raw string literals (quotes included) of the text parts, in order.
    pub fn texts(&self) -> impl ExactSizeIterator<Item = Range<usize>> + '_ {
        self.texts[..usize::from(self.len)]
            .iter()
            .map(|s| s.range())
    }
}

#[inline(always)]
fn skip_ws(s: &[u8], mut i: usize) -> usize {
    // Every whitespace byte is at most b' ': one comparison for the usual byte that is not.
    while let Some(&b) = s.get(i) {
        if b > b' ' || !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            break;
        }
        i += 1;
    }
    i
}

fn hex4(s: &[u8], i: usize) -> Option<u16> {
    let h = s.get(i..i + 4)?;
    let mut v: u16 = 0;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)? as u16;
    }
    Some(v)
}

/// The index just past the string starting at `i` (a `"`): control characters and bad escapes
/// are refused, and a `\u` surrogate must come as a high-low pair, as serde_json requires.
#[inline]
fn string(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        // Plain bytes in bulk; then the quote, escape or control byte that stopped the run.
        let b = loop {
            let b = *s.get(i)?;
            if b < 0x20 || b == b'"' || b == b'\\' {
                break b;
            }
            i += 1;
        };
        match b {
            b'"' => return Some(i + 1),
            b'\\' => match *s.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let v = hex4(s, i + 2)?;
                    i += 6;
                    if (0xD800..0xDC00).contains(&v) {
                        if s.get(i..i + 2)? != b"\\u" {
                            return None;
                        }
                        let low = hex4(s, i + 2)?;
                        if !(0xDC00..0xE000).contains(&low) {
                            return None;
                        }
                        i += 6;
                    } else if (0xDC00..0xE000).contains(&v) {
                        return None;
                    }
                }
                _ => return None,
            },
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

fn digits(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// The index just past the number starting at `i` (JSON's grammar exactly).
pub(crate) fn number(s: &[u8], mut i: usize) -> Option<usize> {
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    match *s.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(s, i),
        _ => return None,
    }
    if s.get(i) == Some(&b'.') {
        let j = digits(s, i + 1);
        if j == i + 1 {
            return None;
        }
        i = j;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let j = digits(s, i);
        if j == i {
            return None;
        }
        i = j;
    }
    Some(i)
}

/// The index just past the value starting at `i`, validated; `depth` is its container's
/// nesting level.
fn value(s: &[u8], i: usize, depth: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => string(s, i),
        b'{' => object(s, i, depth + 1, |_, start| value(s, start, depth + 1)),
        b'[' => array(s, i, depth + 1, |start| value(s, start, depth + 1)),
        b't' => s[i..].starts_with(b"true").then_some(i + 4),
        b'f' => s[i..].starts_with(b"false").then_some(i + 5),
        b'n' => s[i..].starts_with(b"null").then_some(i + 4),
        _ => number(s, i),
    }
}

/// Validates the object starting at `i` (at nesting `depth`): `member(key, start)` validates
/// each member's value (its raw key given, the value starting at `start`) and returns the
/// index just past it. Returns the index just past the object.
fn object<'a>(
    s: &'a [u8],
    i: usize,
    depth: usize,
    mut member: impl FnMut(&'a [u8], usize) -> Option<usize>,
) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut j = skip_ws(s, i + 1);
    if s.get(j) == Some(&b'}') {
        return Some(j + 1);
    }
    loop {
        if s.get(j) != Some(&b'"') {
            return None;
        }
        let key_end = string(s, j)?;
        let key = &s[j..key_end];
        j = skip_ws(s, key_end);
        if s.get(j) != Some(&b':') {
            return None;
        }
        j = skip_ws(s, member(key, skip_ws(s, j + 1))?);
        match *s.get(j)? {
            b',' => j = skip_ws(s, j + 1),
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

/// Validates the array starting at `i` (at nesting `depth`); `element(start)` validates each
/// element and returns the index just past it.
fn array(
    s: &[u8],
    i: usize,
    depth: usize,
    mut element: impl FnMut(usize) -> Option<usize>,
) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut j = skip_ws(s, i + 1);
    if s.get(j) == Some(&b']') {
        return Some(j + 1);
    }
    loop {
        j = skip_ws(s, element(j)?);
        match *s.get(j)? {
            b',' => j = skip_ws(s, j + 1),
            b']' => return Some(j + 1),
            _ => return None,
        }
    }
}

/// Whether a raw key (a string literal) is written with an escape: it may then spell a name
/// it does not match byte for byte.
fn escaped(key: &[u8]) -> bool {
    key.contains(&b'\\')
}

/// Validates `line` as exactly one JSON object (strictly, as serde_json; UTF-8 is the caller's
/// to check) and returns its top-level `id` and `method` (the last of duplicates, as a parsed
/// map keeps) and the [`Members`] a response's reader needs. None when it is not.
pub fn top_level(line: &[u8]) -> Option<TopLevel<'_>> {
    let mut out = TopLevel::default();
    let i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    let m = &mut out.members;
    let (mut id, mut method) = (None, None);
    let end = object(line, i, 1, |k, start| {
        if k == b"\"result\"" {
            let (end, shape) = if line.get(start) == Some(&b'{') {
                result_object(line, start, 1)?
            } else {
                (value(line, start, 1)?, None)
            };
            m.result = Some(Span::new(start..end));
            m.text_result = shape;
            return Some(end);
        }
        let end = value(line, start, 1)?;
        match k {
            b"\"id\"" => id = Some(&line[start..end]),
            b"\"method\"" => method = Some(&line[start..end]),
            b"\"error\"" => m.error = Some(Span::new(start..end)),
            _ if escaped(k) => m.parse_instead = true,
            _ => {}
        }
        Some(end)
    })?;
    out.id = id;
    out.method = method;
    if line.len() > u32::MAX as usize {
        out.members = Members {
            parse_instead: true,
            ..Members::default()
        };
    }
    (skip_ws(line, end) == line.len()).then_some(out)
}

/// Validates the `result` object starting at `i` (in a container at nesting `depth`) and
/// notes its common `tools/call` shape (contract §1: text parts only, no structured content)
/// when it has it.
fn result_object(s: &[u8], i: usize, depth: usize) -> Option<(usize, Option<TextResult>)> {
    let d = depth + 1;
    let (mut plain, mut is_error) = (true, false);
    // The last `content`'s text parts; Some(None): a `content` that is not only text parts.
    let mut content: Option<Option<TextResult>> = None;
    let end = object(s, i, d, |k, start| {
        if k == b"\"content\"" {
            let (end, texts) = if s.get(start) == Some(&b'[') {
                content_array(s, start, d)?
            } else {
                (value(s, start, d)?, None)
            };
            content = Some(texts);
            return Some(end);
        }
        let end = value(s, start, d)?;
        match (k, &s[start..end]) {
            (b"\"isError\"", b"true") => is_error = true,
            (b"\"isError\"", b"false" | b"null") => is_error = false,
            (b"\"isError\"", _) => plain = false,
            (b"\"structuredContent\"", v) if v != b"null" => plain = false,
            _ if escaped(k) => plain = false,
            _ => {}
        }
        Some(end)
    })?;
    let shape = match content {
        _ if !plain => None,
        None => Some(TextResult::default()),
        Some(texts) => texts,
    };
    Some((end, shape.map(|t| TextResult { is_error, ..t })))
}

/// Validates a result's `content` array starting at `i` (in a container at nesting `depth`);
/// its text parts when every element is one (`{"type":"text","text":"…"}`, other members
/// allowed) and there are at most [`MAX_TEXT_PARTS`].
fn content_array(s: &[u8], i: usize, depth: usize) -> Option<(usize, Option<TextResult>)> {
    let d = depth + 1;
    let mut texts = Some(TextResult::default());
    let end = array(s, i, d, |start| {
        if s.get(start) != Some(&b'{') {
            texts = None;
            return value(s, start, d);
        }
        let (mut is_text, mut text, mut plain) = (false, None, true);
        let end = object(s, start, d + 1, |k, vs| {
            let ve = value(s, vs, d + 1)?;
            match k {
                b"\"type\"" => is_text = &s[vs..ve] == b"\"text\"",
                b"\"text\"" => text = Some(vs..ve),
                _ if escaped(k) => plain = false,
                _ => {}
            }
            Some(ve)
        })?;
        match (texts.as_mut(), text) {
            (Some(t), Some(r))
                if plain
                    && is_text
                    && s[r.start] == b'"'
                    && usize::from(t.len) < MAX_TEXT_PARTS =>
            {
                t.texts[usize::from(t.len)] = Span::new(r);
                t.len += 1;
            }
            _ => texts = None,
        }
        Some(end)
    })?;
    Some((end, texts))
}

/// The members of a JSON object's text, validated, as (raw key, raw value) texts (for tests
/// and the fuzz targets). None when it is not one valid object.
#[cfg(any(test, feature = "fuzzing"))]
pub fn entries(text: &str) -> Option<Vec<(&str, &str)>> {
    let s = text.as_bytes();
    let i = skip_ws(s, 0);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let end = object(s, i, 1, |k, start| {
        let end = value(s, start, 1)?;
        // Slicing at ASCII structure characters of a str is always on char boundaries.
        out.push((std::str::from_utf8(k).ok()?, text.get(start..end)?));
        Some(end)
    })?;
    (skip_ws(s, end) == s.len()).then_some(out)
}

/// The content of a raw JSON string literal (with its quotes), escapes decoded; borrowed when
/// it has none. None when `raw` is not a valid string literal.
pub fn decode_string(raw: &str) -> Option<Cow<'_, str>> {
    let b = raw.as_bytes();
    if b.first() != Some(&b'"') || string(b, 0)? != b.len() {
        return None;
    }
    let inner = &raw[1..raw.len() - 1];
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let (_, e) = chars.next()?;
        match e {
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '/' => out.push('/'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'u' => {
                let hi = hex4(inner.as_bytes(), i + 2)? as u32;
                for _ in 0..4 {
                    chars.next();
                }
                let code = if (0xD800..0xDC00).contains(&hi) {
                    let lo = hex4(inner.as_bytes(), i + 8)? as u32;
                    for _ in 0..6 {
                        chars.next();
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                out.push(char::from_u32(code)?);
            }
            _ => return None,
        }
    }
    Some(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_top_level_keys_only() {
        let t =
            top_level(br#" {"jsonrpc":"2.0","result":{"id":9,"method":"x","s":"a\"}b"},"id":12} "#)
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
                let want: Vec<serde_json::Value> =
                    parts.iter().map(|p| p["text"].clone()).collect();
                assert_eq!(texts, want, "{line}");
            }
        }
    }
}
