//! Argument helpers and raw JSON scanning.

use serde_json::Value;

// ---------------------------------------------------------------------------
// Argument helpers
// ---------------------------------------------------------------------------

pub fn arg_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

pub fn arg_u64(args: &Value, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}

/// Integer value of a JSON number written as an integer (no '.', no
/// exponent), using its exact text (arbitrary_precision keeps it).
pub fn number_as_i128(n: &serde_json::Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    n.to_string().parse::<i128>().ok()
}

pub fn add_numbers(args: &Value) -> Result<String, &'static str> {
    let a = match args.get("a") {
        Some(Value::Number(n)) => n,
        _ => return Err("add: 'a' must be a number"),
    };
    let b = match args.get("b") {
        Some(Value::Number(n)) => n,
        _ => return Err("add: 'b' must be a number"),
    };
    if let (Some(x), Some(y)) = (number_as_i128(a), number_as_i128(b)) {
        if let Some(sum) = x.checked_add(y) {
            return Ok(sum.to_string());
        }
    }
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
        return Err("add: numbers out of range");
    };
    match serde_json::Number::from_f64(x + y) {
        Some(n) => Ok(n.to_string()),
        None => Err("add: result is not finite"),
    }
}

// ---------------------------------------------------------------------------
// Raw JSON scanning (for texts that must be returned byte-exact)
// ---------------------------------------------------------------------------

pub fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `s[i]` is '"'; returns the index just past the closing quote.
pub fn skip_string(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match *s.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Returns the index just past the JSON value starting at `s[i]`.
pub fn skip_value(s: &[u8], i: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => skip_string(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *s.get(j)? {
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

/// Raw text of the top-level member `key` of the JSON object in `s` (the
/// last one if duplicated, like serde_json). `s` must already be valid JSON.
pub fn raw_member<'a>(s: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let mut i = skip_ws(s, 0);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut found = None;
    loop {
        i = skip_ws(s, i);
        match *s.get(i)? {
            b'}' => return found,
            b'"' => {}
            _ => return None,
        }
        let key_end = skip_string(s, i)?;
        let k = &s[i + 1..key_end - 1];
        i = skip_ws(s, key_end);
        if s.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(s, i + 1);
        let value_end = skip_value(s, i)?;
        if k == key.as_bytes() {
            found = Some(&s[i..value_end]);
        }
        i = skip_ws(s, value_end);
        match *s.get(i)? {
            b',' => i += 1,
            b'}' => return found,
            _ => return None,
        }
    }
}
