//! Skills across a client's servers (SEP-2640; c-api.md "Skills"): which servers
//! offer them and what each lists, one skill loaded verified from the server named, and a file
//! of a loaded skill. A skill's identity is its server and its URI, never the URI alone.

use super::servers::Phase;
use super::{closed, no_runtime_here, Client};
use crate::error::{Error, ErrorKind, Result};
use crate::session::Session;
use serde_json::{Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Client {
    /// `{"servers":{"<name>":{"skills":[entry…],"warnings":[…]?} | {"error":"…"}}}`: every
    /// connected server that declares the extension, in name order, each listing followed
    /// through its pages. No skill file is read.
    pub fn list_skills(&self) -> Result<String> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let sessions: Vec<(&str, Arc<Session>)> = self
            .inner
            .slots
            .iter()
            .filter_map(|slot| {
                let st = slot.lock();
                match (&st.phase, &st.session) {
                    (Phase::Connected, Some(s)) => Some((slot.name.as_str(), s.clone())),
                    _ => None,
                }
            })
            .collect();
        for (_, s) in &sessions {
            reentrant(s)?;
        }
        let list = |s: &Session| s.offers_skills().then(|| s.list_skills());
        // One server asks on the caller's thread; more ask in parallel, one thread each.
        let listings: Vec<_> = if sessions.len() <= 1 && no_runtime_here() {
            sessions.iter().map(|(_, s)| list(s)).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = sessions
                    .iter()
                    .map(|(_, s)| scope.spawn(move || list(s)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Some(Err("internal error while listing skills (panic)".into()))
                        })
                    })
                    .collect()
            })
        };
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let mut servers = Map::new();
        for ((name, _), listing) in sessions.into_iter().zip(listings) {
            let mut m = Map::new();
            match listing {
                None => continue,
                Some(Ok(l)) => {
                    m.insert("skills".into(), Value::Array(l.skills));
                    if !l.warnings.is_empty() {
                        let w = l.warnings.into_iter().map(Value::String).collect();
                        m.insert("warnings".into(), Value::Array(w));
                    }
                }
                Some(Err(why)) => {
                    m.insert("error".into(), Value::String(why));
                }
            }
            servers.insert(name.to_string(), Value::Object(m));
        }
        let mut root = Map::new();
        root.insert("servers".into(), Value::Object(servers));
        Ok(crate::json::to_text(&Value::Object(root)))
    }

    /// Loads the skill of `server` whose SKILL.md is `uri`, verified (size, digest,
    /// frontmatter): `{"server","uri","frontmatter","resources","mimeType"?,"text"}`.
    pub fn get_skill(&self, server: &str, uri: &str) -> Result<String> {
        self.skills_of(server)?.get_skill(uri)
    }

    /// A file of a skill loaded by [`Client::get_skill`], by URI or by its path in the skill,
    /// verified against the entry the skill was loaded from:
    /// `{"server","skill","uri","mimeType"?,"text"|"blob"}`.
    pub fn read_skill_file(&self, server: &str, skill: &str, file: &str) -> Result<String> {
        self.skills_of(server)?.read_skill_file(skill, file)
    }

    /// The connected server `name` when it offers skills; else why not (`TN_ERR_NOT_FOUND`).
    fn skills_of(&self, name: &str) -> Result<Arc<Session>> {
        let session = self.connected(name)?;
        reentrant(&session)?;
        if !session.offers_skills() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "server `{name}` offers no skills: its capabilities declare no extensions[\"{}\"]",
                    crate::mapping::skills::SKILLS_EXTENSION
                ),
            ));
        }
        Ok(session)
    }
}

/// A request to a server from inside its own inline resolver would deadlock (c-api.md).
fn reentrant(s: &Session) -> Result<()> {
    if crate::host::in_own_resolver(&s.conn) {
        return Err(Error::new(
            ErrorKind::Reentrant,
            format!(
                "a Skills request to server `{}` from inside its own inline resolver would deadlock; return TN_DEFERRED and ask from another thread",
                s.spec.name
            ),
        ));
    }
    Ok(())
}
