//! Skills (SEP-2640, issue 27), pure: whether a server offers them, its `skills/list` entries
//! checked, a `resources/read` result's bytes, and the verification on read: the size, then the
//! SHA-256 digest, then (for a `SKILL.md`) its YAML frontmatter compared field by field with the
//! entry's. No I/O: the session asks, this decides.

use super::frontmatter::frontmatter;
use base64::Engine;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The extension's key in a server's `capabilities.extensions`.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The per-skill limits every host supports (SEP-2640 "Limits"); a larger skill is declined.
pub(crate) const MAX_FILES: usize = 512;
pub(crate) const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

/// One file of a skill as its entry lists it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct File {
    pub(crate) uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub(crate) digest: String,
    pub(crate) size: u64,
}

/// A skill's files: a complete list, or `"dynamic"` (no digests to verify against).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Files {
    Listed(Vec<File>),
    Dynamic,
}

/// A skill entry (from `skills/list` or `skills/get`), checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    /// The URI of its `SKILL.md`.
    pub(crate) uri: String,
    pub(crate) frontmatter: Map<String, Value>,
    pub(crate) files: Files,
    /// The entry as the server sent it: the host gets it verbatim.
    pub(crate) raw: Value,
}

impl Entry {
    /// The skill's root: its `SKILL.md` URI without `/SKILL.md`.
    pub(crate) fn root(&self) -> &str {
        self.uri.strip_suffix("/SKILL.md").unwrap_or(&self.uri)
    }

    /// The listed file with this URI.
    pub(crate) fn file(&self, uri: &str) -> Option<&File> {
        match &self.files {
            Files::Listed(files) => files.iter().find(|f| f.uri == uri),
            Files::Dynamic => None,
        }
    }

    /// Why this host declines to load the skill at all, if it does: `"dynamic"` resources
    /// offer nothing to verify against, and a skill past the limits is not guaranteed loadable.
    pub(crate) fn declined(&self) -> Option<String> {
        let files = match &self.files {
            Files::Dynamic => {
                return Some(
                    "its entry's resources are \"dynamic\": there are no digests to verify it against, and toolnexus loads only skills it can verify".into(),
                )
            }
            Files::Listed(files) => files,
        };
        // Sizes are the server's: summed without wrapping.
        let total = files.iter().fold(0u64, |t, f| t.saturating_add(f.size));
        if files.len() > MAX_FILES {
            return Some(format!(
                "its entry lists {} files, more than the {MAX_FILES} a skill may have",
                files.len()
            ));
        }
        if total > MAX_TOTAL_BYTES {
            return Some(format!(
                "its entry's files add up to {total} bytes, more than the {MAX_TOTAL_BYTES} a skill may have"
            ));
        }
        None
    }
}

/// A file of the skill named by its URI, or by a path relative to the skill's root (as its
/// SKILL.md refers to its files: `references/FORMS.md`, `./references/FORMS.md`), resolved as a
/// filesystem path would be (SEP-2640): `.` and empty segments dropped, `..` taken back within
/// the root; an absolute path, or one that leaves the root, is refused.
pub(crate) fn resolve(entry: &Entry, file: &str) -> Result<String, String> {
    if file.contains("://") {
        return Ok(file.to_string());
    }
    let refused = || {
        format!(
            "`{}` is neither a URI nor a path inside the skill",
            cut(file)
        )
    };
    if file.starts_with('/') {
        return Err(refused());
    }
    let mut kept: Vec<&str> = Vec::new();
    for seg in file.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                kept.pop().ok_or_else(refused)?;
            }
            s => kept.push(s),
        }
    }
    if kept.is_empty() {
        return Err(refused());
    }
    Ok(format!("{}/{}", entry.root(), kept.join("/")))
}

/// Whether a server's capabilities declare the extension (an object, empty or with settings).
pub(crate) fn offered(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// One `skills/list` page: each entry checked (or why it is invalid, with its URI when it has
/// one), and the next cursor.
pub(crate) struct Page {
    pub(crate) entries: Vec<Result<Entry, String>>,
    pub(crate) next: Option<String>,
}

/// A `skills/list` result as a [`Page`].
pub(crate) fn page(result: &Value) -> Result<Page, String> {
    let Some(skills) = result.get("skills").and_then(Value::as_array) else {
        return Err("the skills/list result has no `skills` array".into());
    };
    let entries = skills
        .iter()
        .enumerate()
        .map(|(i, v)| {
            entry(v).map_err(|why| match v.get("uri").and_then(Value::as_str) {
                Some(uri) => format!("skill `{}` is not listed: {why}", cut(uri)),
                None => format!("skill entry {i} is not listed: {why}"),
            })
        })
        .collect();
    let next = result
        .get("nextCursor")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Page { entries, next })
}

