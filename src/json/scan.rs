//! A byte-level JSON reader for the per-call hot path (architecture: "the reader owns the id
//! match"), with no extra copies or trees per call. [`top_level`] validates a line as strictly
//! as serde_json does (UTF-8 aside, which the caller checks) while picking out the top-level
//! `id` and `method`; [`for_each_entry`], [`elements`] and [`decode_string`] then let the
//! caller read the parts of an already-validated line it needs, without building a tree.

use std::borrow::Cow;

/// Deepest nesting accepted, as serde_json (it refuses the 128th level).
pub(crate) const MAX_DEPTH: usize = 127;

/// The raw JSON texts of the top-level `id` and `method` of an object.
#[derive(Debug, Default, PartialEq)]
pub struct TopLevel<'a> {
    pub id: Option<&'a [u8]>,
    pub method: Option<&'a [u8]>,
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
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
fn string(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        // Plain bytes in bulk; then the quote, escape or control byte that stopped the run.
        i += s
            .get(i..)?
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        match *s.get(i)? {
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

/// The index just past the value starting at `i`, validated; `depth` is its nesting level.
fn value(s: &[u8], i: usize, depth: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => string(s, i),
        b'{' => object(s, i, depth + 1, &mut |_, _| {}),
        b'[' => {
            if depth + 1 > MAX_DEPTH {
                return None;
            }
            let mut j = skip_ws(s, i + 1);
            if s.get(j) == Some(&b']') {
                return Some(j + 1);
            }
            loop {
                j = skip_ws(s, value(s, j, depth + 1)?);
                match *s.get(j)? {
                    b',' => j = skip_ws(s, j + 1),
                    b']' => return Some(j + 1),
                    _ => return None,
                }
            }
        }
        b't' => s[i..].starts_with(b"true").then_some(i + 4),
        b'f' => s[i..].starts_with(b"false").then_some(i + 5),
        b'n' => s[i..].starts_with(b"null").then_some(i + 4),
        _ => number(s, i),
    }
}

/// Validates the object starting at `i` (at nesting `depth`), calling `each(key, value)` with
/// the raw texts of its members; returns the index just past it.
fn object<'a>(
    s: &'a [u8],
    i: usize,
    depth: usize,
    each: &mut dyn FnMut(&'a [u8], &'a [u8]),
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
        let start = skip_ws(s, j + 1);
        j = value(s, start, depth)?;
        each(key, &s[start..j]);
        j = skip_ws(s, j);
        match *s.get(j)? {
            b',' => j = skip_ws(s, j + 1),
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

/// Validates `line` as exactly one JSON object (strictly, as serde_json; UTF-8 is the caller's
/// to check) and returns its top-level `id` and `method` (the last of duplicates, as a parsed
/// map keeps). None when it is not.
pub fn top_level(line: &[u8]) -> Option<TopLevel<'_>> {
    let mut out = TopLevel::default();
    let i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    let end = object(line, i, 1, &mut |k, v| match k {
        b"\"id\"" => out.id = Some(v),
        b"\"method\"" => out.method = Some(v),
        _ => {}
    })?;
    (skip_ws(line, end) == line.len()).then_some(out)
}

/// The index just past the string at `i` in text already known to be valid.
fn skip_string(s: &[u8], mut i: usize) -> usize {
    i += 1;
    while let Some(off) = s[i..].iter().position(|&b| b == b'"' || b == b'\\') {
        i += off;
        if s[i] == b'"' {
            return i + 1;
        }
        i += 2;
    }
    s.len()
}

/// The index just past the value at `i` in text already known to be valid (no checks).
fn skip(s: &[u8], i: usize) -> usize {
    match s.get(i) {
        Some(b'"') => skip_string(s, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < s.len() {
                match s[j] {
                    b'"' => {
                        j = skip_string(s, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            s.len()
        }
        _ => {
            let mut j = i;
            while j < s.len() && !matches!(s[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            j
        }
    }
}

/// Calls `each(raw key, raw value)` for the members of a JSON object in text already validated
/// (by [`top_level`]); false when `text` is not an object.
pub fn for_each_entry<'a>(text: &'a str, mut each: impl FnMut(&'a str, &'a str)) -> bool {
    let s = text.as_bytes();
    let mut j = skip_ws(s, 0);
    if s.get(j) != Some(&b'{') {
        return false;
    }
    j = skip_ws(s, j + 1);
    if s.get(j) == Some(&b'}') {
        return true;
    }
    loop {
        let key_end = skip_string(s, j);
        let vstart = skip_ws(s, skip_ws(s, key_end) + 1);
        let vend = skip(s, vstart);
        // Slicing at ASCII structure characters of a str is always on char boundaries.
        match (text.get(j..key_end), text.get(vstart..vend)) {
            (Some(k), Some(v)) => each(k, v),
            _ => return false,
        }
        j = skip_ws(s, vend);
        match s.get(j) {
            Some(b',') => j = skip_ws(s, j + 1),
            Some(b'}') => return true,
            _ => return false,
        }
    }
}

/// The members of a JSON object in text already validated, as (raw key, raw value) texts
/// (for tests and the fuzz targets; the hot path uses [`for_each_entry`]).
#[cfg(any(test, feature = "fuzzing"))]
pub fn entries(text: &str) -> Option<Vec<(&str, &str)>> {
    let mut out = Vec::new();
    for_each_entry(text, |k, v| out.push((k, v))).then_some(out)
}

/// The elements of a JSON array in text already validated, as raw texts.
pub fn elements(text: &str) -> Option<Vec<&str>> {
    let s = text.as_bytes();
    let mut j = skip_ws(s, 0);
    if s.get(j) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::with_capacity(2);
    j = skip_ws(s, j + 1);
    if s.get(j) == Some(&b']') {
        return Some(out);
    }
    loop {
        let end = skip(s, j);
        out.push(text.get(j..end)?);
        j = skip_ws(s, end);
        match s.get(j)? {
            b',' => j = skip_ws(s, j + 1),
            _ => return Some(out),
        }
    }
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
        assert_eq!(
            elements(r#"[1, {"b":2} ,"s"]"#).unwrap(),
            vec!["1", r#"{"b":2}"#, r#""s""#]
        );
        assert_eq!(decode_string(r#""plain""#).unwrap(), "plain");
        assert_eq!(
            decode_string(r#""a\n\"\u00e9\ud83d\ude00\/""#).unwrap(),
            "a\n\"é😀/"
        );
        assert!(decode_string(r#""\ud800""#).is_none());
    }
}
