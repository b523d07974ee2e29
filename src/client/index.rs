//! The client's tool index (§0.1, §3): every connected server's listed tools under
//! their host names, the rendered tool list, and what a rebuild changed. An index is built
//! whole and swapped in whole, so a reader (`tn_list_tools`, a call resolving its tool) sees
//! one listing or the next, never half of a refresh.
//!
//! Names: the first server in name order wins a collision (§3) when nothing was listed yet; on
//! a rebuild a host name keeps the server that already held it as long as that server still
//! lists the tool (names of remaining tools are stable), and the new contenders are decided in
//! name order among themselves, the losers warned about as at connect.

use crate::config::ToolFilter;
use crate::mapping::listing::ListedTool;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Names a vanished tool is remembered by at most (a long run that renames tools often).
const REMEMBERED_REMOVALS: usize = 4096;

/// One server as a rebuild sees it.
pub(crate) struct Source<'a> {
    pub(crate) name: &'a str,
    pub(crate) filter: &'a ToolFilter,
    /// Its tools as last listed; None for a server that never connected (or is disabled).
    pub(crate) listed: Option<Arc<Vec<ListedTool>>>,
}

/// One listed tool under its host name.
pub(crate) struct Tool {
    pub(crate) server: usize,
    /// Shared, so a call takes it without copying (the per-call path).
    pub(crate) remote: Arc<str>,
    /// Its §0.1 object as `tn_list_tools` shows it.
    text: String,
}

/// What one rebuild changed for one server, host names sorted.
#[derive(Default, Debug, PartialEq)]
pub(crate) struct Change {
    pub(crate) added: Vec<String>,
    pub(crate) removed: Vec<String>,
    /// Still listed under the same name, listed differently (description, schema, …).
    pub(crate) changed: Vec<String>,
}

