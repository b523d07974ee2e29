//! The servers of one client as they live on (docs/live-servers.md): each one's slot (the session it is on
//! now, which may be replaced by a restart; where it stands; its last listing, restarts and
//! exits), the tool index every reader shares, swapped whole when a listing changes, and the
//! events that say so. Restarting is [`super::restart`], refreshing [`super::refresh`]; both
//! run on short-lived library threads this file keeps track of, so that disconnect can wait
//! for them.

use super::events::Events;
use super::index::{self, Index, Source};
use crate::config::ServerSpec;
use crate::conn::Watcher;
use crate::host::Host;
use crate::mapping::listing::ListedTool;
use crate::session::{Abort, Era, Session, ToolListing};
use crate::util::{lock, read, write};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where one server stands.
pub(crate) enum Phase {
    /// `tn_connect` is opening it.
    Opening,
    Connected,
    /// It went away and is being started again: attempt `attempt` comes after `delay`
    /// (counted from `since`); `reason` is why it went away or why the last attempt failed;
    /// `budget` limits the attempts of a retry a call asked for.
    Restarting {
        attempt: u32,
        delay: Duration,
        since: Instant,
        reason: String,
        budget: Option<u32>,
    },
    /// It is away: `error` says why; with `retry_on_call` a call tries to bring it back once
    /// (a stdio server after its attempts, a remote one whose connection ended).
    Failed {
        error: String,
        retry_on_call: bool,
    },
    Disabled,
}

/// One server's mutable state (its slot's lock).
pub(crate) struct SlotState {
    pub(crate) phase: Phase,
    /// The session it is on, or was on last (dead while it restarts or after it failed).
    pub(crate) session: Option<Arc<Session>>,
    /// Its tools as last listed (kept while it restarts or after it failed, so their names
    /// stay and a call can bring it back).
    pub(crate) listed: Option<Arc<Vec<ListedTool>>>,
    /// What its session and its last listing said for the status.
    pub(crate) session_warnings: Vec<String>,
    pub(crate) list_warnings: Vec<String>,
    /// Times it was started again and came back.
    pub(crate) restarts: u64,
    /// Attempts since it was last up for `restart.resetAfterMs`.
    pub(crate) attempts: u32,
    /// How its process ended the last time it went away.
    pub(crate) last_exit: Option<String>,
    pub(crate) up_since: Instant,
    /// When its tools were last listed again after connect (a refresh, a restart; ms since the
    /// Unix epoch), and until when the listing is fresh (MCP 2026-07-28 `ttlMs`).
    pub(crate) refreshed_at_ms: Option<u64>,
    pub(crate) fresh_until: Option<Instant>,
    pub(crate) ttl: Option<Duration>,
    /// A refresh thread runs; a change arrived while it ran; refreshes finished so far.
    pub(crate) refreshing: bool,
    pub(crate) refresh_again: bool,
    pub(crate) refreshes: u64,
    pub(crate) refresh_error: Option<String>,
    /// A list change announced while it was being opened (refreshed once it is up).
    pub(crate) changed_while_opening: bool,
    /// A restart thread runs.
    pub(crate) restarter: bool,
    /// The resources the host subscribed to (`tn_subscribe_resource`): kept across restarts and
    /// reconnects, and subscribed again on the new session.
    pub(crate) subscribed: std::collections::BTreeSet<String>,
    /// What the host last listed of this server's resources, templates and prompts.
    pub(crate) catalog: super::held::Catalog,
}

impl SlotState {
    /// Its session while it is connected and the connection is still up: what the status calls
    /// `connected` (a connection that just died reads `failed` before its phase moves on, §1).
    pub(crate) fn live_session(&self) -> Option<&Arc<Session>> {
        match (&self.phase, &self.session) {
            (Phase::Connected, Some(s)) if !s.conn.is_dead() => Some(s),
            _ => None,
        }
    }
}

/// One server of the client.
pub(crate) struct Slot {
    pub(crate) name: String,
    /// None for a disabled or invalid entry.
    pub(crate) spec: Option<ServerSpec>,
    pub(crate) live: Option<Host>,
    pub(crate) state: Mutex<SlotState>,
    /// Signalled whenever `state.phase` or a refresh count changes.
    pub(crate) changed: Condvar,
    /// Who watches this server's connections (set once, at connect).
    pub(crate) watcher: OnceLock<Arc<dyn Watcher>>,
    /// Ends the opening under way, if one is (disconnect during a restart); true once the
    /// client closes (an opening begun after that is ended at once).
    abort: Mutex<(bool, Option<Arc<Abort>>)>,
    /// Serialises the host's subscription changes (each opens a new listen in 2026-07-28).
    pub(crate) subscribing: Mutex<()>,
}