/// A skill entry checked against SEP-2640 "Skill Entries": a `SKILL.md` URI whose last path
/// segment is the frontmatter's `name`, `name` and `description` strings, and `resources` a
/// complete list (each file once, inside the skill, the `SKILL.md` among them, digests
/// `sha256:<64 lowercase hex>`, sizes whole numbers) or `"dynamic"`.
pub(crate) fn entry(v: &Value) -> Result<Entry, String> {
    let o = v.as_object().ok_or("it is not an object")?;
    let uri = o
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("it has no string `uri`")?;
    let root = uri
        .strip_suffix("/SKILL.md")
        .filter(|r| !r.is_empty() && !r.ends_with('/') && !r.ends_with(':'))
        .ok_or("its `uri` does not name a SKILL.md")?;
    let frontmatter = o
        .get("frontmatter")
        .and_then(Value::as_object)
        .ok_or("it has no `frontmatter` object")?;
    let name = frontmatter
        .get("name")
        .and_then(Value::as_str)
        .ok_or("its frontmatter has no string `name`")?;
    if !frontmatter.get("description").is_some_and(Value::is_string) {
        return Err("its frontmatter has no string `description`".into());
    }
    let last = root.rsplit('/').next().unwrap_or(root);
    if last != name {
        return Err(format!(
            "its URI's last segment `{}` is not its frontmatter's name `{}`",
            cut(last),
            cut(name)
        ));
    }
    let files = match o.get("resources") {
        Some(Value::String(s)) if s == "dynamic" => Files::Dynamic,
        Some(Value::Array(items)) => Files::Listed(files(items, uri, root)?),
        Some(_) => return Err("its `resources` is neither a list nor \"dynamic\"".into()),
        None => return Err("it has no `resources`".into()),
    };
    Ok(Entry {
        uri: uri.to_string(),
        frontmatter: frontmatter.clone(),
        files,
        raw: v.clone(),
    })
}

fn files(items: &[Value], uri: &str, root: &str) -> Result<Vec<File>, String> {
    let mut out: Vec<File> = Vec::with_capacity(items.len());
    // A listing may be large (one page up to maxMessageBytes): duplicates found in one pass.
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let f_uri = item
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("resources[{i}] has no string `uri`"))?;
        let inside = f_uri
            .strip_prefix(root)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .split('/')
                        .all(|s| !s.is_empty() && s != "." && s != "..")
            });
        if !inside {
            return Err(format!(
                "resources[{i}] `{}` is not a file of the skill",
                cut(f_uri)
            ));
        }
        let digest = item
            .get("digest")
            .and_then(Value::as_str)
            .filter(|d| is_digest(d))
            .ok_or_else(|| {
                format!("resources[{i}] has no digest of the form sha256:<64 lowercase hex digits>")
            })?;
        let size = item
            .get("size")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("resources[{i}] has no `size` (a whole number of bytes)"))?;
        if !seen.insert(f_uri) {
            return Err(format!("resources lists `{}` twice", cut(f_uri)));
        }
        out.push(File {
            uri: f_uri.to_string(),
            digest: digest.to_string(),
            size,
        });
    }
    if !out.iter().any(|f| f.uri == uri) {
        return Err("its resources do not list its SKILL.md".into());
    }
    Ok(out)
}

fn is_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// What `resources/read` returned for one URI.
#[derive(Debug, PartialEq)]
pub(crate) struct Content {
    /// The raw bytes (a text's UTF-8, a blob decoded): what size and digest cover.
    pub(crate) bytes: Vec<u8>,
    /// The text, when the server sent text.
    pub(crate) text: Option<String>,
    /// The base64 blob as sent, when the server sent a blob.
    pub(crate) blob: Option<String>,
    pub(crate) mime_type: Option<String>,
}

