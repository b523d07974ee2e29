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
pub(crate) const MAX_TEXT_PARTS: usize = 4;

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

/// The index of the first quote, backslash or control byte at or after `i` (or `s.len()`):
/// eight bytes a step (SWAR: a zero byte in `w ^ "…"` is a quote; the lowest flagged byte is
/// always a true one, since a borrow only runs upward from one), then byte by byte.
#[inline(always)]
fn plain_run(s: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(chunk) = s.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let w = u64::from_le_bytes(w);
        let hits = zero_in(w ^ (ONES * u64::from(b'"')))
            | zero_in(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = s.get(i) {
        if b < 0x20 || b == b'"' || b == b'\\' {
            break;
        }
        i += 1;
    }
    i
}

/// The index just past the string starting at `i` (a `"`): control characters and bad escapes
/// are refused, and a `\u` surrogate must come as a high-low pair, as serde_json requires.
#[inline(always)]
fn string(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        // Plain bytes in bulk, eight at a time; then the quote, escape or control byte that
        // stopped the run.
        i = plain_run(s, i);
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

/// [`value`] with a string, the usual member value, read in place (no call per string).
#[inline(always)]
fn member_value(s: &[u8], i: usize, depth: usize) -> Option<usize> {
    if s.get(i) == Some(&b'"') {
        string(s, i)
    } else {
        value(s, i, depth)
    }
}

/// The index just past the value starting at `i`, validated; `depth` is its container's
/// nesting level.
fn value(s: &[u8], i: usize, depth: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => string(s, i),
        b'{' => object(s, i, depth + 1, |_, start| {
            member_value(s, start, depth + 1)
        }),
        b'[' => array(s, i, depth + 1, |start| member_value(s, start, depth + 1)),
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
        let end = member_value(line, start, 1)?;
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
        let end = member_value(s, start, d)?;
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
            let ve = member_value(s, vs, d + 1)?;
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
    let Some(first) = memchr::memchr(b'\\', inner.as_bytes()) else {
        return Some(Cow::Borrowed(inner));
    };
    let ib = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    // Runs between escapes are copied whole; the string is valid, so every escape is whole.
    let mut i = first;
    out.push_str(&inner[..i]);
    loop {
        let (c, used) = match *ib.get(i + 1)? {
            b'"' => ('"', 2),
            b'\\' => ('\\', 2),
            b'/' => ('/', 2),
            b'b' => ('\u{8}', 2),
            b'f' => ('\u{c}', 2),
            b'n' => ('\n', 2),
            b'r' => ('\r', 2),
            b't' => ('\t', 2),
            b'u' => {
                let hi = u32::from(hex4(ib, i + 2)?);
                if (0xD800..0xDC00).contains(&hi) {
                    let lo = u32::from(hex4(ib, i + 8)?);
                    (
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?,
                        12,
                    )
                } else {
                    (char::from_u32(hi)?, 6)
                }
            }
            _ => return None,
        };
        out.push(c);
        i += used;
        match memchr::memchr(b'\\', &ib[i..]) {
            Some(n) => {
                out.push_str(&inner[i..i + n]);
                i += n;
            }
            None => {
                out.push_str(&inner[i..]);
                return Some(Cow::Owned(out));
            }
        }
    }
}

/// Whether a string literal already valid (quotes included) is written exactly as serde_json
/// writes its content: every escape is one serde_json writes (`\"`, `\\`, `\b \f \n \r \t`,
/// `\u00xx` in lower-case hex for the other control characters) or there is none. A valid
/// literal has no raw control character or quote, and serde_json escapes nothing else.
pub fn escaped_as_serde_json(lit: &str) -> bool {
    let b = lit.as_bytes();
    let mut i = 0;
    while let Some(n) = memchr::memchr(b'\\', &b[i..]) {
        i += n;
        match b.get(i + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
            Some(b'u') => {
                let lower = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
                let ok = match b.get(i + 2..i + 6) {
                    Some([b'0', b'0', h, l]) if lower(h) && lower(l) => {
                        let v = hex4(b, i + 2).unwrap_or(0);
                        v < 0x20 && !matches!(v, 0x08 | 0x0c | 0x0a | 0x0d | 0x09)
                    }
                    _ => false,
                };
                if !ok {
                    return false;
                }
                i += 6;
            }
            _ => return false,
        }
    }
    true
}
