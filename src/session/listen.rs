//! MCP 2026-07-28's `subscriptions/listen` (the spec's subscriptions pattern): notifications
//! flow only on a listen whose filter asked for them, so one listen carries everything this
//! client acts on: tool, prompt and resource list changes where the server declares them, and
//! the resources the host subscribed to. A live filter cannot be changed: subscribing or
//! unsubscribing opens a new listen, waits for its acknowledgement (so an update right after
//! the host's call is not lost), and only then retires the old one (over stdio
//! `notifications/cancelled` with its id; over HTTP the transport closes its stream). Over
//! HTTP a listen is a stream of its own that the transport keeps open; over stdio a request
//! that stays open, its notifications on the one channel, told apart by their subscription id.

use super::{modern, Era, Session};
use crate::conn::subscriptions::Acked;
use crate::error::{Error, ErrorKind};
use crate::util::lock;
use std::collections::BTreeSet;

/// What a listen asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) uris: BTreeSet<String>,
}

impl Filter {
    fn is_empty(&self) -> bool {
        !self.tools && !self.prompts && !self.resources && self.uris.is_empty()
    }

    /// The `notifications` member of the listen's params.
    fn to_json(&self) -> String {
        let mut s = String::from("{");
        let mut put = |k: &str, on: bool| {
            if on {
                if s.len() > 1 {
                    s.push(',');
                }
                s.push_str(&format!(r#""{k}":true"#));
            }
        };
        put("toolsListChanged", self.tools);
        put("promptsListChanged", self.prompts);
        put("resourcesListChanged", self.resources);
        if !self.uris.is_empty() {
            if s.len() > 1 {
                s.push(',');
            }
            s.push_str(r#""resourceSubscriptions":["#);
            for (i, u) in self.uris.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                crate::json::rpc::push_json_string(&mut s, u);
            }
            s.push(']');
        }
        s.push('}');
        s
    }
}

/// The listen a session holds now.
#[derive(Default)]
pub(super) struct Listening {
    /// Its request id (the subscription id its messages carry), once one was opened.
    id: Option<u64>,
    filter: Filter,
}

impl Session {
    /// The filter for `uris` from what the server declared (already known: no request).
    pub(crate) fn listen_filter(&self, uris: &BTreeSet<String>) -> Filter {
        let caps = lock(&self.capabilities).clone().unwrap_or_default();
        let on = |p: &str| caps.pointer(p).and_then(|v| v.as_bool()) == Some(true);
        Filter {
            tools: on("/tools/listChanged"),
            prompts: on("/prompts/listChanged"),
            resources: on("/resources/listChanged"),
            uris: if on("/resources/subscribe") {
                uris.clone()
            } else {
                BTreeSet::new()
            },
        }
    }

    /// Opens the listen of a session being established (before its first listing, so no
    /// change between them is missed), for the resources subscribed before it came up. Best
    /// effort: without one a list is refreshed only when its `ttlMs` runs out (the status then
    /// says why).
    pub(super) fn listen_at_start(&mut self, uris: &BTreeSet<String>) {
        let filter = self.listen_filter(uris);
        if filter.is_empty() {
            return;
        }
        match self.open_listen(filter, false) {
            Ok(None) => {}
            Ok(Some(w)) | Err(Error { message: w, .. }) => {
                self.warnings.push(self.spec.secrets().mask(&w))
            }
        }
    }

    /// MCP 2026-07-28: listens again for `uris` (with the list changes as before), returning
    /// once the new listen is acknowledged with every uri honoured; the old one is retired
    /// then. When it is not, the old listen stays and this says why.
    pub(crate) fn listen_for(&self, uris: &BTreeSet<String>) -> Result<(), Error> {
        let filter = self.listen_filter(uris);
        if lock(&self.listening).filter == filter {
            return Ok(());
        }
        self.open_listen(filter, true).map(drop)
    }

    /// Opens a listen with `filter` in place of the current one (`Ok(Some(warning))`: it is
    /// retried in the background). With `wait`, until the server acknowledged it (bounded by
    /// the server's `timeout`), and only then is the old one ended; one not acknowledged, or
    /// whose acknowledgement leaves out a uri asked for, is ended and the old one kept.
    fn open_listen(&self, filter: Filter, wait: bool) -> Result<Option<String>, Error> {
        debug_assert_eq!(self.era, Era::Modern);
        let name = self.spec.name.clone();
        let fail = |kind, why: String| Error::new(kind, self.spec.secrets().mask(&why));
        let mut now = lock(&self.listening);
        if filter.is_empty() {
            // Nothing left to listen for: the old listen is ended and none opened (a server
            // that honours nothing may end a listen at once, which would only be reopened).
            if let Some(old) = now.id.take() {
                self.conn.listens.retire(old);
                self.end_listen(old);
            }
            now.filter = filter;
            return Ok(None);
        }
        let params = format!(
            r#"{{"_meta":{{{}}},"notifications":{}}}"#,
            modern::envelope(self.with_resolver, None, None, &[]),
            filter.to_json()
        );
        let (old, old_filter) = (now.id, now.filter.clone());
        let id = self.conn.reserve_id();
        self.conn.listens.expect(id, old);
        let text = crate::json::rpc::request_text(id, "subscriptions/listen", Some(&params));
        let sent = match &self.http {
            Some(h) => match h.open_listen(text) {
                crate::transport::http::ListenOpened::Up => Ok(None),
                crate::transport::http::ListenOpened::Retrying(w) => Ok(Some(w)),
                crate::transport::http::ListenOpened::Refused(w) => Err(w),
            },
            None => self
                .conn
                .send_untracked("subscriptions/listen", &text)
                .map(|()| None)
                .map_err(|e| format!("subscriptions/listen could not be sent: {e}")),
        };
        let warning = match sent {
            Ok(w) => w,
            Err(w) => {
                self.conn.listens.retire(id);
                return Err(fail(ErrorKind::Server, format!("server `{name}`: {w}")));
            }
        };
        now.id = Some(id);
        now.filter = filter.clone();
        if !wait {
            return Ok(warning);
        }
        let conn = &self.conn;
        let why = match conn
            .listens
            .wait_acked(id, self.spec.timeout, &|| conn.is_dead())
        {
            Acked::Yes(honoured) => {
                let left_out: Vec<&String> = filter
                    .uris
                    .iter()
                    .filter(|u| !honoured.as_ref().is_some_and(|h| h.contains(u)))
                    .collect();
                if left_out.is_empty() {
                    // Acknowledged: the listen it replaced is ended.
                    match (&self.http, old) {
                        (Some(h), _) => h.end_replaced_listens(),
                        (None, Some(old)) => self.end_listen(old),
                        (None, None) => {}
                    }
                    return Ok(warning);
                }
                let shown: Vec<String> = left_out.iter().map(|u| crate::util::quoted(u)).collect();
                (
                    ErrorKind::NotFound,
                    format!(
                        "server `{name}` did not honour the subscription to {} (its acknowledgement of subscriptions/listen left it out)",
                        shown.join(", ")
                    ),
                )
            }
            Acked::Refused(why) => (
                ErrorKind::Server,
                format!("server `{name}` refused subscriptions/listen: {why}"),
            ),
            Acked::No => (
                ErrorKind::Timeout,
                format!(
                    "server `{name}`: subscriptions/listen was not acknowledged within {} ms",
                    self.spec.timeout.as_millis()
                ),
            ),
        };
        // Not taken: the new listen is ended, the old one stays current.
        self.conn.listens.retire(id);
        match &self.http {
            Some(h) => h.restore_listen(),
            None => self.end_listen(id),
        }
        now.id = old;
        now.filter = old_filter;
        Err(fail(why.0, why.1))
    }

    /// Ends listen `id`: over stdio `notifications/cancelled` with its id, over HTTP every
    /// listen stream.
    fn end_listen(&self, id: u64) {
        match &self.http {
            Some(h) => h.close_listen(),
            None => {
                let _ = self.conn.notify(
                    "notifications/cancelled",
                    Some(&format!(
                        r#"{{"requestId":{id},"reason":"the client no longer listens for what it asked"}}"#
                    )),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_names_what_it_asks_for() {
        let mut f = Filter {
            tools: true,
            ..Filter::default()
        };
        assert_eq!(f.to_json(), r#"{"toolsListChanged":true}"#);
        f.resources = true;
        f.uris.insert("b://x".into());
        f.uris.insert("a://\"q\"".into());
        assert_eq!(
            f.to_json(),
            r#"{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["a://\"q\"","b://x"]}"#
        );
        assert!(Filter::default().is_empty() && Filter::default().to_json() == "{}");
    }
}
