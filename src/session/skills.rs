//! Skills (SEP-2640) on one server: `skills/list` with pagination, `skills/get` for a
//! skill the listing did not hold, and `resources/read` of one file at a time (in the modern era
//! with the `_meta` envelope, and over HTTP its `Mcp-Name` routing header, SEP-2243). Nothing is
//! read ahead of need: not on connect, not on listing ("Lazy Retrieval"). A skill is loaded
//! only when its SKILL.md passed the size, digest and frontmatter checks
//! ([`crate::mapping::skills`]); its files are read only from the entry it was loaded from, each
//! verified, and a URI that entry does not list is refused before any request.

use super::list::{Pager, Step};
use super::{modern, Era, Session};
use crate::conn::{Req, RequestError};
use crate::error::{Error, ErrorKind, Result};
use crate::mapping::skills::{self as sk, SkillEntry};
use crate::request::Routing;
use crate::util::lock;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The entries a server's skills are verified against.
#[derive(Default)]
pub(super) struct Held {
    /// The last listing's entries, by SKILL.md URI.
    listed: HashMap<String, SkillEntry>,
    /// The skills loaded (SKILL.md verified), each with the entry it was loaded from: its
    /// files are read only against that entry (SEP-2640 "The Acting Window").
    loaded: HashMap<String, SkillEntry>,
}

/// One server's listing: its valid entries as it sent them, in its order, and why any other
/// entry was left out.
pub(crate) struct SkillListing {
    pub(crate) skills: Vec<Value>,
    pub(crate) warnings: Vec<String>,
}

impl Session {
    /// Whether the server declares the Skills extension in its capabilities.
    pub(crate) fn offers_skills(&self) -> bool {
        self.known_capabilities().as_ref().is_some_and(sk::offered)
    }

