//! Resources on one server (MCP `resources/*`, both eras): the lists through the one pager
//! ([`super::list`]), a read that may ask (MRTR, [`super::mrtr`]) with `Mcp-Name` carrying the
//! uri over 2026-07-28's HTTP, and subscriptions: `resources/subscribe` in the handshake era,
//! the listen's `resourceSubscriptions` in 2026-07-28 ([`super::listen`]).

use super::list::{WalkError, Walked};
use super::mrtr::Asking;
use super::{CallCtl, Era, Session};
use crate::error::{Error, ErrorKind, Result};
use std::collections::BTreeSet;

/// The not-found codes of `resources/read`: -32002 (MCP 2025) and -32602 (2026-07-28).
const NOT_FOUND: &[i64] = &[-32002, -32602];

impl Session {
    /// Every `resources/list` page.
    pub(crate) fn list_resources(&self) -> std::result::Result<Walked, WalkError> {
        self.walk("resources/list", "resources")
    }

    /// Every `resources/templates/list` page.
    pub(crate) fn list_resource_templates(&self) -> std::result::Result<Walked, WalkError> {
        self.walk("resources/templates/list", "resourceTemplates")
    }

    /// `resources/read` of `uri`: `{"contents":[…],"_meta"?}`, each content as the server sent
    /// it (text, or blob as base64 text; several contents and sub-resource uris kept).
    pub(crate) fn read_resource(&self, uri: &str, ctl: &CallCtl<'_>) -> Result<String> {
        let v = self.read_value(uri, ctl)?;
        crate::mapping::resources::read_result(&v).map_err(|why| {
            Error::new(
                ErrorKind::Server,
                self.spec.secrets().mask(&format!(
                    "server `{}`: resources/read `{}` failed: {why}",
                    self.spec.name,
                    crate::util::quoted(uri)
                )),
            )
        })
    }

    /// The one `resources/read` (a host's read, a skill's file): its complete result.
    pub(crate) fn read_value(&self, uri: &str, ctl: &CallCtl<'_>) -> Result<serde_json::Value> {
        let mut members = String::from(r#""uri":"#);
        crate::json::rpc::push_json_string(&mut members, uri);
        let what = format!("`{}`", crate::util::quoted(uri));
        self.ask_until_complete(
            &Asking {
                method: "resources/read",
                members: &members,
                name: uri,
                what: &what,
                not_found: NOT_FOUND,
            },
            ctl,
        )
    }

    /// Subscribes to `uri` (the handshake era's `resources/subscribe`); in 2026-07-28 the
    /// listen is opened again for `all`, the whole set, `uri` among them.
    pub(crate) fn subscribe(&self, uri: &str, all: &BTreeSet<String>) -> Result<()> {
        self.subscription("resources/subscribe", uri, all)
    }

    /// Ends the subscription to `uri`; `all` is the set without it.
    pub(crate) fn unsubscribe(&self, uri: &str, all: &BTreeSet<String>) -> Result<()> {
        self.subscription("resources/unsubscribe", uri, all)
    }

    fn subscription(&self, method: &str, uri: &str, all: &BTreeSet<String>) -> Result<()> {
        if !self.declares("/resources/subscribe") {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "server `{}` offers no resource subscriptions (its capabilities declare no resources.subscribe)",
                    self.spec.name
                ),
            ));
        }
        if self.era == Era::Modern {
            return self.listen_for(all);
        }
        let mut members = String::from(r#""uri":"#);
        crate::json::rpc::push_json_string(&mut members, uri);
        match self.value(method, &members, None) {
            Ok(_) => Ok(()),
            Err(crate::conn::RequestError::Closed) => {
                Err(Error::new(ErrorKind::Closed, "the client is disconnected"))
            }
            Err(f) => Err(Error::new(
                ErrorKind::Server,
                self.spec.secrets().mask(&format!(
                    "server `{}`: {method} `{}` failed: {}",
                    self.spec.name,
                    crate::util::quoted(uri),
                    self.explain(&f)
                )),
            )),
        }
    }

    /// The handshake era: subscribes again, after a restart or reconnect, to what the host
    /// had subscribed to (2026-07-28's listen at start already holds them). Best effort: what
    /// fails is said in the status.
    pub(super) fn subscribe_again(&mut self, uris: &BTreeSet<String>) {
        if self.era == Era::Modern || uris.is_empty() {
            return;
        }
        for uri in uris {
            if let Err(e) = self.subscribe(uri, uris) {
                self.warnings.push(e.message);
            }
        }
    }
}
