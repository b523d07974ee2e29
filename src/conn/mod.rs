//! One connection's bookkeeping, the same for every transport (architecture principle 2): ids,
//! the pending-call map, waking the waiting caller directly from the reader (no hop), and the
//! pause clocks. The reader files every inbound line through the transport's [`Inbound`] sink,
//! which `Conn` implements: a response goes to its waiter, a server request to the host's
//! [`ServerRequests`] (`crate::host` answers them), anything else is dropped.

mod pause_clock;
pub(crate) mod subscriptions;

use crate::json::rpc::{self as jsonrpc, LineKind};
pub(crate) use crate::request::{Limits, ProgressSink, Reply, Req, RequestError};
use crate::transport::{Inbound, OutKind, Outgoing, Transport};
use crate::util::lock;
pub(crate) use pause_clock::PauseClock;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

thread_local! {
    /// Set while [`Conn::close_carried`] answers: those answers are sent in order.
    static SEND_IN_ORDER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How often a request whose timeout is not armed yet looks again ([`Req::armed`]).
const ARMED_LOOK: Duration = Duration::from_millis(5);

struct Waiter {
    reply: Mutex<Option<Reply>>,
    thread: Thread,
    /// `notifications/progress` params for this request (`progressToken` left out), in
    /// arrival order, for the caller to hand on.
    progress: Mutex<Vec<String>>,
    /// The active time (of `clock`, in ns) of the last progress notification: it restarts the
    /// idle timeout (§7).
    last_progress: AtomicU64,
    /// This call's own timer when only the call whose stream carried an elicitation pauses
    /// (HTTP); None: the connection's clock (stdio: every call pauses).
    clock: Option<Arc<PauseClock>>,
    /// The server asked for input during this call while no resolver is registered (§4
    /// "Capability"); set by the reader before it files the response, read once after it.
    asked_without_resolver: AtomicBool,
}

impl Waiter {
    fn complete(&self, r: Reply) {
        *lock(&self.reply) = Some(r);
        self.thread.unpark();
    }
}

struct Pending {
    waiters: HashMap<u64, Arc<Waiter>>,
    /// progressToken → the request it belongs to (the current round's).
    progress_routes: HashMap<u64, u64>,
    /// Progress of a task's call between its polls (issue 29): token -> notes held until the
    /// waiting call takes them.
    held_progress: HashMap<u64, Vec<String>>,
    /// Set once; every later request fails at once with it.
    dead: Option<RequestError>,
}

/// One server connection.
pub(crate) struct Conn {
    pending: Mutex<Pending>,
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
    /// Who learns of the server's notifications and of this connection's end (issue 28).
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
            pending: Mutex::new(Pending {
                waiters: HashMap::new(),
                progress_routes: HashMap::new(),
                held_progress: HashMap::new(),
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
            text: &jsonrpc::notification_text(method, params_json),
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
            text: &jsonrpc::notification_text(method, None),
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

    /// Sends a request and waits for its answer within `limits` of active (unpaused) time;
    /// also says whether the server asked for input during it while no resolver is registered
    /// (§4 "Capability": the call's output then says so). With a `progress_token`, the
    /// server's progress notifications for it restart the idle timeout and go to `sink`, on
    /// this thread (§7). `started` learns the request id before the request is sent.
    pub(crate) fn request(&self, r: &Req<'_>) -> (Reply, bool) {
        let Req {
            method,
            params_json,
            limits,
            progress_token,
            sink,
            started,
            routing,
            armed,
        } = *r;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Each call its own pause clock where only the asking call pauses (streamable HTTP),
        // else the connection's, which every call on it shares (stdio, legacy SSE, §4).
        let clock = self
            .transport
            .get()
            .is_some_and(|t| t.clock_per_call())
            .then(|| Arc::new(PauseClock::default()));
        let waiter = Arc::new(Waiter {
            reply: Mutex::new(None),
            thread: std::thread::current(),
            progress: Mutex::new(Vec::new()),
            last_progress: AtomicU64::new(0),
            clock,
            asked_without_resolver: AtomicBool::new(false),
        });
        {
            let mut p = lock(&self.pending);
            if let Some(d) = &p.dead {
                return (Err(d.clone()), false);
            }
            p.waiters.insert(id, waiter.clone());
            if let Some(t) = progress_token {
                p.progress_routes.insert(t, id);
            }
        }
        started(id);
        if let Some(r) = lock(&waiter.reply).take() {
            // Ended before it went out (a cancel that came first): nothing is sent (§7).
            if let Some(t) = progress_token {
                lock(&self.pending).progress_routes.remove(&t);
            }
            return (r, false);
        }
        let text = jsonrpc::request_text(id, method, params_json);
        // The timeout counts from here: writing the request is part of it (the HTTP direct
        // path writes on this thread, bounded by the same timeout).
        let start = waiter.clock.as_deref().unwrap_or(&self.pause).active();
        let sent = self.send(&Outgoing {
            text: &text,
            kind: OutKind::Request { id, method },
            routing,
            timeout: Some(limits.idle.min(limits.total)),
        });
        let reply = match sent {
            Err(e) => {
                lock(&self.pending).waiters.remove(&id);
                Err(self.send_failed(method, &e))
            }
            Ok(()) => self.wait(id, &waiter, limits, sink, armed, start),
        };
        if let Some(t) = progress_token {
            let mut p = lock(&self.pending);
            if p.progress_routes.get(&t) == Some(&id) {
                p.progress_routes.remove(&t);
            }
        }
        (reply, waiter.asked_without_resolver.load(Ordering::Acquire))
    }

    /// [`Conn::request`] for the `result` as a JSON value (a JSON-RPC error is `Rpc`), within
    /// one phase timeout and without progress.
    pub(crate) fn request_value(
        &self,
        method: &str,
        params_json: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, RequestError> {
        let line = self.request(&Req::plain(method, params_json, timeout)).0?;
        jsonrpc::result_value(&line).map_err(RequestError::Rpc)
    }

    fn wait(
        &self,
        id: u64,
        waiter: &Waiter,
        limits: Limits,
        sink: ProgressSink<'_>,
        mut armed: Option<&dyn Fn() -> bool>,
        start: Duration,
    ) -> Reply {
        let clock: &PauseClock = waiter.clock.as_deref().unwrap_or(&self.pause);
        // The idle clock's start: now, or once `armed` first says true.
        let mut idle_from = start;
        loop {
            if let Some(a) = armed {
                if a() {
                    armed = None;
                }
                idle_from = clock.active();
            }
            // The reply first, then the progress: the reader filed every progress notification
            // before the response, so none is left behind (progress never follows done, §7).
            let reply = lock(&waiter.reply).take();
            let notes = std::mem::take(&mut *lock(&waiter.progress));
            if let Some(sink) = sink {
                for n in &notes {
                    sink(n);
                }
            }
            if let Some(r) = reply {
                return r;
            }
            let now = clock.active();
            let total = now.saturating_sub(start);
            let last = Duration::from_nanos(waiter.last_progress.load(Ordering::Acquire));
            let idle = now.saturating_sub(idle_from.max(last));
            if idle >= limits.idle || total >= limits.total {
                let removed = lock(&self.pending).waiters.remove(&id).is_some();
                if removed {
                    if let Some(t) = self.transport.get() {
                        t.abandon(id);
                    }
                    return Err(if idle >= limits.idle {
                        RequestError::Timeout(id)
                    } else {
                        RequestError::TimedOutTotal(id)
                    });
                }
                // Completed concurrently: the reply is (about to be) in the slot.
                continue;
            }
            // At least 5 ms: while the clock is paused (the host is being asked) the remaining
            // time stands still, and a tiny one would spin.
            let mut left = (limits.idle - idle)
                .min(limits.total - total)
                .max(Duration::from_millis(5));
            if armed.is_some() {
                left = left.min(ARMED_LOOK);
            }
            // The HTTP direct path reads the reply here, on the caller's thread (issue 18).
            if self.transport.get().is_some_and(|t| t.drive(id, left)) {
                continue;
            }
            std::thread::park_timeout(left);
        }
    }

    /// A write failed (a dead child's stdin): the reader is about to report why the server went
    /// away (exit status, stderr tail), which says more than `EPIPE`; wait briefly for it, else
    /// fail the connection with the write error, since nothing can reach the server any more.
    fn send_failed(&self, method: &str, error: &str) -> RequestError {
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Some(d) = self.death() {
                return d;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.fail(RequestError::Lost(format!(
            "cannot send `{method}`: {error}"
        )));
        self.death().unwrap_or(RequestError::Closed)
    }

    /// Fails every pending call and every later one with `why` (first failure wins).
    pub(crate) fn fail(&self, why: RequestError) {
        let (waiters, first): (Vec<(u64, Arc<Waiter>)>, bool) = {
            let mut p = lock(&self.pending);
            let first = p.dead.is_none();
            if first {
                p.dead = Some(why);
            }
            self.dead_flag.store(true, Ordering::Release);
            (p.waiters.drain().collect(), first)
        };
        let why = self.death().unwrap_or(RequestError::Closed);
        for (id, w) in waiters {
            self.finish(id, &w, Err(why.clone()));
        }
        // After the callers woke (§3: calls in flight fail at once), the watcher may restart.
        if first && why != RequestError::Closed {
            if let Some(w) = self.watcher.get() {
                w.failed(self, &why);
            }
        }
    }

    /// Completes request `id`'s waiter; from another thread than its caller's, the transport
    /// also stops that caller reading the request's reply (the HTTP direct path).
    fn finish(&self, id: u64, w: &Waiter, r: Reply) {
        w.complete(r);
        if w.thread.id() != std::thread::current().id() {
            if let Some(t) = self.transport.get() {
                t.interrupt(id);
            }
        }
    }

    /// Fails one pending request (its transport could not deliver it or its answer).
    pub(crate) fn fail_request(&self, id: u64, why: RequestError) {
        let waiter = lock(&self.pending).waiters.remove(&id);
        if let Some(w) = waiter {
            self.finish(id, &w, Err(why));
        }
    }

    /// Remembers that responder `token` answers an elicitation carried by request `carrier`.
    pub(crate) fn carry(&self, carrier: u64, token: crate::responder::Token) {
        lock(&self.carried).entry(carrier).or_default().push(token);
    }

    /// Forgets responder `token` of request `carrier` (it ended).
    pub(crate) fn uncarry(&self, carrier: u64, token: crate::responder::Token) {
        let mut c = lock(&self.carried);
        if let Some(list) = c.get_mut(&carrier) {
            list.retain(|t| *t != token);
            if list.is_empty() {
                c.remove(&carrier);
            }
        }
    }

    /// Answers cancel to the elicitations carried by request `id` that are still open (§7).
    pub(crate) fn close_carried(&self, id: u64) {
        let tokens = lock(&self.carried).remove(&id).unwrap_or_default();
        // Their cancel answers go out before this returns, so before the caller's
        // notifications/cancelled (§7).
        SEND_IN_ORDER.with(|o| o.set(true));
        for t in tokens {
            crate::responder::cancel(t, "the call was cancelled or timed out");
        }
        SEND_IN_ORDER.with(|o| o.set(false));
    }

    /// Ends a request in flight as cancelled by the host (§7); false when it is not in flight.
    pub(crate) fn cancel_request(&self, id: u64) -> bool {
        let waiter = lock(&self.pending).waiters.remove(&id);
        match waiter {
            Some(w) => {
                self.finish(id, &w, Err(RequestError::Cancelled));
                true
            }
            None => false,
        }
    }

    /// A `notifications/progress`: to the request its token belongs to, restarting its idle
    /// timeout (§7); an unknown token is ignored.
    fn on_progress(&self, params: Option<Value>) {
        let Some(Value::Object(mut params)) = params else {
            return;
        };
        let Some(token) = params.swap_remove("progressToken").and_then(|t| t.as_u64()) else {
            return;
        };
        let mut p = lock(&self.pending);
        let Some(w) = p
            .progress_routes
            .get(&token)
            .and_then(|id| p.waiters.get(id))
        else {
            if let Some(held) = p.held_progress.get_mut(&token) {
                held.push(progress_note(params));
            }
            return;
        };
        let clock: &PauseClock = w.clock.as_deref().unwrap_or(&self.pause);
        let now = clock.active().as_nanos().min(u64::MAX as u128) as u64;
        w.last_progress.store(now, Ordering::Release);
        lock(&w.progress).push(progress_note(params));
        w.thread.unpark();
    }

    /// Holds `token`'s progress while no request of it is in flight (a task's wait between
    /// polls, issue 29), until [`Conn::release_progress`].
    pub(crate) fn hold_progress(&self, token: u64) {
        lock(&self.pending).held_progress.entry(token).or_default();
    }

    /// The progress held for `token` since the last take, in arrival order.
    pub(crate) fn take_progress(&self, token: u64) -> Vec<String> {
        lock(&self.pending)
            .held_progress
            .get_mut(&token)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Stops holding `token`'s progress.
    pub(crate) fn release_progress(&self, token: u64) {
        lock(&self.pending).held_progress.remove(&token);
    }

    /// Files one inbound line, which arrived on the stream of request `carrier` (HTTP: an
    /// elicitation there pauses that call's timer only) or on none: a response goes to its
    /// waiter as the raw line (the hot path: only `id` and `method` are looked at here); a
    /// server request goes to who answers them ([`ServerRequests`]); anything else is ignored.
    /// Lines that are not JSON objects are counted and skipped (§5).
    pub(crate) fn on_line_carried(self: &Arc<Self>, line: &[u8], carrier: Option<u64>) {
        // What was done before the sends this line answers happens-before filing it (`sent`).
        self.sent.load(Ordering::Acquire);
        match jsonrpc::line_kind(line) {
            LineKind::Response(id) => {
                // `line_kind` validated the JSON; a line that is not UTF-8 is skipped and
                // counted too (§5), even when it names one of our ids.
                let Ok(text) = std::str::from_utf8(line) else {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let waiter = lock(&self.pending).waiters.remove(&id);
                if let Some(w) = waiter {
                    self.finish(id, &w, Ok(text.to_string()));
                }
            }
            // Only the members acted on are built ([`jsonrpc::Envelope`]); UTF-8 is checked
            // first, as parsing the whole line into a Value did (§5: such lines are skipped).
            LineKind::Message => match std::str::from_utf8(line)
                .ok()
                .and_then(|text| serde_json::from_str::<jsonrpc::Envelope>(text).ok())
            {
                // Classified by `method` first: servers number their own requests.
                Some(e) => match (e.method, e.id) {
                    (Some(Value::String(method)), Some(id)) => {
                        self.answering
                            .on_request(self, id, &method, e.params, carrier);
                    }
                    (Some(Value::String(method)), None) if method == "notifications/progress" => {
                        self.on_progress(e.params);
                    }
                    (Some(Value::String(method)), None) => {
                        if !self.listens.file(&method, e.params.as_ref()) {
                            return;
                        }
                        if let Some(w) = self.watcher.get() {
                            w.notification(self, &method, e.params);
                        }
                    }
                    _ => {}
                },
                None => {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                }
            },
            LineKind::Other => {}
            LineKind::Invalid => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The note a progress callback gets: `progress`, `total`, `message` (§7).
fn progress_note(mut params: serde_json::Map<String, Value>) -> String {
    let mut note = serde_json::Map::new();
    for key in ["progress", "total", "message"] {
        if let Some(v) = params.swap_remove(key) {
            note.insert(key.into(), v);
        }
    }
    crate::json::to_text(&Value::Object(note))
}

/// What the transports file here (issue 24: they know this trait, not the connection).
impl Inbound for Conn {
    fn message(&self, line: &[u8], carrier: Option<u64>) {
        if let Some(me) = self.me.upgrade() {
            me.on_line_carried(line, carrier);
        }
    }

    fn fail_all(&self, why: RequestError) {
        self.fail(why);
    }

    fn fail_one(&self, id: u64, why: RequestError) {
        self.fail_request(id, why);
    }

    fn dropped(&self) {
        self.count_dropped();
    }

    fn is_pending(&self, id: u64) -> bool {
        Conn::is_pending(self, id)
    }

    fn is_paused(&self, id: u64) -> bool {
        Conn::is_paused(self, id)
    }
}