impl Slot {
    pub(crate) fn new(name: String, spec: Option<ServerSpec>, live: Option<Host>) -> Slot {
        let phase = if spec.is_some() {
            Phase::Opening
        } else {
            Phase::Disabled
        };
        Slot {
            name,
            spec,
            live,
            state: Mutex::new(SlotState {
                phase,
                session: None,
                listed: None,
                session_warnings: Vec::new(),
                list_warnings: Vec::new(),
                restarts: 0,
                attempts: 0,
                last_exit: None,
                up_since: Instant::now(),
                refreshed_at_ms: None,
                fresh_until: None,
                ttl: None,
                refreshing: false,
                refresh_again: false,
                refreshes: 0,
                refresh_error: None,
                changed_while_opening: false,
                restarter: false,
                subscribed: Default::default(),
                catalog: Default::default(),
            }),
            changed: Condvar::new(),
            watcher: OnceLock::new(),
            abort: Mutex::new((false, None)),
            subscribing: Mutex::new(()),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SlotState> {
        lock(&self.state)
    }

    /// Waits on the slot's state for at most `left`.
    pub(crate) fn wait<'a>(
        &self,
        st: MutexGuard<'a, SlotState>,
        left: Duration,
    ) -> MutexGuard<'a, SlotState> {
        self.changed
            .wait_timeout(st, left)
            .map_or_else(|p| p.into_inner().0, |r| r.0)
    }

    /// The session it is on (or was on last).
    pub(crate) fn session(&self) -> Option<Arc<Session>> {
        self.lock().session.clone()
    }

    /// A fresh opening's hooks: this slot's watcher and a new abort it can be ended by (ended
    /// already when the client is closing).
    pub(crate) fn hooks(&self) -> crate::session::Hooks {
        let subscriptions = self.lock().subscribed.clone();
        let abort = Arc::new(Abort::default());
        let mut a = lock(&self.abort);
        if a.0 {
            abort.abort();
        }
        a.1 = Some(abort.clone());
        crate::session::Hooks {
            watcher: self.watcher.get().cloned(),
            abort: Some(abort),
            subscriptions,
        }
    }

    /// Disconnect: ends the opening under way, and any begun later.
    pub(crate) fn abort_openings(&self) {
        let abort = {
            let mut a = lock(&self.abort);
            a.0 = true;
            a.1.take()
        };
        if let Some(a) = abort {
            a.abort();
        }
        self.changed.notify_all();
    }

    /// Whether it is a stdio server (a child the library starts).
    pub(crate) fn is_local(&self) -> bool {
        self.spec
            .as_ref()
            .is_some_and(|s| matches!(s.endpoint, crate::config::Endpoint::Local { .. }))
    }
}

/// What the client's servers share: their slots, the tool index, the events, and the threads
/// that restart and refresh them.
pub(crate) struct Inner {
    pub(crate) slots: Vec<Slot>,
    index: RwLock<Arc<Index>>,
    /// Serialises rebuilds, so that each starts from the one before.
    rebuilding: Mutex<()>,
    pub(crate) events: Arc<Events>,
    pub(crate) closed: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Every server's prompts under their host names ([`super::catalog`]), swapped whole.
    pub(crate) prompts: RwLock<Arc<crate::mapping::prompts::PromptIndex>>,
    pub(crate) prompts_rebuilding: Mutex<()>,
}

