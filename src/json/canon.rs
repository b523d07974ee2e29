//! Canonical JSON text: a value written exactly as serde_json writes it back after parsing it
//! with this crate's features (`json::to_text` of `json::parse`, contract §4). Such text can be
//! passed on as it is instead of being parsed into a tree and written again (the listed tools
//! of every connect, §3). The check validates as it goes and can note where the members of the
//! outer levels are, so that a caller takes the text apart without walking it again.

use crate::json::scan::{number, MAX_DEPTH};
use std::ops::Range;

/// One member of an object (`key` is the key's text, quotes included) or one element of an
/// array (`key` empty), `depth` containers deep (the members of the outermost value are at 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub depth: usize,
    pub key: Range<usize>,
    pub value: Range<usize>,
}

/// Whether `text` is canonical: no whitespace, only the escapes serde_json writes (`\"` `\\`
/// `\b` `\f` `\n` `\r` `\t`, other control characters as lower-case `\u00xx`), no exponent in a
/// number (the parser rewrites each as `e+`/`e-`), no key twice in an object (the parsed map
/// keeps one), nesting as serde_json allows. True means valid JSON too. Notes in `tape` the
/// members at depth `notes` and less, each after its value (so a container's members come
/// before it).
pub fn is_canonical(text: &str, notes: usize, tape: &mut Vec<Member>) -> bool {
    let mut c = Check {
        s: text.as_bytes(),
        keys: Vec::new(),
        notes,
        tape,
    };
    c.value(0, 0) == Some(text.len())
}

struct Check<'a, 't> {
    s: &'a [u8],
    /// Scratch for the duplicate check: each object's keys are pushed, checked and popped.
    keys: Vec<&'a [u8]>,
    notes: usize,
    tape: &'t mut Vec<Member>,
}

impl<'a> Check<'a, '_> {
    /// The index just past the canonical value at `i`, inside `depth` containers.
    fn value(&mut self, i: usize, depth: usize) -> Option<usize> {
        let s = self.s;
        match *s.get(i)? {
            b'"' => string(s, i),
            b'{' | b'[' if depth >= MAX_DEPTH => None,
            b'{' => {
                let mark = self.keys.len();
                let mut j = i + 1;
                if s.get(j) != Some(&b'}') {
                    loop {
                        if s.get(j) != Some(&b'"') {
                            return None;
                        }
                        let key_end = string(s, j)?;
                        self.keys.push(&s[j..key_end]);
                        if s.get(key_end) != Some(&b':') {
                            return None;
                        }
                        let end = self.value(key_end + 1, depth + 1)?;
                        self.note(depth + 1, j..key_end, key_end + 1..end);
                        j = end;
                        match *s.get(j)? {
                            b',' => j += 1,
                            b'}' => break,
                            _ => return None,
                        }
                    }
                }
                // One spelling per string (the escapes above), so equal texts are equal keys.
                let own = &mut self.keys[mark..];
                own.sort_unstable();
                let twice = own.windows(2).any(|w| w[0] == w[1]);
                self.keys.truncate(mark);
                (!twice).then_some(j + 1)
            }
            b'[' => {
                let mut j = i + 1;
                if s.get(j) == Some(&b']') {
                    return Some(j + 1);
                }
                loop {
                    let end = self.value(j, depth + 1)?;
                    self.note(depth + 1, j..j, j..end);
                    j = end;
                    match *s.get(j)? {
                        b',' => j += 1,
                        b']' => return Some(j + 1),
                        _ => return None,
                    }
                }
            }
            b't' => s[i..].starts_with(b"true").then_some(i + 4),
            b'f' => s[i..].starts_with(b"false").then_some(i + 5),
            b'n' => s[i..].starts_with(b"null").then_some(i + 4),
            _ => number(s, i).filter(|&end| !s[i..end].iter().any(|&b| b | 0x20 == b'e')),
        }
    }

    fn note(&mut self, depth: usize, key: Range<usize>, value: Range<usize>) {
        if depth <= self.notes {
            self.tape.push(Member { depth, key, value });
        }
    }
}

/// The index just past the string at `i` if it is valid and spelled as serde_json spells it.
fn string(s: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i += s
            .get(i..)?
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        match s[i] {
            b'"' => return Some(i + 1),
            b'\\' => match *s.get(i + 1)? {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let v = match *s.get(i + 2..i + 6)? {
                        [b'0', b'0', hi @ (b'0' | b'1'), lo @ (b'0'..=b'9' | b'a'..=b'f')] => {
                            (hi - b'0') * 16 + (lo as char).to_digit(16)? as u8
                        }
                        _ => return None,
                    };
                    // These five have short escapes, which serde_json writes instead.
                    if matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// [`is_canonical`] without notes.
#[cfg(any(test, feature = "fuzzing"))]
pub fn canonical(text: &str) -> bool {
    is_canonical(text, 0, &mut Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_is_what_serde_json_writes() {
        let yes = [
            r#"{"a":[1,-0.5,{}],"b":"x\"\\\n\u001f\u0000é","c":null,"d":true}"#,
            "[]",
            "0",
            r#"{"a":{"a":1}}"#,
        ];
        let no = [
            r#"{"a": 1}"#,
            r#"{"a":1E2}"#,
            r#"{"a":1e+2}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u00e9"}"#,
            r#"{"a":"\u001F"}"#,
            r#"{"a":"\u000a"}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":1"#,
            "[1,]",
            "{\"a\":\"\t\"}",
        ];
        for t in yes {
            assert!(canonical(t), "{t}");
        }
        for t in no {
            assert!(!canonical(t), "{t}");
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        for n in [126, 127, 128] {
            let serde = serde_json::from_str::<serde_json::Value>(&deep(n)).is_ok();
            assert_eq!(canonical(&deep(n)), serde, "depth {n}");
        }
    }

    #[test]
    fn the_tape_notes_the_outer_members_after_their_values() {
        let t = r#"{"a":[1,{"b":2}],"c":"d"}"#;
        let mut tape = Vec::new();
        assert!(is_canonical(t, 2, &mut tape));
        let seen: Vec<(usize, &str, &str)> = tape
            .iter()
            .map(|m| (m.depth, &t[m.key.clone()], &t[m.value.clone()]))
            .collect();
        assert_eq!(
            seen,
            [
                (2, "", "1"),
                (2, "", r#"{"b":2}"#),
                (1, r#""a""#, r#"[1,{"b":2}]"#),
                (1, r#""c""#, r#""d""#),
            ]
        );
    }
}