    /// Every `skills/list` page, held as the entries later reads are verified against. A
    /// skill loaded from an entry that the new listing changed is no longer loaded.
    pub(crate) fn list_skills(&self) -> std::result::Result<SkillListing, String> {
        let mut entries: Vec<SkillEntry> = Vec::new();
        let mut uris: HashSet<String> = HashSet::new();
        let mut warnings = Vec::new();
        let mut pager = Pager::new(self.era);
        let mut cursor: Option<String> = None;
        loop {
            let mut members = String::new();
            if let Some(c) = &cursor {
                members.push_str(r#""cursor":"#);
                crate::json::rpc::push_json_string(&mut members, c);
            }
            let v = self
                .value("skills/list", &members, None)
                .map_err(|f| self.failure("skills/list", &f).message)?;
            let page = sk::page(&v)
                .map_err(|why| self.not_found(self.failed_in("skills/list", &why)).message)?;
            for e in page.entries {
                match e {
                    // A repeated page lists an entry once (a set: a listing may be large).
                    Ok(e) => {
                        if uris.insert(e.uri.clone()) {
                            entries.push(e);
                        }
                    }
                    Err(why) => warnings.push(self.spec.secrets().mask(&why)),
                }
            }
            match pager.after(page.next.as_deref()) {
                Step::Next(next) => cursor = Some(next),
                Step::Done => break,
                end => {
                    let why = end.refusal(&self.spec.name, "skills/list", pager.pages());
                    return Err(self.spec.secrets().mask(&why.unwrap_or_default()));
                }
            }
        }
        let skills = entries.iter().map(|e| e.raw.clone()).collect();
        let mut held = lock(&self.skills);
        held.listed = entries.into_iter().map(|e| (e.uri.clone(), e)).collect();
        let Held { listed, loaded } = &mut *held;
        loaded.retain(|uri, e| listed.get(uri).is_some_and(|l| l == e));
        Ok(SkillListing { skills, warnings })
    }

    /// Loads the skill whose SKILL.md is `uri`: its entry (the listing's, else `skills/get`),
    /// one `resources/read`, then size, digest and frontmatter verified. On any mismatch the
    /// skill is refused and nothing of it is returned.
    pub(crate) fn get_skill(&self, uri: &str) -> Result<String> {
        let listed = lock(&self.skills).listed.get(uri).cloned();
        let from_listing = listed.is_some();
        let entry = match listed {
            Some(e) => e,
            None => self.skill_entry(uri)?,
        };
        if let Some(why) = entry.declined() {
            return Err(self.refused(uri, &why));
        }
        let Some(file) = entry.file(uri) else {
            return Err(self.refused(uri, "its entry does not list its SKILL.md"));
        };
        let content = self.read(uri)?;
        let verified = sk::check_bytes(file, &content.bytes).and_then(|()| {
            let text = std::str::from_utf8(&content.bytes)
                .map_err(|_| "its SKILL.md is not UTF-8 text".to_string())?;
            sk::check_frontmatter(&entry, text).map(|()| text.to_string())
        });
        let text = match verified {
            Ok(text) => text,
            Err(why) => {
                lock(&self.skills).loaded.remove(uri);
                return Err(self.refused(uri, &why));
            }
        };
        let mut out = Map::new();
        out.insert("server".into(), Value::String(self.spec.name.clone()));
        out.insert("uri".into(), Value::String(uri.to_string()));
        out.insert(
            "frontmatter".into(),
            Value::Object(entry.frontmatter.clone()),
        );
        out.insert(
            "resources".into(),
            entry.raw.get("resources").cloned().unwrap_or(Value::Null),
        );
        if let Some(m) = &content.mime_type {
            out.insert("mimeType".into(), Value::String(m.clone()));
        }
        out.insert("text".into(), Value::String(text));
        // Loaded only if no listing that ran meanwhile changed or dropped its entry (such a
        // listing unloads the skill; its files are then read after loading it again).
        let mut held = lock(&self.skills);
        let current = held.listed.get(uri);
        if current == Some(&entry) || (current.is_none() && !from_listing) {
            held.loaded.insert(uri.to_string(), entry);
        }
        drop(held);
        Ok(crate::json::to_text(&Value::Object(out)))
    }

    /// Reads one file of a loaded skill (its URI, or its path in the skill), verified against
    /// the entry the skill was loaded from. A file that entry does not list is refused before
    /// any request.
    pub(crate) fn read_skill_file(&self, skill: &str, file: &str) -> Result<String> {
        let name = &self.spec.name;
        let entry = lock(&self.skills).loaded.get(skill).cloned();
        let Some(entry) = entry else {
            return Err(self.not_found(format!(
                "skill `{}` of server `{name}` is not loaded: its files are read only once tn_get_skill returned it verified",
                crate::util::quoted(skill)
            )));
        };
        let uri = sk::resolve(&entry, file).map_err(|why| {
            self.not_found(format!(
                "{why} of skill `{}` (server `{name}`): refused, nothing was requested",
                crate::util::quoted(skill)
            ))
        })?;
        let Some(listed) = entry.file(&uri) else {
            return Err(self.not_found(format!(
                "`{}` is not listed in the resources of skill `{}` (server `{name}`): refused, nothing was requested",
                crate::util::quoted(&uri),
                crate::util::quoted(skill)
            )));
        };
        let content = self.read(&uri)?;
        if let Err(why) = sk::check_bytes(listed, &content.bytes) {
            return Err(self.not_found(format!(
                "file `{}` of skill `{}` (server `{name}`) is refused, it failed verification: {why}; nothing of it is returned",
                crate::util::quoted(&uri),
                crate::util::quoted(skill)
            )));
        }
        let mut out = Map::new();
        out.insert("server".into(), Value::String(name.clone()));
        out.insert("skill".into(), Value::String(skill.to_string()));
        out.insert("uri".into(), Value::String(uri));
        if let Some(m) = content.mime_type {
            out.insert("mimeType".into(), Value::String(m));
        }
        match (content.text, content.blob) {
            (Some(t), _) => out.insert("text".into(), Value::String(t)),
            (None, Some(b)) => out.insert("blob".into(), Value::String(b)),
            (None, None) => None,
        };
        Ok(crate::json::to_text(&Value::Object(out)))
    }

    /// The entry of a skill the listing does not hold, from `skills/get` (SEP-2640: a host
    /// loads a skill given only its URI). An unknown skill is refused; nothing is read.
    fn skill_entry(&self, uri: &str) -> Result<SkillEntry> {
        let mut members = String::from(r#""uri":"#);
        crate::json::rpc::push_json_string(&mut members, uri);
        let v = match self.value("skills/get", &members, None) {
            Ok(v) => v,
            Err(RequestError::Rpc(e)) if e.get("code").and_then(Value::as_i64) == Some(-32602) => {
                return Err(self.not_found(format!(
                    "server `{}` serves no skill `{}`: it is not in its listing and skills/get refused it ({}); nothing was read",
                    self.spec.name,
                    crate::util::quoted(uri),
                    self.explain(&RequestError::Rpc(e))
                )))
            }
            Err(f) => return Err(self.failure("skills/get", &f)),
        };
        let entry = v
            .get("skill")
            .ok_or_else(|| "the skills/get result has no `skill`".to_string())
            .and_then(sk::entry)
            .map_err(|why| self.refused(uri, &format!("its skills/get entry is invalid: {why}")))?;
        if entry.uri != uri {
            return Err(self.refused(
                uri,
                &format!(
                    "skills/get answered with the entry of `{}`",
                    crate::util::quoted(&entry.uri)
                ),
            ));
        }
        Ok(entry)
    }

    /// `resources/read` of one URI, through the one read path every resource takes
    /// ([`Session::read_value`]: MRTR, `maxResultBytes`, timeouts); a failure is the skill's
    /// `TN_ERR_NOT_FOUND` (c-api.md "Skills": nothing of it is returned).
    fn read(&self, uri: &str) -> Result<sk::Content> {
        let v = self
            .read_value(uri, &super::CallCtl::PLAIN)
            .map_err(|e| match e.kind {
                ErrorKind::Closed => e,
                _ => self.not_found(e.message),
            })?;
        sk::content(&v, uri).map_err(|why| {
            self.not_found(self.failed_in(
                "resources/read",
                &format!("`{}`: {why}", crate::util::quoted(uri)),
            ))
        })
    }

    /// A request in this server's era (the `_meta` envelope in the modern one; `name`, the
    /// resource's URI, as `Mcp-Name` over modern HTTP) and its complete result.
    pub(super) fn value(
        &self,
        method: &str,
        members: &str,
        name: Option<&str>,
    ) -> std::result::Result<Value, RequestError> {
        let modern = self.era == Era::Modern;
        let mut params = String::from("{");
        if modern {
            params.push_str(r#""_meta":{"#);
            params.push_str(&modern::envelope(
                self.with_resolver,
                None,
                self.spec.log_level,
                &[],
            ));
            params.push('}');
            if !members.is_empty() {
                params.push(',');
            }
        }
        params.push_str(members);
        params.push('}');
        let routing = name.filter(|_| modern).map(|n| Routing {
            name: Some(modern::encode(n)),
            params: Vec::new(),
        });
        let req = Req {
            routing: routing.as_ref(),
            ..Req::plain(method, Some(&params), self.spec.timeout)
        };
        let line = self.request(&req).0?;
        let v = crate::json::rpc::result_value(&line).map_err(RequestError::Rpc)?;
        match v.get("resultType").and_then(Value::as_str) {
            None | Some("complete") => Ok(v),
            Some(other) => Err(RequestError::Rpc(Value::String(format!(
                "the server answered with resultType `{}`, not a complete result",
                crate::util::quoted(other)
            )))),
        }
    }

    /// A failed request: the client closing is `TN_ERR_CLOSED`; anything else names the
    /// server, the method and the cause (secrets masked, §9).
    fn failure(&self, method: &str, f: &RequestError) -> Error {
        if matches!(f, RequestError::Closed) {
            return Error::new(ErrorKind::Closed, "the client is disconnected");
        }
        self.not_found(self.failed_in(method, &self.explain(f)))
    }

    fn failed_in(&self, method: &str, why: &str) -> String {
        format!(
            "server `{}` failed during `{method}`: {why}",
            self.spec.name
        )
    }

    /// A skill refused on verification: nothing of it is returned.
    fn refused(&self, uri: &str, why: &str) -> Error {
        self.not_found(format!(
            "skill `{}` of server `{}` is refused: {why}; nothing of it is returned and none of its files is read",
            crate::util::quoted(uri),
            self.spec.name
        ))
    }

    /// What the host asked for cannot be given (c-api.md: `TN_ERR_NOT_FOUND`, the message
    /// naming server, URI and why), with the configured secrets masked.
    fn not_found(&self, message: String) -> Error {
        Error::new(ErrorKind::NotFound, self.spec.secrets().mask(&message))
    }
}