impl Inner {
    pub(crate) fn new(id: u64, slots: Vec<Slot>) -> Inner {
        let n = slots.len();
        Inner {
            slots,
            index: RwLock::default(),
            rebuilding: Mutex::new(()),
            events: Events::new(id, n),
            closed: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            prompts: RwLock::default(),
            prompts_rebuilding: Mutex::new(()),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The prompt index as of the last listing.
    pub(crate) fn prompt_index(&self) -> Arc<crate::mapping::prompts::PromptIndex> {
        read(&self.prompts).clone()
    }

    /// The index readers see now (one listing of every server, never half of a refresh).
    pub(crate) fn index(&self) -> Arc<Index> {
        read(&self.index).clone()
    }

    /// Builds the index again from every server's last listing and swaps it in; emits a tools
    /// event for each server whose tools changed (none for the first index, at connect).
    pub(crate) fn rebuild(&self) {
        let _one = lock(&self.rebuilding);
        let all = crate::config::ToolFilter::All;
        let listed: Vec<Option<Arc<Vec<ListedTool>>>> =
            self.slots.iter().map(|s| s.lock().listed.clone()).collect();
        let sources: Vec<Source<'_>> = self
            .slots
            .iter()
            .zip(listed)
            .map(|(s, listed)| Source {
                name: &s.name,
                filter: s.spec.as_ref().map_or(&all, |sp| &sp.tools),
                listed,
            })
            .collect();
        let previous = self.index();
        let first = previous.json.is_empty();
        let (index, changes) = index::build(&sources, (!first).then_some(&*previous));
        *write(&self.index) = Arc::new(index);
        if first || !self.events.wanted() {
            return;
        }
        for (idx, c) in changes.into_iter().enumerate() {
            if c.is_empty() {
                continue;
            }
            let list = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
            let mut e = self.event("tools", idx);
            e.insert("added".into(), list(c.added));
            e.insert("removed".into(), list(c.removed));
            e.insert("changed".into(), list(c.changed));
            self.send(idx, e);
        }
    }

    /// A new event of `kind` about server `idx`: `{"type":kind,"server":name}`.
    pub(crate) fn event(&self, kind: &str, idx: usize) -> Map<String, Value> {
        let mut e = Map::new();
        e.insert("type".into(), kind.into());
        e.insert("server".into(), self.slots[idx].name.clone().into());
        e
    }

    /// Hands event `e` of server `idx` to the host, its strings masked (§9).
    pub(crate) fn send(&self, idx: usize, e: Map<String, Value>) {
        let mut v = Value::Object(e);
        if let Some(spec) = &self.slots[idx].spec {
            mask(&spec.secrets(), &mut v);
        }
        self.events.emit(idx, crate::json::to_text(&v));
    }

    /// A status event: `{"type":"status","server","status", …more}`.
    pub(crate) fn status_event(&self, idx: usize, status: &str, more: &[(&str, Value)]) {
        if !self.events.wanted() {
            return;
        }
        let mut e = self.event("status", idx);
        e.insert("status".into(), status.into());
        for (k, v) in more {
            e.insert((*k).into(), v.clone());
        }
        self.send(idx, e);
    }

    /// Puts server `idx` on `session` with its `listing` (connect, a restart, a reconnect) and
    /// tells whoever waits; the caller rebuilds the index.
    pub(crate) fn install(&self, idx: usize, session: Session, listing: ToolListing) {
        let slot = &self.slots[idx];
        let mut st = slot.lock();
        st.session_warnings = session.warnings.clone();
        st.session = Some(Arc::new(session));
        st.phase = Phase::Connected;
        st.up_since = Instant::now();
        note_listing(&mut st, listing);
        slot.changed.notify_all();
    }

    /// Runs `f` on a library thread that disconnect waits for.
    pub(crate) fn spawn(&self, name: String, f: impl FnOnce() + Send + 'static) -> bool {
        let mut threads = lock(&self.threads);
        threads.retain(|t| !t.is_finished());
        match crate::util::spawn(name, f) {
            Ok(t) => {
                threads.push(t);
                true
            }
            Err(_) => false,
        }
    }

    /// Waits, at most `within`, for the restart and refresh threads to end (disconnect: every
    /// opening was aborted and every connection failed, so they end promptly).
    pub(crate) fn join_threads(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let threads: Vec<JoinHandle<()>> = std::mem::take(&mut *lock(&self.threads));
            if threads.is_empty() {
                return;
            }
            let mut left = Vec::new();
            for t in threads {
                if t.is_finished() {
                    let _ = t.join();
                } else {
                    left.push(t);
                }
            }
            if left.is_empty() || Instant::now() >= deadline {
                lock(&self.threads).extend(left);
                return;
            }
            lock(&self.threads).extend(left);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// One server's status (§1).
    pub(crate) fn status_of(&self, idx: usize, index: &Index) -> Map<String, Value> {
        let slot = &self.slots[idx];
        let st = slot.lock();
        let mut m = Map::new();
        let closed = self.is_closed();
        match &st.phase {
            Phase::Disabled => {
                m.insert("status".into(), "disabled".into());
            }
            Phase::Opening => {
                m.insert("status".into(), "failed".into());
            }
            Phase::Connected => match st.session.as_ref().and_then(|s| s.conn.death()) {
                Some(f) if !closed => {
                    m.insert("status".into(), "failed".into());
                    let why = st
                        .session
                        .as_ref()
                        .map(|s| s.explain(&f))
                        .unwrap_or_default();
                    m.insert(
                        "error".into(),
                        format!("server `{}` failed after connecting: {why}", slot.name).into(),
                    );
                }
                _ => {
                    m.insert("status".into(), "connected".into());
                }
            },
            Phase::Restarting {
                attempt, reason, ..
            } => {
                m.insert("status".into(), "restarting".into());
                m.insert("attempt".into(), (*attempt).into());
                m.insert("error".into(), reason.clone().into());
            }
            Phase::Failed { error, .. } => {
                m.insert("status".into(), "failed".into());
                m.insert("error".into(), error.clone().into());
            }
        }
        if let Some(session) = &st.session {
            m.insert(
                "era".into(),
                match session.era {
                    Era::Legacy => "legacy",
                    Era::Modern => "modern",
                }
                .into(),
            );
            m.insert(
                "protocolVersion".into(),
                session.protocol_version.clone().into(),
            );
            m.insert("eraReason".into(), session.era_reason.clone().into());
            m.insert(
                "tools".into(),
                index.counts.get(idx).copied().unwrap_or(0).into(),
            );
            let skipped = session.conn.skipped_lines();
            if skipped > 0 {
                m.insert("skippedLines".into(), skipped.into());
            }
            let dropped = session.conn.dropped_messages();
            if dropped > 0 {
                m.insert("droppedMessages".into(), dropped.into());
            }
            if let Some(e) = session.conn.last_elicitation_error() {
                m.insert("lastElicitationError".into(), e.into());
            }
            // Each absent while there is nothing to say, so a status right after connect
            // is as it always was.
            if st.restarts > 0 {
                m.insert("restarts".into(), st.restarts.into());
            }
            if let Some(e) = &st.last_exit {
                m.insert("lastExit".into(), e.clone().into());
            }
            if let Some(t) = st.refreshed_at_ms {
                m.insert("toolsRefreshedAtMs".into(), t.into());
            }
            if let Some(e) = &st.refresh_error {
                m.insert("lastRefreshError".into(), e.clone().into());
            }
            if let Some(e) = st.catalog.errors() {
                m.insert("listErrors".into(), e);
            }
            if !st.subscribed.is_empty() {
                let uris = st.subscribed.iter().cloned().map(Value::String).collect();
                m.insert("subscriptions".into(), Value::Array(uris));
            }
        }
        let dropped = self.events.dropped(idx);
        if dropped > 0 {
            m.insert("droppedEvents".into(), dropped.into());
        }
        let warnings: Vec<Value> = st
            .session_warnings
            .iter()
            .chain(&st.list_warnings)
            .chain(index.warnings.get(idx).into_iter().flatten())
            .chain(self.prompt_index().warnings.get(idx).into_iter().flatten())
            .cloned()
            .map(Value::String)
            .collect();
        if !warnings.is_empty() {
            m.insert("warnings".into(), Value::Array(warnings));
        }
        m
    }
}

/// Notes a new listing of a server in its state.
pub(crate) fn note_listing(st: &mut SlotState, listing: ToolListing) {
    if st.listed.is_some() {
        st.refreshed_at_ms = Some(crate::util::unix_millis());
    }
    st.listed = Some(Arc::new(listing.tools));
    st.list_warnings = listing.warnings;
    st.ttl = listing.ttl;
    st.fresh_until = listing.ttl.and_then(|t| Instant::now().checked_add(t));
    st.refresh_error = None;
}

/// Masks the configured secrets in every string of `v` (§9: a server's log message or error
/// may echo one).
fn mask(secrets: &crate::util::secrets::Secrets, v: &mut Value) {
    match v {
        Value::String(s) => {
            let masked = secrets.mask(s);
            if masked != *s {
                *s = masked;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mask(secrets, x)),
        Value::Object(o) => o.values_mut().for_each(|x| mask(secrets, x)),
        _ => {}
    }
}