impl Change {
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The tools of every server, as of one listing each.
#[derive(Default)]
pub(crate) struct Index {
    pub(crate) tools: HashMap<String, Tool>,
    /// The tool list (c-api.md `tn_list_tools`), sorted by host name.
    pub(crate) json: String,
    /// Per server: how many tools it has here, and what the status should say of its listing
    /// (collisions, nameless tools).
    pub(crate) counts: Vec<usize>,
    pub(crate) warnings: Vec<Vec<String>>,
    /// Host names a rebuild removed and no later one gave back: the server that had each (a
    /// call to one says it was removed rather than that it never was).
    pub(crate) removed: HashMap<String, usize>,
}

/// Builds the index of `sources` (in name order), keeping the names `previous` gave to tools
/// still listed; returns it and what changed per server (empty without `previous`).
pub(crate) fn build(sources: &[Source<'_>], previous: Option<&Index>) -> (Index, Vec<Change>) {
    let n = sources.len();
    let mut warnings: Vec<Vec<String>> = vec![Vec::new(); n];
    // (host, server, remote, tool) for every allowed, named, first-listed tool.
    let mut candidates: Vec<(String, usize, String, &ListedTool)> = Vec::new();
    for (idx, src) in sources.iter().enumerate() {
        let Some(listed) = &src.listed else { continue };
        let mut here = HashSet::with_capacity(listed.len());
        for t in listed.iter() {
            let Some(remote) = t.name().map(Cow::into_owned) else {
                warnings[idx].push("a listed tool has no string `name`; skipped".into());
                continue;
            };
            // A server that lists a tool twice (a repeated page) means it once.
            if !src.filter.allows(&remote) || !here.insert(remote.clone()) {
                continue;
            }
            let host = crate::mapping::naming::tool_name(src.name, &remote);
            candidates.push((host, idx, remote, t));
        }
    }
    // Who owns each host name: first the holders that still list their tool, then the rest in
    // server name order (candidates are in that order).
    let mut owner: HashMap<String, usize> = HashMap::with_capacity(candidates.len());
    if let Some(prev) = previous {
        for (i, (host, idx, remote, _)) in candidates.iter().enumerate() {
            if prev
                .tools
                .get(host)
                .is_some_and(|t| t.server == *idx && *t.remote == **remote)
            {
                owner.entry(host.clone()).or_insert(i);
            }
        }
    }
    for (i, (host, ..)) in candidates.iter().enumerate() {
        owner.entry(host.clone()).or_insert(i);
    }
    let mut index = Index {
        tools: HashMap::with_capacity(owner.len()),
        counts: vec![0; n],
        ..Index::default()
    };
    let mut kept: Vec<usize> = Vec::with_capacity(owner.len());
    for (i, (host, idx, remote, _)) in candidates.iter().enumerate() {
        let o = owner[host];
        if o == i {
            kept.push(i);
            continue;
        }
        let (_, other_idx, other_remote, _) = &candidates[o];
        warnings[*idx].push(format!(
            "tool `{remote}` is not listed: its name `{host}` collides with tool `{other_remote}` of server `{}`",
            sources[*other_idx].name
        ));
    }
    kept.sort_by(|a, b| candidates[*a].0.cmp(&candidates[*b].0));
    let mut out = Vec::with_capacity(64 + 256 * kept.len());
    out.push(b'[');
    let mut one = Vec::new();
    for (k, i) in kept.iter().enumerate() {
        let (host, idx, remote, t) = &candidates[*i];
        one.clear();
        t.write(&mut one, host, sources[*idx].name, remote);
        if k > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&one);
        index.counts[*idx] += 1;
        index.tools.insert(
            host.clone(),
            Tool {
                server: *idx,
                remote: remote.as_str().into(),
                // Only serde_json's output and ASCII punctuation went in.
                text: String::from_utf8_lossy(&one).into_owned(),
            },
        );
    }
    out.push(b']');
    index.json = String::from_utf8(out).unwrap_or_default();
    index.warnings = warnings;
    let mut changes: Vec<Change> = (0..n).map(|_| Change::default()).collect();
    if let Some(prev) = previous {
        index.removed = prev.removed.clone();
        for (host, t) in &index.tools {
            index.removed.remove(host);
            match prev.tools.get(host) {
                Some(p) if p.server == t.server => {
                    if p.text != t.text {
                        changes[t.server].changed.push(host.clone());
                    }
                }
                Some(p) => {
                    changes[p.server].removed.push(host.clone());
                    changes[t.server].added.push(host.clone());
                }
                None => changes[t.server].added.push(host.clone()),
            }
        }
        for (host, p) in &prev.tools {
            if !index.tools.contains_key(host) {
                changes[p.server].removed.push(host.clone());
                if index.removed.len() >= REMEMBERED_REMOVALS {
                    index.removed.clear();
                }
                index.removed.insert(host.clone(), p.server);
            }
        }
        for c in &mut changes {
            c.added.sort();
            c.removed.sort();
            c.changed.sort();
        }
    }
    (index, changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Option<Arc<Vec<ListedTool>>> {
        let items: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"name":"{n}","description":"d {n}"}}"#))
            .collect();
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}}}}"#,
            items.join(",")
        );
        Some(Arc::new(
            crate::mapping::listing::page(&line).unwrap().tools,
        ))
    }

    fn names(index: &Index) -> Vec<(String, usize)> {
        let mut v: Vec<_> = index
            .tools
            .iter()
            .map(|(h, t)| (h.clone(), t.server))
            .collect();
        v.sort();
        v
    }

    /// `a` and `a_b` both name a tool `a_b_x`: at connect the first in name order wins; once
    /// held, a name stays with its holder when an earlier server starts listing it too.
    #[test]
    fn names_stay_with_their_holder_and_collisions_follow_name_order() {
        let all = ToolFilter::All;
        let src = |a: &[&str], ab: &[&str]| {
            vec![
                Source {
                    name: "a",
                    filter: &all,
                    listed: tools(a),
                },
                Source {
                    name: "a_b",
                    filter: &all,
                    listed: tools(ab),
                },
            ]
        };
        let (first, _) = build(&src(&["b_x", "y"], &["x"]), None);
        assert_eq!(
            names(&first),
            [("a_b_x".into(), 0), ("a_y".into(), 0)],
            "name order wins at connect"
        );
        assert!(first.warnings[1][0].contains("collides with tool `b_x` of server `a`"));
        // `a` drops b_x: a_b's x can take the name now.
        let (second, changes) = build(&src(&["y"], &["x"]), Some(&first));
        assert_eq!(names(&second), [("a_b_x".into(), 1), ("a_y".into(), 0)]);
        assert_eq!(changes[0].removed, ["a_b_x"]);
        assert_eq!(changes[1].added, ["a_b_x"]);
        assert!(second.removed.is_empty(), "the name is listed again");
        // `a` lists b_x again: the name stays with a_b, which still lists it.
        let (third, changes) = build(&src(&["b_x", "y"], &["x"]), Some(&second));
        assert_eq!(names(&third), names(&second));
        assert!(changes.iter().all(Change::is_empty), "{changes:?}");
        assert!(third.warnings[0][0].contains("collides with tool `x` of server `a_b`"));
        // a_b removes it: remembered as removed by server 1.
        let (fourth, changes) = build(&src(&["y"], &[]), Some(&third));
        assert_eq!(changes[1].removed, ["a_b_x"]);
        assert_eq!(fourth.removed.get("a_b_x"), Some(&1));
        assert_eq!(fourth.json, format!("[{}]", third.tools["a_y"].text));
        assert!(fourth
            .json
            .starts_with(r#"[{"name":"a_y","description":"d y""#));
    }

    #[test]
    fn a_changed_listing_is_named_as_changed() {
        let all = ToolFilter::All;
        let (first, _) = build(
            &[Source {
                name: "s",
                filter: &all,
                listed: tools(&["t"]),
            }],
            None,
        );
        let line =
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","description":"new"}]}}"#;
        let listed = Some(Arc::new(crate::mapping::listing::page(line).unwrap().tools));
        let (_, changes) = build(
            &[Source {
                name: "s",
                filter: &all,
                listed,
            }],
            Some(&first),
        );
        assert_eq!(
            changes[0],
            Change {
                changed: vec!["s_t".into()],
                ..Change::default()
            }
        );
    }
}