/// The content of `uri` in a `resources/read` result: the item with that URI (or the only one).
pub(crate) fn content(result: &Value, uri: &str) -> Result<Content, String> {
    let items = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the resources/read result has no `contents` array")?;
    let item = match items
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
    {
        Some(c) => c,
        None if items.len() == 1 => &items[0],
        None => {
            return Err(format!(
                "the resources/read result has no content for `{}`",
                cut(uri)
            ))
        }
    };
    let mime_type = item
        .get("mimeType")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(text) = item.get("text").and_then(Value::as_str) {
        return Ok(Content {
            bytes: text.as_bytes().to_vec(),
            text: Some(text.to_string()),
            blob: None,
            mime_type,
        });
    }
    if let Some(blob) = item.get("blob").and_then(Value::as_str) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|_| "the resources/read result's `blob` is not base64".to_string())?;
        return Ok(Content {
            bytes,
            text: None,
            blob: Some(blob.to_string()),
            mime_type,
        });
    }
    Err("the resources/read result's content has neither `text` nor `blob`".into())
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Verification on read (SEP-2640): the byte length against the entry's `size` (a mismatch on
/// its own), then the SHA-256 against its `digest`. The error says which, and both values.
pub(crate) fn check_bytes(file: &File, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() as u64 != file.size {
        return Err(format!(
            "size mismatch: it is {} bytes, its entry says {}",
            bytes.len(),
            file.size
        ));
    }
    let got = digest(bytes);
    if got != file.digest {
        return Err(format!(
            "digest mismatch: its SHA-256 is {got}, its entry says {}",
            file.digest
        ));
    }
    Ok(())
}

/// Frontmatter verification (SEP-2640): the SKILL.md's YAML frontmatter, parsed, equals the
/// entry's `frontmatter` field by field; the error names each field that differs.
pub(crate) fn check_frontmatter(entry: &Entry, text: &str) -> Result<(), String> {
    let file = frontmatter(text)?;
    let mut fields: Vec<&String> = entry.frontmatter.keys().collect();
    fields.extend(file.keys().filter(|k| !entry.frontmatter.contains_key(*k)));
    let differ: Vec<String> = fields
        .into_iter()
        .filter(|k| match (entry.frontmatter.get(*k), file.get(*k)) {
            (Some(a), Some(b)) => !same(a, b),
            _ => true,
        })
        .map(|k| {
            let say = |v: Option<&Value>| {
                v.map_or_else(|| "nothing".to_string(), |v| cut(&crate::json::to_text(v)))
            };
            format!(
                "`{}` (the file says {}, the entry {})",
                cut(k),
                say(file.get(k)),
                say(entry.frontmatter.get(k))
            )
        })
        .collect();
    if differ.is_empty() {
        return Ok(());
    }
    Err(format!(
        "frontmatter mismatch: its YAML frontmatter differs from its entry's in {}",
        differ.join(", ")
    ))
}

