//! Many servers from one config (contract §2–§3): started in parallel, reported in code-point
//! order of their names, isolated from each other; tool names, collisions and the allowlist;
//! calls routed by tool name; a bounded, idempotent disconnect. Long-lived hosts (docs/live-servers.md):
//! servers that went away are brought back ([`restart`]), tool lists kept fresh
//! ([`refresh`]), and what happens told to the host's event callback ([`events`]); the
//! servers' shared state is [`servers`], the tool index [`index`].

use crate::config::{self, ServerEntry};
use crate::conn::RequestError;
use crate::error::{Error, ErrorKind, Result};
use crate::host::Host;
use crate::responder::Resolver;
use crate::session::{self, Session};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

mod async_calls;
mod calling;
mod catalog;
mod events;
mod held;
mod index;
mod prompts;
mod refresh;
mod resources;
mod restart;
mod servers;
mod skills;
mod tasks;
mod watch;

pub use calling::{Done, Progress};
pub use events::EventCallback;
use servers::{Inner, Phase, Slot};

static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);

/// How long disconnect waits for host resolver calls that are still running.
const RESOLVER_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);
/// How long disconnect waits for restart and refresh threads, and for an event callback.
const THREADS_DRAIN: std::time::Duration = std::time::Duration::from_secs(6);
const EVENTS_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// A connected set of servers.
pub struct Client {
    /// Owner key for this client's responders.
    pub id: u64,
    inner: Arc<Inner>,
    /// Host resolver calls in progress (shared with every connection's bridge).
    resolving: Arc<AtomicUsize>,
    /// Asynchronous calls (§7).
    calls: Arc<async_calls::Calls>,
}

impl Client {
    /// Parses `config_json` and connects every enabled server in parallel. Fails only when the
    /// config text itself is unusable (§2); bad servers become `failed` statuses.
    pub fn connect(config_json: &str, resolver: Option<Arc<dyn Resolver>>) -> Result<Client> {
        let entries = config::parse(config_json)?;
        let id = NEXT_CLIENT.fetch_add(1, Ordering::Relaxed);
        let active = Arc::new(AtomicUsize::new(0));
        let slots: Vec<Slot> = entries
            .iter()
            .map(|(name, entry)| {
                let spec = match entry {
                    ServerEntry::Enabled(spec) => Some(spec.clone()),
                    _ => None,
                };
                let live = spec.as_ref().and_then(|spec| {
                    resolver.clone().map(|resolver| Host {
                        resolver,
                        elicitation_timeout: spec.elicitation_timeout,
                        owner: id,
                        active: active.clone(),
                    })
                });
                let slot = Slot::new(name.clone(), spec, live);
                if let ServerEntry::Invalid(why) = entry {
                    slot.lock().phase = Phase::Failed {
                        error: format!("server `{name}` failed during `config`: {why}"),
                        retry_on_call: false,
                    };
                }
                slot
            })
            .collect();
        let inner = Arc::new(Inner::new(id, slots));
        for (idx, slot) in inner.slots.iter().enumerate() {
            let w = Arc::new(watch::SlotWatch {
                inner: Arc::downgrade(&inner),
                idx,
            });
            let _ = slot.watcher.set(w);
        }
        let open_one = |slot: &Slot| {
            let spec = slot.spec.as_ref().expect("an enabled server has a spec");
            let hooks = session::Hooks {
                watcher: slot.watcher.get().cloned(),
                abort: None,
                subscriptions: Default::default(),
            };
            session::open(spec, slot.live.clone(), hooks)
        };
        // One server connects on the caller's thread (no thread to start and join, §3); more
        // connect in parallel, one thread each.
        let enabled = inner.slots.iter().filter(|s| s.spec.is_some()).count();
        let alone = enabled == 1 && no_runtime_here();
        type Opened = std::result::Result<(Session, session::ToolListing), session::StartError>;
        let results: Vec<Option<std::thread::Result<Opened>>> = std::thread::scope(|scope| {
            let open_one = &open_one;
            let handles: Vec<_> = inner
                .slots
                .iter()
                .map(|slot| match &slot.spec {
                    Some(_) if alone => Some(Opening::Done(std::panic::catch_unwind(
                        std::panic::AssertUnwindSafe(|| open_one(slot)),
                    ))),
                    Some(_) => Some(Opening::Thread(scope.spawn(move || open_one(slot)))),
                    None => None,
                })
                .collect();
            handles.into_iter().map(|h| h.map(Opening::join)).collect()
        });
        for (idx, r) in results.into_iter().enumerate() {
            let Some(r) = r else { continue };
            let name = &inner.slots[idx].name;
            let failed = match r {
                Ok(Ok((s, listing))) => {
                    inner.install(idx, s, listing);
                    continue;
                }
                Ok(Err(f)) => f.message,
                Err(_) => {
                    format!("server `{name}` failed during `connect`: internal error (panic)")
                }
            };
            let slot = &inner.slots[idx];
            slot.lock().phase = Phase::Failed {
                error: failed,
                retry_on_call: false,
            };
        }
        inner.rebuild();
        for (idx, slot) in inner.slots.iter().enumerate() {
            if std::mem::take(&mut slot.lock().changed_while_opening) {
                refresh::request(&inner, idx);
            }
        }
        Ok(Client {
            id,
            inner,
            resolving: active,
            calls: Arc::default(),
        })
    }

