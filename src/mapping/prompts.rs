//! Prompts as a host sees them (MCP `prompts/*`): every server's prompts under host names made
//! as tool names are (`sanitize(server) + "_" + sanitize(prompt)`, contract §0.1), collisions
//! decided as for tools (§3: the first server in name order wins, the loser is reported; on a
//! rebuild a name stays with the server that held it while it still lists the prompt), and a
//! `prompts/get` result kept as sent (every content block, unknown ones too). Pure.

use super::resources::Change;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// One server as an index build sees it.
pub(crate) struct Source<'a> {
    pub(crate) name: &'a str,
    /// Its prompts as last listed; None when never listed.
    pub(crate) prompts: Option<&'a [Value]>,
}

/// One prompt under its host name.
pub(crate) struct Prompt {
    pub(crate) server: usize,
    pub(crate) remote: String,
    /// Its entry as `tn_list_prompts` shows it.
    entry: Value,
}

/// Every server's prompts, as of one listing each.
#[derive(Default)]
pub(crate) struct PromptIndex {
    pub(crate) by_name: HashMap<String, Prompt>,
    /// `tn_list_prompts`' JSON, sorted by host name.
    pub(crate) json: String,
    /// Per server: what the status says of its prompts (collisions, nameless ones).
    pub(crate) warnings: Vec<Vec<String>>,
}

