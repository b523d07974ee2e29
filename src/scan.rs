//! A byte-level scan of a JSON object's top-level `id` and `method`, for the reader's hot path
//! (architecture: "the reader owns the id match"). It builds nothing and checks only the
//! object's outline; whoever consumes the line parses it fully and strictly.

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

/// The index just past the string that starts at `i` (a `"`).
fn skip_string(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index just past the value that starts at `i`.
fn skip_value(s: &[u8], i: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => skip_string(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < s.len() {
                match s[j] {
                    b'"' => {
                        j = skip_string(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < s.len() && !matches!(s[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// Scans `line` as one JSON object; None when its outline is not one.
pub fn top_level(line: &[u8]) -> Option<TopLevel<'_>> {
    let mut out = TopLevel::default();
    let mut i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(line, i + 1);
    if line.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            if line.get(i) != Some(&b'"') {
                return None;
            }
            let key_end = skip_string(line, i)?;
            let key = &line[i + 1..key_end - 1];
            i = skip_ws(line, key_end);
            if line.get(i) != Some(&b':') {
                return None;
            }
            i = skip_ws(line, i + 1);
            let start = i;
            i = skip_value(line, i)?;
            match key {
                b"id" => out.id = Some(&line[start..i]),
                b"method" => out.method = Some(&line[start..i]),
                _ => {}
            }
            i = skip_ws(line, i);
            match line.get(i) {
                Some(b',') => i = skip_ws(line, i + 1),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_ws(line, i) == line.len()).then_some(out)
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

    #[test]
    fn rejects_what_is_not_an_object() {
        for bad in [
            &b"[1]"[..],
            b"nope",
            b"{",
            br#"{"a":1"#,
            br#"{"a":1} x"#,
            br#"{"a" 1}"#,
            br#"{"a":}"#,
            br#"{"a":"unterminated}"#,
            br#"{"a":[1,2}"#,
            b"",
        ] {
            assert_eq!(top_level(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