    /// The tool list JSON, sorted by name (c-api.md `tn_list_tools`): one listing of every
    /// server, never half of a refresh; a modern listing whose `ttlMs` ran out is listed again
    /// first (docs/live-servers.md).
    pub fn tools_json(&self) -> String {
        refresh::ensure_fresh(&self.inner);
        self.inner.index().json.clone()
    }

    /// `{"servers":{"<name>":{"status":…,"error"?,…}}}` in name order.
    pub fn statuses_json(&self) -> String {
        let index = self.inner.index();
        let mut servers = Map::new();
        for (idx, s) in self.inner.slots.iter().enumerate() {
            servers.insert(
                s.name.clone(),
                Value::Object(self.inner.status_of(idx, &index)),
            );
        }
        let mut root = Map::new();
        root.insert("servers".into(), Value::Object(servers));
        crate::json::to_text(&Value::Object(root))
    }

    /// Registers the host's event callback (None: none), replacing the one before;
    /// once this returns the one before is not running (unless this is called from inside it).
    pub fn set_event_callback(&self, callback: Option<EventCallback>) -> Result<()> {
        if self.inner.is_closed() {
            return Err(closed());
        }
        self.inner
            .events
            .set(callback)
            .map_err(|e| Error::new(ErrorKind::Closed, e))
    }

    /// Whether the calling thread is inside an inline resolver of one of these servers.
    pub fn in_own_resolver(&self) -> bool {
        self.sessions()
            .iter()
            .any(|s| crate::host::in_own_resolver(&s.conn))
    }

    /// Every server's current session.
    fn sessions(&self) -> Vec<Arc<Session>> {
        self.inner.slots.iter().filter_map(Slot::session).collect()
    }

    /// First half of disconnect (contract §3, architecture "Shutdown order"): mark closed, end
    /// restarts under way, fail pending calls so their callers wake, and cancel open
    /// responders. Idempotent.
    pub fn close_begin(&self) {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for slot in &self.inner.slots {
            slot.abort_openings();
        }
        for s in self.sessions() {
            s.transport.begin_close();
            s.conn.fail(RequestError::Closed);
        }
        crate::responder::cancel_owner(self.id, "the client was disconnected");
    }

    /// Second half: shut every transport down, in parallel, each bounded; wait (bounded) for
    /// the restart and refresh threads and the event callback; then wait (bounded) for
    /// resolver calls still running, so that the host's resolver is not running once
    /// `tn_disconnect` returns unless it is blocked past that bound.
    pub fn close_finish(&self) {
        let sessions = self.sessions();
        if sessions.len() == 1 && no_runtime_here() {
            // One server: shut it down on this thread (no thread to start and join).
            for s in &sessions {
                s.shutdown(crate::transport::DISCONNECT_GRACE);
            }
        } else {
            std::thread::scope(|scope| {
                for s in &sessions {
                    scope.spawn(move || s.shutdown(crate::transport::DISCONNECT_GRACE));
                }
            });
        }
        self.inner.join_threads(THREADS_DRAIN);
        // A restart that installed a session after the first pass (it saw no close yet).
        for s in self.sessions() {
            s.conn.fail(RequestError::Closed);
            s.shutdown(crate::transport::DISCONNECT_GRACE);
        }
        self.inner.events.close(EVENTS_DRAIN);
        // Every asynchronous call woke with the connections' failure: its done fires now.
        self.calls.close_and_drain();
        let deadline = std::time::Instant::now() + RESOLVER_DRAIN;
        while self.resolving.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// Whether this thread is outside any tokio runtime: the HTTP transport blocks on its own
/// runtime, which panics inside another one, so work is done on this thread only then.
fn no_runtime_here() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}

/// A server being opened by `Client::connect`: on a thread of its own, or already done on the
/// caller's thread (the only server).
enum Opening<'scope, T> {
    Thread(std::thread::ScopedJoinHandle<'scope, T>),
    Done(std::thread::Result<T>),
}

impl<T> Opening<'_, T> {
    fn join(self) -> std::thread::Result<T> {
        match self {
            Opening::Thread(h) => h.join(),
            Opening::Done(r) => r,
        }
    }
}

impl Client {
    /// The session of server `name` when it is connected (Skills, Tasks); else
    /// `TN_ERR_NOT_FOUND` saying why: unknown, disabled, failed (its error), being started
    /// again, or still opening. A disconnected client is `TN_ERR_CLOSED`.
    pub(crate) fn connected(&self, name: &str) -> Result<Arc<Session>> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let not_found = |why: String| Err(Error::new(ErrorKind::NotFound, why));
        let Some(slot) = self.inner.slots.iter().find(|s| s.name == name) else {
            return not_found(format!("no server named `{name}` in the config"));
        };
        let st = slot.lock();
        match (&st.phase, &st.session) {
            (servers::Phase::Connected, Some(s)) => Ok(s.clone()),
            (servers::Phase::Disabled, _) => not_found(format!("server `{name}` is disabled")),
            // `error` already reads "server `x` failed during `phase`: cause".
            (servers::Phase::Failed { error, .. }, _) => not_found(error.clone()),
            (servers::Phase::Restarting { reason, .. }, _) => not_found(format!(
                "server `{name}` is being started again ({reason}); ask once it is connected"
            )),
            _ => not_found(format!("server `{name}` is not connected")),
        }
    }
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the client is disconnected")
}