/// Builds the index of `sources` (in server name order), keeping the names `previous` gave to
/// prompts still listed.
pub(crate) fn build(sources: &[Source<'_>], previous: Option<&PromptIndex>) -> PromptIndex {
    let mut warnings = vec![Vec::new(); sources.len()];
    let mut candidates: Vec<(String, usize, &str, &Value)> = Vec::new();
    for (idx, src) in sources.iter().enumerate() {
        let Some(prompts) = src.prompts else { continue };
        let mut here = HashSet::new();
        for p in prompts {
            let Some(remote) = p.get("name").and_then(Value::as_str) else {
                warnings[idx].push("a listed prompt has no string `name`; skipped".into());
                continue;
            };
            if here.insert(remote) {
                let host = super::naming::tool_name(src.name, remote);
                candidates.push((host, idx, remote, p));
            }
        }
    }
    let mut owner: HashMap<&str, usize> = HashMap::new();
    if let Some(prev) = previous {
        for (i, (host, idx, remote, _)) in candidates.iter().enumerate() {
            if prev
                .by_name
                .get(host)
                .is_some_and(|p| p.server == *idx && p.remote == *remote)
            {
                owner.entry(host).or_insert(i);
            }
        }
    }
    for (i, (host, ..)) in candidates.iter().enumerate() {
        owner.entry(host).or_insert(i);
    }
    let mut by_name = HashMap::with_capacity(owner.len());
    for (i, (host, idx, remote, p)) in candidates.iter().enumerate() {
        let o = owner[host.as_str()];
        if o != i {
            let (_, other, other_remote, _) = &candidates[o];
            warnings[*idx].push(format!(
                "prompt `{remote}` is not listed: its name `{host}` collides with prompt `{other_remote}` of server `{}`",
                sources[*other].name
            ));
            continue;
        }
        by_name.insert(
            host.clone(),
            Prompt {
                server: *idx,
                remote: remote.to_string(),
                entry: entry(host, sources[*idx].name, p),
            },
        );
    }
    let mut names: Vec<&String> = by_name.keys().collect();
    names.sort();
    let list: Vec<Value> = names.iter().map(|n| by_name[*n].entry.clone()).collect();
    let json = crate::json::to_text(&Value::Array(list));
    PromptIndex {
        by_name,
        json,
        warnings,
    }
}

/// `{"name":<host>,"server","prompt":<remote>, the server's other members…}`, `arguments`
/// always an array.
fn entry(host: &str, server: &str, p: &Value) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(host.to_string()));
    m.insert("server".into(), Value::String(server.to_string()));
    m.insert(
        "prompt".into(),
        p.get("name").cloned().unwrap_or(Value::Null),
    );
    if let Value::Object(o) = p {
        for (k, v) in o {
            if !matches!(k.as_str(), "name" | "server" | "prompt") {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    if !matches!(m.get("arguments"), Some(Value::Array(_))) {
        m.insert("arguments".into(), Value::Array(Vec::new()));
    }
    Value::Object(m)
}

/// What changed for server `idx` between two indexes, by host name.
pub(crate) fn diff(old: &PromptIndex, new: &PromptIndex, idx: usize) -> Change {
    let of = |ix: &PromptIndex| -> HashMap<String, String> {
        ix.by_name
            .iter()
            .filter(|(_, p)| p.server == idx)
            .map(|(n, p)| (n.clone(), crate::json::to_text(&p.entry)))
            .collect()
    };
    let (before, after) = (of(old), of(new));
    let mut c = Change::default();
    for (n, e) in &after {
        match before.get(n) {
            None => c.added.push(n.clone()),
            Some(b) if b != e => c.changed.push(n.clone()),
            Some(_) => {}
        }
    }
    c.removed = before
        .keys()
        .filter(|n| !after.contains_key(*n))
        .cloned()
        .collect();
    c.added.sort();
    c.removed.sort();
    c.changed.sort();
    c
}

/// A `prompts/get` result as the host gets it: `description` when sent, `messages` (an array,
/// each message and its content block as sent), `_meta` when sent; or why it is not one.
pub(crate) fn get_result(v: &Value) -> Result<String, String> {
    let Some(Value::Array(messages)) = v.get("messages") else {
        return Err("its result has no `messages` array".into());
    };
    let mut m = Map::new();
    if let Some(d) = v.get("description") {
        m.insert("description".into(), d.clone());
    }
    m.insert("messages".into(), Value::Array(messages.clone()));
    if let Some(meta) = v.get("_meta") {
        m.insert("_meta".into(), meta.clone());
    }
    Ok(crate::json::to_text(&Value::Object(m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn src<'a>(name: &'a str, prompts: &'a [Value]) -> Source<'a> {
        Source {
            name,
            prompts: Some(prompts),
        }
    }

    #[test]
    fn host_names_and_collisions_follow_the_tool_rules() {
        let a =
            [json!({"name":"x y","description":"d","arguments":[{"name":"city","required":true}]})];
        let b = [json!({"name":"x.y"}), json!({"name":"z"})];
        let ix = build(&[src("a", &a), src("a", &b)], None);
        assert_eq!(ix.by_name["a_x_y"].server, 0, "the first server wins");
        assert!(
            ix.warnings[1][0].contains("collides with prompt `x y` of server `a`"),
            "{:?}",
            ix.warnings
        );
        assert_eq!(
            ix.json,
            r#"[{"name":"a_x_y","server":"a","prompt":"x y","description":"d","arguments":[{"name":"city","required":true}]},{"name":"a_z","server":"a","prompt":"z","arguments":[]}]"#
        );
        // A rebuild keeps the name with its holder while it still lists the prompt.
        let ix2 = build(&[src("a", &a), src("a", &b)], Some(&ix));
        assert_eq!(ix2.by_name["a_x_y"].remote, "x y");
    }

    #[test]
    fn a_diff_names_host_names() {
        let before = [json!({"name":"p","description":"1"}), json!({"name":"q"})];
        let after = [json!({"name":"p","description":"2"}), json!({"name":"r"})];
        let old = build(&[src("ev", &before)], None);
        let new = build(&[src("ev", &after)], Some(&old));
        let c = diff(&old, &new, 0);
        assert_eq!(
            (c.added, c.removed, c.changed),
            (
                vec!["ev_r".into()],
                vec!["ev_q".into()],
                vec!["ev_p".into()]
            )
        );
    }

    #[test]
    fn a_get_result_keeps_every_block_as_sent() {
        let v = json!({"description":"d","messages":[
            {"role":"user","content":{"type":"resource","resource":{"uri":"a","blob":"AA=="},"annotations":{"priority":1}}},
            {"role":"assistant","content":{"type":"x-new","foo":[1,2]}}],"resultType":"complete"});
        assert_eq!(
            get_result(&v).unwrap(),
            r#"{"description":"d","messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"a","blob":"AA=="},"annotations":{"priority":1}}},{"role":"assistant","content":{"type":"x-new","foo":[1,2]}}]}"#
        );
        assert!(get_result(&json!({})).is_err());
    }
}
