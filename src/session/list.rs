//! One pager for every list method (MCP pagination; contract §3 for `tools/list`): follow
//! `nextCursor` until it is absent. In MCP 2026-07-28 an empty string is a cursor like any
//! other ("MUST NOT be treated as the end"); the handshake era's servers send `""` to mean the
//! end, and are taken at their word. A cursor seen before in the same walk (A→B→A as well as
//! A→A) and the page cap end a walk: `tools/list` keeps what it has (§3: they stop the loop),
//! every other list fails naming the server, so a half-finished walk never replaces the list
//! the host had. Field reports of clients looping on `""` (one sent 170,000 requests in 55 s)
//! are why both bounds exist.

use super::{modern, Era, Session};
use crate::conn::{Req, RequestError};
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;

/// The most pages one walk follows (§3).
pub(super) const MAX_PAGES: usize = 1000;

/// The cursors of one walk so far.
pub(super) struct Pager {
    modern: bool,
    seen: HashSet<String>,
    pages: usize,
}

/// What a page's `nextCursor` means for the walk.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Ask for the page at this cursor next.
    Next(String),
    /// That was the last page.
    Done,
    /// The server sent a cursor it had sent before in this walk.
    Repeated(String),
    /// [`MAX_PAGES`] pages were followed and the server still has more.
    Capped,
}

impl Pager {
    pub(super) fn new(era: Era) -> Pager {
        Pager {
            modern: era == Era::Modern,
            seen: HashSet::new(),
            pages: 0,
        }
    }

    /// After one more page whose `nextCursor` is `next`: where the walk goes.
    pub(super) fn after(&mut self, next: Option<&str>) -> Step {
        self.pages += 1;
        match next {
            None => Step::Done,
            Some("") if !self.modern => Step::Done,
            Some(c) if self.seen.contains(c) => Step::Repeated(c.to_string()),
            Some(_) if self.pages >= MAX_PAGES => Step::Capped,
            Some(c) => {
                self.seen.insert(c.to_string());
                Step::Next(c.to_string())
            }
        }
    }

    /// Pages followed so far.
    pub(super) fn pages(&self) -> usize {
        self.pages
    }
}

impl Step {
    /// Why a walk that ended on `self` is refused, naming the server and the method.
    pub(super) fn refusal(&self, server: &str, method: &str, pages: usize) -> Option<String> {
        match self {
            Step::Repeated(c) => Some(format!(
                "server `{server}`: {method} sent the cursor {} again after {pages} pages (a cursor loop); the listing was given up and the one held before is kept",
                crate::json::to_text(&Value::String(crate::util::quoted(c)))
            )),
            Step::Capped => Some(format!(
                "server `{server}`: {method} still had more after {MAX_PAGES} pages; the listing was given up and the one held before is kept"
            )),
            _ => None,
        }
    }
}

/// The items of every page of a list method, and how long the listing may be taken as fresh.
pub(crate) struct Walked {
    pub(crate) items: Vec<Value>,
    /// MCP 2026-07-28: the smallest positive `ttlMs` of its pages (each page is fresh for its
    /// own time, the list as long as its stalest page); None: no time given.
    pub(crate) ttl: Option<Duration>,
}

/// Why a walk gave no listing.
pub(crate) enum WalkError {
    /// The server does not have the method (-32601): an empty list to a lenient host.
    NoMethod,
    /// Anything else, in words naming the server and the method (secrets masked, §9).
    Failed(String),
}