/// JSON equality with numbers compared as numbers (`1` and `1.0` are the same value, as a
/// deep-equal comparison in JavaScript has them).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.to_string() == y.to_string(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn cut(s: &str) -> String {
    crate::util::cut(s, 120)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SKILL: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
    const FORMS: &str = "Supporting content.\n";

    fn listed(skill: &str) -> Value {
        json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
            "resources": [
                {"uri": "skill://pdf-processing/SKILL.md", "digest": digest(skill.as_bytes()), "size": skill.len()},
                {"uri": "skill://pdf-processing/references/FORMS.md", "digest": digest(FORMS.as_bytes()), "size": FORMS.len()}
            ]
        })
    }

    /// The digests of the conformance suite's files (sep-2640-client-verify-*).
    #[test]
    fn digests_are_lowercase_hex_sha256() {
        let d = digest(SKILL.as_bytes());
        assert!(
            d.starts_with("sha256:a6d5f1f4") && d.ends_with("02d5ba"),
            "{d}"
        );
        assert_eq!(SKILL.len(), 97);
        assert!(digest(FORMS.as_bytes()).starts_with("sha256:8548b039"));
    }

    #[test]
    fn a_good_skill_passes_every_check() {
        let e = entry(&listed(SKILL)).unwrap();
        assert_eq!(e.root(), "skill://pdf-processing");
        let f = e.file(&e.uri).unwrap();
        check_bytes(f, SKILL.as_bytes()).unwrap();
        check_frontmatter(&e, SKILL).unwrap();
        assert_eq!(e.declined(), None);
    }

    /// The three tampered SKILL.md files of the suite: each fails its own check, in order.
    #[test]
    fn tampering_is_caught_by_size_digest_and_frontmatter() {
        let e = entry(&listed(SKILL)).unwrap();
        let f = e.file(&e.uri).unwrap();
        let evil = SKILL.replace("Skill body.", "Evil body!!");
        let why = check_bytes(f, evil.as_bytes()).unwrap_err();
        assert!(
            why.starts_with("digest mismatch: its SHA-256 is sha256:"),
            "{why}"
        );
        let longer = format!("{SKILL}extra bytes the entry did not account for\n");
        let why = check_bytes(f, longer.as_bytes()).unwrap_err();
        assert_eq!(why, "size mismatch: it is 139 bytes, its entry says 97");
        // The entry describes the tampered file's bytes: only the frontmatter tells.
        let exfil = SKILL.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let e = entry(&listed(&exfil)).unwrap();
        check_bytes(e.file(&e.uri).unwrap(), exfil.as_bytes()).unwrap();
        let why = check_frontmatter(&e, &exfil).unwrap_err();
        assert_eq!(
            why,
            r#"frontmatter mismatch: its YAML frontmatter differs from its entry's in `description` (the file says "Exfiltrate credentials", the entry "Extract, fill, and assemble PDF documents")"#
        );
    }

    #[test]
    fn frontmatter_is_yaml_with_nesting_numbers_and_a_bom() {
        let text = "\u{feff}---\r\nname: x\ndescription: \"quoted: yes\"\nmetadata:\n  version: 2.1\n  tags: [a, b]\nlicense: MIT\ncount: 3\nflag: true\n---  \n# body\n---\n";
        let fm = frontmatter(text).unwrap();
        assert_eq!(
            Value::Object(fm.clone()),
            json!({"name":"x","description":"quoted: yes","metadata":{"version":2.1,"tags":["a","b"]},"license":"MIT","count":3,"flag":true})
        );
        // 3 and 3.0 are one number; the JSON side may be written either way.
        let e = Entry {
            uri: "skill://x/SKILL.md".into(),
            frontmatter: json!({"name":"x","description":"quoted: yes","metadata":{"tags":["a","b"],"version":2.10},"license":"MIT","count":3.0,"flag":true}).as_object().unwrap().clone(),
            files: Files::Dynamic,
            raw: Value::Null,
        };
        check_frontmatter(&e, text).unwrap();
        // A field only one side has is a difference too.
        let mut e2 = e.clone();
        e2.frontmatter.remove("license");
        let why = check_frontmatter(&e2, text).unwrap_err();
        assert!(
            why.contains("`license` (the file says \"MIT\", the entry nothing)"),
            "{why}"
        );
        for (bad, says) in [
            ("no frontmatter\n", "does not begin with YAML frontmatter"),
            ("---\nname: x\n", "no closing `---` line"),
            ("---\n- a\n- b\n---\n", "not a mapping"),
            ("---\nname: [unclosed\n---\n", "does not parse"),
            ("---\nn: .inf\n---\n", "which JSON cannot"),
        ] {
            let why = frontmatter(bad).unwrap_err();
            assert!(why.contains(says), "{bad:?}: {why}");
        }
    }

    /// A listing may be large (one page up to maxMessageBytes): an entry of 100,000 files is
    /// read in one pass (a pairwise duplicate check took some 5·10^9 comparisons, minutes in a
    /// debug build), and declined later for its count.
    #[test]
    #[cfg_attr(miri, ignore = "a time bound over 100,000 files: minutes in Miri")]
    fn a_huge_entry_is_read_in_linear_time() {
        let mut v = listed(SKILL);
        let d = digest(b"x");
        let many: Vec<Value> = (0..100_000)
            .map(
                |i| json!({"uri": format!("skill://pdf-processing/f/{i}"), "digest": d, "size": 1}),
            )
            .collect();
        v["resources"].as_array_mut().unwrap().extend(many);
        let t0 = std::time::Instant::now();
        let e = entry(&v).unwrap();
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            t0.elapsed()
        );
        assert!(e.declined().unwrap().contains("100002 files"));
    }

    #[test]
    fn invalid_entries_say_why() {
        let good = listed(SKILL);
        let with = |path: &str, v: Value| {
            let mut e = good.clone();
            *e.pointer_mut(path).unwrap() = v;
            entry(&e).unwrap_err()
        };
        assert!(with("/uri", json!("skill://pdf-processing/README.md"))
            .contains("does not name a SKILL.md"));
        assert!(with("/frontmatter/name", json!("other"))
            .contains("last segment `pdf-processing` is not its frontmatter's name `other`"));
        assert!(with("/frontmatter/description", json!(3)).contains("no string `description`"));
        assert!(with("/resources", json!({})).contains("neither a list nor \"dynamic\""));
        assert!(
            with("/resources/1/digest", json!("sha256:ABC")).contains("resources[1] has no digest")
        );
        assert!(with("/resources/1/size", json!(-1)).contains("resources[1] has no `size`"));
        assert!(with("/resources/1/uri", json!("skill://other/x.md"))
            .contains("is not a file of the skill"));
        assert!(with(
            "/resources/1/uri",
            json!("skill://pdf-processing/../x/SKILL.md")
        )
        .contains("is not a file of the skill"));
        assert!(
            with("/resources/0/uri", json!("skill://pdf-processing/a.md"))
                .contains("do not list its SKILL.md")
        );
        let dup = with("/resources/1/uri", json!("skill://pdf-processing/SKILL.md"));
        assert!(dup.contains("twice"), "{dup}");
        let mut no = good.clone();
        no.as_object_mut().unwrap().remove("resources");
        assert_eq!(entry(&no).unwrap_err(), "it has no `resources`");
    }

    #[test]
    fn relative_paths_resolve_against_the_skill_root() {
        let e = entry(&listed(SKILL)).unwrap();
        assert_eq!(
            resolve(&e, "references/FORMS.md").unwrap(),
            "skill://pdf-processing/references/FORMS.md"
        );
        assert_eq!(resolve(&e, "skill://x/y").unwrap(), "skill://x/y");
        let root = "skill://pdf-processing/";
        for (path, file) in [
            ("./references/FORMS.md", "references/FORMS.md"),
            ("references/./FORMS.md", "references/FORMS.md"),
            ("references//FORMS.md", "references/FORMS.md"),
            ("assets/../references/FORMS.md", "references/FORMS.md"),
        ] {
            assert_eq!(
                resolve(&e, path).unwrap(),
                format!("{root}{file}"),
                "{path}"
            );
        }
        for bad in [
            "",
            ".",
            "/etc/passwd",
            "../other/SKILL.md",
            "a/../../x",
            "a/..",
        ] {
            assert!(resolve(&e, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dynamic_and_oversized_skills_are_declined() {
        let mut v = listed(SKILL);
        v["resources"] = json!("dynamic");
        let e = entry(&v).unwrap();
        assert!(e.declined().unwrap().contains("\"dynamic\""));
        let mut v = listed(SKILL);
        v["resources"][1]["size"] = json!(MAX_TOTAL_BYTES);
        assert!(entry(&v)
            .unwrap()
            .declined()
            .unwrap()
            .contains("more than the 16777216"));
        // Sizes that would wrap a sum still add up to too much.
        let mut v = listed(SKILL);
        v["resources"][0]["size"] = json!(u64::MAX - 100);
        v["resources"][1]["size"] = json!(200);
        assert!(entry(&v).unwrap().declined().unwrap().contains("more than"));
    }

    #[test]
    fn pages_and_contents() {
        let r =
            json!({"skills": [listed(SKILL), {"uri": "skill://b/SKILL.md"}, 7], "nextCursor": "2"});
        let p = page(&r).unwrap();
        assert_eq!(p.next.as_deref(), Some("2"));
        assert!(p.entries[0].is_ok());
        assert_eq!(
            p.entries[1].as_ref().unwrap_err(),
            "skill `skill://b/SKILL.md` is not listed: it has no `frontmatter` object"
        );
        assert_eq!(
            p.entries[2].as_ref().unwrap_err(),
            "skill entry 2 is not listed: it is not an object"
        );
        assert!(page(&json!({})).is_err());
        let c = content(
            &json!({"contents":[{"uri":"u","mimeType":"text/markdown","text":"hé"}]}),
            "u",
        )
        .unwrap();
        assert_eq!(
            (c.bytes, c.text.as_deref()),
            ("hé".as_bytes().to_vec(), Some("hé"))
        );
        let c = content(&json!({"contents":[{"uri":"u","blob":"AAEC"}]}), "u").unwrap();
        assert_eq!(c.bytes, vec![0, 1, 2]);
        assert!(content(
            &json!({"contents":[{"uri":"a","text":""},{"uri":"b","text":""}]}),
            "u"
        )
        .is_err());
        assert!(offered(&json!({"extensions":{EXTENSION:{}}})));
        assert!(!offered(&json!({"extensions":{EXTENSION:true}})) && !offered(&json!({})));
    }
}
