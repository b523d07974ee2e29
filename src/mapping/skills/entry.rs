//! A server's Skills entries (SEP-2640): whether it offers them, its `skills/list` pages, each
//! entry checked (its `SKILL.md`, its name, its files and their digests and sizes within
//! bounds), and a file's path in a skill resolved against the skill's root.

use super::SKILLS_EXTENSION;
use serde_json::{Map, Value};

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
pub(crate) struct SkillEntry {
    /// The URI of its `SKILL.md`.
    pub(crate) uri: String,
    pub(crate) frontmatter: Map<String, Value>,
    pub(crate) files: Files,
    /// The entry as the server sent it: the host gets it verbatim.
    pub(crate) raw: Value,
}

impl SkillEntry {
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
pub(crate) fn resolve(entry: &SkillEntry, file: &str) -> Result<String, String> {
    if file.contains("://") {
        return Ok(file.to_string());
    }
    let refused = || {
        format!(
            "`{}` is neither a URI nor a path inside the skill",
            crate::util::quoted(file)
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
        .and_then(|e| e.get(SKILLS_EXTENSION))
        .is_some_and(Value::is_object)
}

/// One `skills/list` page: each entry checked (or why it is invalid, with its URI when it has
/// one), and the next cursor.
pub(crate) struct Page {
    pub(crate) entries: Vec<Result<SkillEntry, String>>,
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
                Some(uri) => format!("skill `{}` is not listed: {why}", crate::util::quoted(uri)),
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
pub(crate) fn entry(v: &Value) -> Result<SkillEntry, String> {
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
            crate::util::quoted(last),
            crate::util::quoted(name)
        ));
    }
    let files = match o.get("resources") {
        Some(Value::String(s)) if s == "dynamic" => Files::Dynamic,
        Some(Value::Array(items)) => Files::Listed(files(items, uri, root)?),
        Some(_) => return Err("its `resources` is neither a list nor \"dynamic\"".into()),
        None => return Err("it has no `resources`".into()),
    };
    Ok(SkillEntry {
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
                crate::util::quoted(f_uri)
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
            return Err(format!(
                "resources lists `{}` twice",
                crate::util::quoted(f_uri)
            ));
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
