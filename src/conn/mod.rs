//! One connection's bookkeeping, the same for every transport (architecture principle 2): ids,
//! sending, and what the layers above are told (a [`Watcher`], the host's [`ServerRequests`]),
//! here; the pending-call map and how a request waits ([`pending`]), progress routed to its
//! request ([`progress`]), responders carried by a request's stream ([`carried`]), what comes in
//! filed through the transport's [`Inbound`](crate::transport::Inbound) sink, which `Conn`
//! implements ([`inbound`]), MCP 2026-07-28's listens ([`subscriptions`]), and the timers that
//! stand still while the host is asked ([`pause_clock`]). Tested against a fake transport
//! (`tests.rs`).

mod carried;
mod inbound;
mod pause_clock;
mod pending;
mod progress;
pub(crate) mod subscriptions;
#[cfg(test)]
mod tests;

use crate::json::rpc;
pub(crate) use crate::request::{Limits, ProgressSink, Reply, Req, RequestError, Response};
use crate::transport::{OutKind, Outgoing, Transport};
use crate::util::{lock, IdMap};
pub(crate) use pause_clock::PauseClock;
use pending::{Waiter, Waiting};

thread_local! {
    /// Set while [`Conn::close_carried`] answers: those answers are sent in order.
    pub(super) static SEND_IN_ORDER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// One server connection.
pub(crate) struct Conn {
    pending: Mutex<Waiting>,
    next_id: AtomicU64,
    transport: OnceLock<Arc<dyn Transport>>,
    dead_flag: AtomicBool,
    pause: Arc<PauseClock>,
    /// Who answers the server's own requests (§4): the host side's live bridge.
    answering: Arc<dyn ServerRequests>,
    /// This connection, for what is filed through [`Inbound`] (which gets `&self` only).
    me: std::sync::Weak<Conn>,
    skipped: AtomicUsize,
    /// Inbound notifications dropped because the reader fell behind (HTTP, §5).
    dropped: AtomicUsize,
    last_elicitation_error: Mutex<Option<String>>,
    /// Open responders of elicitations that arrived on a request's stream (HTTP), by request:
    /// a cancel or timeout of that request closes them (§7).
    carried: Mutex<HashMap<u64, Vec<crate::responder::Token>>>,
    /// Who learns of the server's notifications and of this connection's end (docs/live-servers.md).
    watcher: OnceLock<Arc<dyn Watcher>>,
    /// MCP 2026-07-28's listens: acknowledged, replaced ([`subscriptions`]).
    pub(crate) listens: subscriptions::Listens,
    /// Counts what was sent: a release on every send, an acquire on every line read. What a
    /// thread did before the library sent a request or an answer happens-before what the
    /// reader does with the lines that follow (a resolver's or event callback's call, a
    /// call's return). The order is real, but it runs through the server process, where
    /// neither the memory model nor ThreadSanitizer can see it: a host that sets up its
    /// `user_data` and then calls must not meet a data race in its resolver.
    sent: AtomicU64,
}

/// What a connection tells the layers above it beyond the answers to their requests (issue
/// 28: list changes, log messages, a dead child): the client's per-server supervisor
/// implements it. Both run on the thread that read or failed, a reader among them, so neither
/// may block.
pub(crate) trait Watcher: Send + Sync {
    /// A notification from the server other than `notifications/progress` (which goes to its
    /// call): `notifications/tools/list_changed`, `notifications/message`, ….
    fn notification(&self, conn: &Conn, method: &str, params: Option<Value>);
    /// The connection failed for the first time, for another reason than closing (a child
    /// that exited, a stream that ended): every request in flight has just failed with `why`.
    fn failed(&self, conn: &Conn, why: &RequestError);
    /// The server forgot our HTTP session and a new one was established (§5): the tools it
    /// lists may have changed.
    fn renewed(&self, _conn: &Conn) {}
}

/// Who answers a server's own requests on a connection (contract §4: the host side's live
/// bridge, [`crate::host::server_requests`]); conn only files them.
pub(crate) trait ServerRequests: Send + Sync {
    /// One server request (an `id` and a string `method`), carried by request `carrier`'s
    /// stream when the transport knows one (HTTP).
    fn on_request(
        &self,
        conn: &Arc<Conn>,
        id: Value,
        method: &str,
        params: Option<Value>,
        carrier: Option<u64>,
    );
}

impl Conn {
    pub(crate) fn new(answering: Arc<dyn ServerRequests>) -> Arc<Conn> {
        Arc::new_cyclic(|me| Conn {
            pending: Mutex::new(Waiting {
                waiters: IdMap::default(),
                progress_routes: IdMap::default(),
                held_progress: IdMap::default(),
                dead: None,
            }),
            next_id: AtomicU64::new(1),
            transport: OnceLock::new(),
            dead_flag: AtomicBool::new(false),
            pause: Arc::new(PauseClock::default()),
            answering,
            me: me.clone(),
            skipped: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
            last_elicitation_error: Mutex::new(None),
            carried: Mutex::new(HashMap::new()),
            watcher: OnceLock::new(),
            listens: subscriptions::Listens::default(),
            sent: AtomicU64::new(0),
        })
    }

    /// Sets who learns of notifications and of this connection's end (once, before the
    /// transport starts, so that nothing the server sends first is missed).
    pub(crate) fn watch(&self, watcher: Arc<dyn Watcher>) {
        let _ = self.watcher.set(watcher);
    }

    /// Tells the watcher that a new HTTP session replaced the one the server forgot.
    pub(crate) fn renewed(&self) {
        if let Some(w) = self.watcher.get() {
            w.renewed(self);
        }
    }

    /// Sends request `text` (its id from [`Conn::reserve_id`]) whose answer nobody waits for:
    /// a `subscriptions/listen` that stays open for the connection's life and is answered, if
    /// ever, when the server ends it (an answer to an id nobody waits for is ignored).
    pub(crate) fn send_untracked(&self, method: &str, text: &str) -> Result<(), String> {
        self.send(&Outgoing {
            text,
            kind: OutKind::Notification {
                method,
                ordered: false,
            },
            routing: None,
            timeout: None,
        })
    }

    /// The id the next request will get (a listen request's id is its subscription id).
    pub(crate) fn reserve_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Attaches the transport (once, right after it is created).
    pub(crate) fn attach(&self, transport: Arc<dyn Transport>) {
        let _ = self.transport.set(transport);
    }

    fn send(&self, msg: &Outgoing<'_>) -> Result<(), String> {
        self.sent.fetch_add(1, Ordering::Release);
        match self.transport.get() {
            Some(t) => t.send(msg),
            None => Err("no transport attached".into()),
        }
    }

    /// Sends our reply to a server request.
    pub(crate) fn send_response(&self, text: &str) -> Result<(), String> {
        self.send(&Outgoing {
            text,
            kind: OutKind::Response {
                ordered: SEND_IN_ORDER.with(std::cell::Cell::get),
            },
            routing: None,
            timeout: None,
        })
    }

    /// Sends a notification. Callers may ignore the error: a dead connection is reported by
    /// its reader, and by the next request.
    pub(crate) fn notify(&self, method: &str, params_json: Option<&str>) -> Result<(), String> {
        self.send(&Outgoing {
            text: &rpc::notification_text(method, params_json),
            kind: OutKind::Notification {
                method,
                ordered: false,
            },
            routing: None,
            timeout: None,
        })
    }

    /// A notification that reaches the server before this returns (the handshake's
    /// `notifications/initialized` must precede the requests that follow it).
    pub(crate) fn notify_ordered(&self, method: &str) -> Result<(), String> {
        self.send(&Outgoing {
            text: &rpc::notification_text(method, None),
            kind: OutKind::Notification {
                method,
                ordered: true,
            },
            routing: None,
            timeout: None,
        })
    }

    /// Whether the connection has failed or closed.
    pub(crate) fn is_dead(&self) -> bool {
        self.dead_flag.load(Ordering::Acquire)
    }

    /// Why the connection is dead, if it is.
    pub(crate) fn death(&self) -> Option<RequestError> {
        lock(&self.pending).dead.clone()
    }

    /// Lines skipped because they were not JSON objects (§5).
    pub(crate) fn skipped_lines(&self) -> usize {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Inbound messages dropped because the reader fell behind (`droppedMessages`, §6).
    pub(crate) fn dropped_messages(&self) -> usize {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Counts one dropped inbound message.
    pub(crate) fn count_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn last_elicitation_error(&self) -> Option<String> {
        lock(&self.last_elicitation_error).clone()
    }

    pub(crate) fn set_elicitation_error(&self, why: &str) {
        *lock(&self.last_elicitation_error) = Some(why.to_string());
    }

    /// The clock an elicitation pauses (§4 "Which timer pauses"): the carrying call's own over
    /// streamable HTTP, else the connection's, which every call on it shares.
    pub(crate) fn clock_for(&self, carrier: Option<u64>) -> Arc<PauseClock> {
        carrier
            .and_then(|c| {
                lock(&self.pending)
                    .waiters
                    .get(&c)
                    .and_then(|w| w.clock.clone())
            })
            .unwrap_or_else(|| self.pause.clone())
    }

    /// Whether request `id` is still waiting for its answer (not answered, cancelled or
    /// failed).
    pub(crate) fn is_pending(&self, id: u64) -> bool {
        lock(&self.pending).waiters.contains_key(&id)
    }

    /// Whether request `id`'s timer stands still (an elicitation it carried is outstanding).
    pub(crate) fn is_paused(&self, id: u64) -> bool {
        self.clock_for(Some(id)).is_paused()
    }

    /// A server asked for input with no resolver registered (§4 "Capability"): the calls it
    /// concerns are flagged so that their output says so: the call whose stream carried it
    /// (HTTP), else every call in flight on this server (stdio), as for which timer pauses.
    pub(crate) fn flag_asked_without_resolver(&self, carrier: Option<u64>) {
        let pending = lock(&self.pending);
        let flag = |w: &Arc<Waiter>| w.asked_without_resolver.store(true, Ordering::Release);
        match carrier {
            Some(c) => pending.waiters.get(&c).into_iter().for_each(flag),
            None => pending.waiters.values().for_each(flag),
        }
    }
}