impl Session {
    /// Every page of `method` (`resources/list`, `prompts/list`, …), the items of each page's
    /// array `key` in order; in MCP 2026-07-28 with the `_meta` envelope.
    pub(crate) fn walk(&self, method: &str, key: &str) -> Result<Walked, WalkError> {
        let mut items = Vec::new();
        let mut ttl: Option<Duration> = None;
        let mut pager = Pager::new(self.era);
        let mut cursor: Option<String> = None;
        loop {
            let params = self.list_params(cursor.as_deref());
            let reply = self
                .request(&Req::plain(method, params.as_deref(), self.spec.timeout))
                .0;
            let page =
                reply.and_then(|l| crate::json::rpc::result_value(&l).map_err(RequestError::Rpc));
            let page = match page {
                Ok(p) => p,
                // Only a first page's -32601 says the server has no such list; later, it is
                // a failure like any other (what was walked is not a listing).
                Err(RequestError::Rpc(e))
                    if pager.pages() == 0
                        && e.get("code").and_then(Value::as_i64) == Some(-32601) =>
                {
                    return Err(WalkError::NoMethod)
                }
                Err(f) => {
                    let why = format!(
                        "server `{}`: {method} failed: {}",
                        self.spec.name,
                        self.explain(&f)
                    );
                    return Err(WalkError::Failed(why));
                }
            };
            match page.get(key) {
                Some(Value::Array(a)) => items.extend(a.iter().cloned()),
                None | Some(Value::Null) => {}
                Some(_) => {
                    let why = format!(
                        "server `{}`: {method} answered a `{key}` that is not an array",
                        self.spec.name
                    );
                    return Err(WalkError::Failed(why));
                }
            }
            if self.era == Era::Modern {
                if let Some(ms) = page
                    .get("ttlMs")
                    .and_then(Value::as_f64)
                    .filter(|ms| *ms > 0.0)
                {
                    let t = Duration::from_secs_f64((ms / 1000.0).min(1e9));
                    ttl = Some(ttl.map_or(t, |old| old.min(t)));
                }
            }
            let next = page.get("nextCursor").and_then(Value::as_str);
            match pager.after(next) {
                Step::Next(c) => cursor = Some(c),
                Step::Done => break,
                end => {
                    let why = end
                        .refusal(&self.spec.name, method, pager.pages())
                        .unwrap_or_default();
                    return Err(WalkError::Failed(self.spec.secrets().mask(&why)));
                }
            }
        }
        Ok(Walked { items, ttl })
    }

    /// A list request's params: the `_meta` envelope in MCP 2026-07-28, and the cursor; None
    /// for the handshake era's first page.
    pub(super) fn list_params(&self, cursor: Option<&str>) -> Option<String> {
        let modern = self.era == Era::Modern;
        let mut params = String::new();
        if modern {
            params.push_str(r#"{"_meta":{"#);
            params.push_str(&modern::envelope(
                self.with_resolver,
                None,
                self.spec.log_level,
                &[],
            ));
            params.push('}');
        }
        if let Some(c) = cursor {
            params.push_str(if modern { "," } else { "{" });
            params.push_str(r#""cursor":"#);
            crate::json::rpc::push_json_string(&mut params, c);
        }
        if params.is_empty() {
            return None;
        }
        params.push('}');
        Some(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(era: Era, cursors: &[Option<&str>]) -> Vec<Step> {
        let mut p = Pager::new(era);
        cursors.iter().map(|c| p.after(*c)).collect()
    }

    #[test]
    fn a_walk_ends_where_next_cursor_is_absent() {
        assert_eq!(
            walk(Era::Legacy, &[Some("1"), Some("2"), None]),
            [Step::Next("1".into()), Step::Next("2".into()), Step::Done]
        );
    }

    #[test]
    fn an_empty_cursor_is_a_cursor_in_2026_and_the_end_before() {
        assert_eq!(
            walk(Era::Modern, &[Some(""), None]),
            [Step::Next("".into()), Step::Done]
        );
        assert_eq!(walk(Era::Legacy, &[Some("")]), [Step::Done]);
        // `""` forever: the second one is a loop, not a second page.
        assert_eq!(
            walk(Era::Modern, &[Some(""), Some("")]),
            [Step::Next("".into()), Step::Repeated("".into())]
        );
    }

    #[test]
    fn a_cursor_seen_before_ends_the_walk_not_only_the_one_just_before() {
        // A→B→A: comparing with the previous cursor alone would run to the page cap.
        assert_eq!(
            walk(Era::Legacy, &[Some("A"), Some("B"), Some("A")]),
            [
                Step::Next("A".into()),
                Step::Next("B".into()),
                Step::Repeated("A".into())
            ]
        );
    }

    #[test]
    fn the_page_cap_ends_a_walk_that_never_repeats() {
        let mut p = Pager::new(Era::Modern);
        let mut last = Step::Done;
        for i in 0..MAX_PAGES + 5 {
            last = p.after(Some(&i.to_string()));
            if !matches!(last, Step::Next(_)) {
                break;
            }
        }
        assert_eq!(last, Step::Capped);
        assert_eq!(p.pages(), MAX_PAGES);
        let why = last.refusal("ev", "prompts/list", p.pages()).unwrap();
        assert!(
            why.contains("server `ev`") && why.contains("1000 pages"),
            "{why}"
        );
    }
}
