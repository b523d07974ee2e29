//! `--resources`: the pages of `resources/list`, `resources/templates/list` and `prompts/list`
//! (`--resource-page-size`, `--cursor-loop`, `--empty-cursor`, `--empty-cursor-loop`), and the
//! members the modern era adds to their results.

use crate::opts;
use serde_json::{json, Map, Value};

/// How the three listings hand out cursors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorMode {
    /// `nextCursor` is the decimal offset of the next page (none after the last).
    Offset,
    /// `--cursor-loop`: no cursor → page 0 + "A"; "A" → page 1 + "B"; "B" → page 2 + "A".
    Loop,
    /// `--empty-cursor`: page 0 + ""; "" → the rest, no `nextCursor`.
    Empty,
    /// `--empty-cursor-loop`: no cursor → page 0, "" → page 1; every `nextCursor` is "".
    EmptyLoop,
}

/// One page: the items `start..end` of the listing and the `nextCursor`, if any.
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    pub start: usize,
    pub end: usize,
    pub next: Option<String>,
}

/// The page `cursor` names in a listing of `total` items; `Err` for a bad cursor (-32602).
/// `size` is `--resource-page-size`; the loop and empty-cursor modes without it split the
/// listing in two halves (the first one the larger).
pub fn page(
    mode: CursorMode,
    size: Option<usize>,
    total: usize,
    cursor: Option<&Value>,
) -> Result<Page, ()> {
    let cursor = match cursor {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => return Err(()),
    };
    let half = total.div_ceil(2).max(1);
    let k = size.unwrap_or(half);
    // Page i of size k, clamped.
    let nth = |i: usize, next: Option<&str>| {
        let start = i.saturating_mul(k).min(total);
        Page {
            start,
            end: start.saturating_add(k).min(total),
            next: next.map(str::to_owned),
        }
    };
    match mode {
        CursorMode::Offset => {
            let start = match cursor {
                None => 0,
                Some(c) => c.parse::<usize>().map_err(|_| ())?.min(total),
            };
            let end = size.map_or(total, |n| start.saturating_add(n).min(total));
            let next = (end < total).then(|| end.to_string());
            Ok(Page { start, end, next })
        }
        CursorMode::Loop => match cursor {
            None => Ok(nth(0, Some("A"))),
            Some("A") => Ok(nth(1, Some("B"))),
            Some("B") => Ok(nth(2, Some("A"))),
            Some(_) => Err(()),
        },
        CursorMode::Empty => match cursor {
            None => Ok(nth(0, Some(""))),
            Some("") => Ok(Page {
                start: k.min(total),
                end: total,
                next: None,
            }),
            Some(_) => Err(()),
        },
        CursorMode::EmptyLoop => match cursor {
            None => Ok(nth(0, Some(""))),
            Some("") => Ok(nth(1, Some(""))),
            Some(_) => Err(()),
        },
    }
}

/// A listing's result: `{<key>: items[page], nextCursor?}`; `Err` for a bad cursor.
pub fn listing(key: &str, items: Vec<Value>, params: Option<&Value>) -> Result<Value, ()> {
    let o = opts();
    let cursor = params.and_then(|p| p.get("cursor"));
    let p = page(o.cursor_mode, o.resource_page_size, items.len(), cursor)?;
    let mut r = Map::new();
    let shown: Vec<Value> = items
        .into_iter()
        .skip(p.start)
        .take(p.end - p.start)
        .collect();
    r.insert(key.to_owned(), Value::Array(shown));
    if let Some(c) = p.next {
        r.insert("nextCursor".into(), Value::String(c));
    }
    Ok(Value::Object(r))
}

/// `result` as the modern era answers it: `resultType` first, then (for the cacheable results:
/// the listings and `resources/read`) `ttlMs` (`--resource-ttl-ms`) and `cacheScope` "public".
/// The handshake era's result is returned as it is.
pub fn era(result: Value, modern: bool, cacheable: bool) -> Value {
    if !modern {
        return result;
    }
    let mut m = Map::new();
    m.insert("resultType".into(), json!("complete"));
    if cacheable {
        m.insert("ttlMs".into(), json!(opts().resource_ttl_ms));
        m.insert("cacheScope".into(), json!("public"));
    }
    if let Value::Object(mut r) = result {
        m.append(&mut r);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(start: usize, end: usize, next: Option<&str>) -> Page {
        Page {
            start,
            end,
            next: next.map(str::to_owned),
        }
    }

    #[test]
    fn offsets() {
        let c = |s: &str| Value::String(s.into());
        let m = CursorMode::Offset;
        assert_eq!(page(m, None, 8, None), Ok(p(0, 8, None)));
        assert_eq!(page(m, Some(3), 8, None), Ok(p(0, 3, Some("3"))));
        assert_eq!(page(m, Some(3), 8, Some(&c("6"))), Ok(p(6, 8, None)));
        assert_eq!(page(m, Some(3), 8, Some(&c("x"))), Err(()));
        assert_eq!(page(m, Some(3), 8, Some(&json!(3))), Err(()));
        assert_eq!(
            page(m, Some(3), 8, Some(&Value::Null)),
            Ok(p(0, 3, Some("3")))
        );
    }

    #[test]
    fn loops_and_empty_cursors() {
        let c = |s: &str| Value::String(s.into());
        let l = CursorMode::Loop;
        assert_eq!(page(l, Some(2), 5, None), Ok(p(0, 2, Some("A"))));
        assert_eq!(page(l, Some(2), 5, Some(&c("A"))), Ok(p(2, 4, Some("B"))));
        assert_eq!(page(l, Some(2), 5, Some(&c("B"))), Ok(p(4, 5, Some("A"))));
        assert_eq!(page(l, Some(2), 5, Some(&c("C"))), Err(()));
        let e = CursorMode::Empty;
        assert_eq!(page(e, None, 5, None), Ok(p(0, 3, Some(""))));
        assert_eq!(page(e, None, 5, Some(&c(""))), Ok(p(3, 5, None)));
        assert_eq!(page(e, None, 5, Some(&c("3"))), Err(()));
        let f = CursorMode::EmptyLoop;
        assert_eq!(page(f, Some(1), 5, None), Ok(p(0, 1, Some(""))));
        assert_eq!(page(f, Some(1), 5, Some(&c(""))), Ok(p(1, 2, Some(""))));
    }
}
