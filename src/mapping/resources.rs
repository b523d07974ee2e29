//! Resources and resource templates as a host sees them (MCP `resources/*`): each listed item
//! as the server sent it with its server's name put first, one per uri, in a stable order; what
//! a list change changed; a read's result kept as sent (`contents` and `_meta`; `blob` stays
//! base64 text, several contents and sub-resource uris kept). Pure: no I/O, nothing of C.

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// What one list change changed, keys sorted: added, removed, and still listed but listed
/// differently.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Change {
    pub(crate) added: Vec<String>,
    pub(crate) removed: Vec<String>,
    pub(crate) changed: Vec<String>,
}

impl Change {
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// `{"added":[…],"removed":[…],"changed":[…]}` members for an event.
    pub(crate) fn into_members(self, e: &mut Map<String, Value>) {
        let list = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
        e.insert("added".into(), list(self.added));
        e.insert("removed".into(), list(self.removed));
        e.insert("changed".into(), list(self.changed));
    }
}

/// A server's listed items keyed by `key` (`uri`, `uriTemplate`): the first of each key kept
/// (a repeated page lists one once), items without a string key left out (and counted).
pub(crate) fn unique<'a>(items: &'a [Value], key: &str) -> (Vec<(&'a str, &'a Value)>, usize) {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    let mut skipped = 0;
    for it in items {
        match it.get(key).and_then(Value::as_str) {
            Some(k) if seen.insert(k) => out.push((k, it)),
            Some(_) => {}
            None => skipped += 1,
        }
    }
    (out, skipped)
}

/// An item as listed to the host: `{"server":…, <the server's members but `server`>}`.
pub(crate) fn with_server(server: &str, item: &Value) -> Value {
    let mut m = Map::new();
    m.insert("server".into(), Value::String(server.to_string()));
    if let Value::Object(o) = item {
        for (k, v) in o {
            if k != "server" {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(m)
}

/// What changed between two listings of one server, by `key`.
pub(crate) fn diff(old: &[Value], new: &[Value], key: &str) -> Change {
    let (old, _) = unique(old, key);
    let (new, _) = unique(new, key);
    let before: HashMap<&str, &Value> = old.into_iter().collect();
    let mut change = Change::default();
    let mut now = HashSet::new();
    for (k, v) in new {
        now.insert(k);
        match before.get(k) {
            None => change.added.push(k.to_string()),
            Some(b) if *b != v => change.changed.push(k.to_string()),
            Some(_) => {}
        }
    }
    for k in before.keys() {
        if !now.contains(k) {
            change.removed.push(k.to_string());
        }
    }
    change.added.sort();
    change.removed.sort();
    change.changed.sort();
    change
}

/// A `resources/read` result as the host gets it: `contents` (an array, each entry as sent)
/// and `_meta` when the server sent one; or why the result is not one.
pub(crate) fn read_result(v: &Value) -> Result<String, String> {
    let Some(Value::Array(contents)) = v.get("contents") else {
        return Err("its result has no `contents` array".into());
    };
    if let Some(i) = contents.iter().position(|c| !c.is_object()) {
        return Err(format!("its `contents[{i}]` is not an object"));
    }
    let mut m = Map::new();
    m.insert("contents".into(), Value::Array(contents.clone()));
    if let Some(meta) = v.get("_meta") {
        m.insert("_meta".into(), meta.clone());
    }
    Ok(crate::json::to_text(&Value::Object(m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listed_items_keep_what_the_server_sent_with_the_server_first() {
        let it = json!({"uri":"a://1","name":"one","server":"spoof","size":12,"_meta":{"k":1}});
        assert_eq!(
            crate::json::to_text(&with_server("ev", &it)),
            r#"{"server":"ev","uri":"a://1","name":"one","size":12,"_meta":{"k":1}}"#
        );
        let items = [
            json!({"uri":"a"}),
            json!({"uri":"a","x":1}),
            json!({"name":"no uri"}),
        ];
        let (u, skipped) = unique(&items, "uri");
        assert_eq!((u.len(), skipped), (1, 1));
    }

    #[test]
    fn a_change_names_what_was_added_removed_and_changed() {
        let old = [
            json!({"uri":"a"}),
            json!({"uri":"b","n":1}),
            json!({"uri":"c"}),
        ];
        let new = [
            json!({"uri":"b","n":2}),
            json!({"uri":"c"}),
            json!({"uri":"d"}),
        ];
        assert_eq!(
            diff(&old, &new, "uri"),
            Change {
                added: vec!["d".into()],
                removed: vec!["a".into()],
                changed: vec!["b".into()]
            }
        );
        assert!(diff(&new, &new, "uri").is_empty());
    }

    #[test]
    fn a_read_result_keeps_its_contents_as_sent() {
        let v = json!({"contents":[{"uri":"a","text":"t","_meta":{"x":null}},{"uri":"a/b","blob":"AAE=","mimeType":"image/png"}],
                       "ttlMs":5,"resultType":"complete","_meta":{"m":1}});
        assert_eq!(
            read_result(&v).unwrap(),
            r#"{"contents":[{"uri":"a","text":"t","_meta":{"x":null}},{"uri":"a/b","blob":"AAE=","mimeType":"image/png"}],"_meta":{"m":1}}"#
        );
        assert!(read_result(&json!({"contents":{}})).is_err());
        assert!(read_result(&json!({"contents":[1]}))
            .unwrap_err()
            .contains("contents[0]"));
    }
}
