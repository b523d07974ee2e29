//! Resources across a client's servers (c-api.md "Resources"): every connected server's
//! resources and resource templates, each listing held as [`super::catalog`] says; a read
//! from the server named (a timeout and a cancel of its own through the `_ex` form); and
//! subscriptions, kept per server across restarts and reconnects.

use super::catalog::{self, List};
use super::{closed, no_runtime_here, Client};
use crate::error::{Error, ErrorKind, Result};
use crate::mapping::resources as mr;
use crate::session::{CallCtl, CallState, Session};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl Client {
    /// `[{"server",<the resource as sent>…}]`: every connected server's resources, all pages,
    /// sorted by server then uri, each uri once per server.
    pub fn list_resources(&self) -> Result<String> {
        self.listing(List::Resources)
    }

    /// `[{"server",<the template as sent>…}]`, sorted by server then `uriTemplate`.
    pub fn list_resource_templates(&self) -> Result<String> {
        self.listing(List::Templates)
    }

    fn listing(&self, l: List) -> Result<String> {
        let lists = self.each_connected(|idx, s| catalog::get(&self.inner, idx, s, l))?;
        let mut out: Vec<Value> = Vec::new();
        for (idx, items) in lists {
            let name = &self.inner.slots[idx].name;
            let (mut unique, _) = mr::unique(&items, l.key());
            unique.sort_by(|a, b| a.0.cmp(b.0));
            out.extend(unique.into_iter().map(|(_, it)| mr::with_server(name, it)));
        }
        Ok(crate::json::to_text(&Value::Array(out)))
    }

    /// Reads `uri` from server `server`: `{"contents":[…],"_meta"?}` as the server sent them.
    pub fn read_resource(&self, server: &str, uri: &str) -> Result<String> {
        let session = self.asked(server, "resources/read")?;
        nonempty(uri, "uri")?;
        session.read_resource(uri, &CallCtl::PLAIN)
    }

    /// [`Client::read_resource`] with its own `timeoutMs`, named by an id that
    /// [`Client::cancel_call`] ends (`on_id` learns it before the request goes out).
    pub fn read_resource_with(
        &self,
        server: &str,
        uri: &str,
        timeout: Option<Duration>,
        on_id: impl FnOnce(u64),
    ) -> Result<String> {
        let session = self.asked(server, "resources/read")?;
        nonempty(uri, "uri")?;
        self.cancellable(on_id, |state| {
            session.read_resource(
                uri,
                &CallCtl {
                    timeout,
                    state: Some(state),
                    ..CallCtl::PLAIN
                },
            )
        })
    }

    /// Subscribes to `uri` on server `server`: its updates come as `resource_updated` events.
    /// Returns once the server took it (in 2026-07-28, once the new listen is acknowledged);
    /// kept across restarts and reconnects.
    pub fn subscribe_resource(&self, server: &str, uri: &str) -> Result<()> {
        nonempty(uri, "uri")?;
        let (idx, session) = self.slot_of(server, "resources/subscribe")?;
        let slot = &self.inner.slots[idx];
        let _one = crate::util::lock(&slot.subscribing);
        let mut all = slot.lock().subscribed.clone();
        if !all.insert(uri.to_string()) {
            return Ok(());
        }
        // On the list first: a restart that begins meanwhile subscribes the new session to it.
        slot.lock().subscribed = all.clone();
        if let Err(e) = session.subscribe(uri, &all) {
            // Taken back only while the server is still on this session: a restart meanwhile
            // subscribed its new session to the list as it was.
            let mut st = slot.lock();
            if st
                .session
                .as_ref()
                .is_some_and(|s| Arc::ptr_eq(s, &session))
            {
                st.subscribed.remove(uri);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Ends the subscription to `uri` on server `server`; no `resource_updated` event of it
    /// follows once this returns. A uri not subscribed to is `TN_ERR_NOT_FOUND`.
    pub fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<()> {
        nonempty(uri, "uri")?;
        let (idx, session) = self.slot_of(server, "resources/unsubscribe")?;
        let slot = &self.inner.slots[idx];
        let _one = crate::util::lock(&slot.subscribing);
        let mut all = slot.lock().subscribed.clone();
        if !all.remove(uri) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "server `{server}`: `{}` is not subscribed to",
                    crate::util::quoted(uri)
                ),
            ));
        }
        // Off the list first: an update that races the unsubscribe is not told.
        slot.lock().subscribed = all.clone();
        if let Err(e) = session.unsubscribe(uri, &all) {
            let mut st = slot.lock();
            if st
                .session
                .as_ref()
                .is_some_and(|s| Arc::ptr_eq(s, &session))
            {
                st.subscribed.insert(uri.to_string());
            }
            return Err(e);
        }
        Ok(())
    }

    /// The connected server `name` for `method`, unless the caller is inside its own inline
    /// resolver (its reader could not read the answer: a deadlock).
    pub(super) fn asked(&self, name: &str, method: &str) -> Result<Arc<Session>> {
        self.slot_of(name, method).map(|(_, s)| s)
    }

    pub(super) fn slot_of(&self, name: &str, method: &str) -> Result<(usize, Arc<Session>)> {
        let session = self.connected(name)?;
        if crate::host::in_own_resolver(&session.conn) {
            return Err(Error::new(
                ErrorKind::Reentrant,
                format!(
                    "{method} on server `{name}` from inside its own inline resolver would deadlock; return TN_DEFERRED and ask from another thread"
                ),
            ));
        }
        let idx = self
            .inner
            .slots
            .iter()
            .position(|s| s.name == name)
            .expect("a connected server has a slot");
        Ok((idx, session))
    }

    /// Runs `f` as a request the host may cancel by id (`tn_call_cancel`), retired however it
    /// ends.
    pub(super) fn cancellable<T>(
        &self,
        on_id: impl FnOnce(u64),
        f: impl FnOnce(&CallState) -> Result<T>,
    ) -> Result<T> {
        let (id, state) = self.calls.register().ok_or_else(closed)?;
        struct Retire<'a>(&'a super::async_calls::Calls, u64);
        impl Drop for Retire<'_> {
            fn drop(&mut self) {
                self.0.finished(self.1);
            }
        }
        let _retire = Retire(&self.calls, id);
        on_id(id);
        f(&state)
    }

    /// `f` on every connected server, in name order, in parallel (one on the caller's thread);
    /// a server whose inline resolver the caller is inside gets its held listing instead.
    pub(super) fn each_connected<T: Send + Default>(
        &self,
        f: impl Fn(usize, &Arc<Session>) -> T + Sync,
    ) -> Result<Vec<(usize, T)>> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let sessions: Vec<(usize, Arc<Session>)> = self
            .inner
            .slots
            .iter()
            .enumerate()
            .filter_map(|(idx, slot)| slot.lock().live_session().map(|s| (idx, s.clone())))
            .collect();
        let f = &f;
        let one = |(idx, s): &(usize, Arc<Session>)| f(*idx, s);
        let out: Vec<T> = if sessions.len() <= 1 && no_runtime_here() {
            sessions.iter().map(one).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = sessions
                    .iter()
                    .map(|s| scope.spawn(move || one(s)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_default())
                    .collect()
            })
        };
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        Ok(sessions.into_iter().map(|(i, _)| i).zip(out).collect())
    }
}

fn nonempty(s: &str, what: &str) -> Result<()> {
    if s.is_empty() {
        return Err(Error::invalid_argument(format!("{what} must not be empty")));
    }
    Ok(())
}
