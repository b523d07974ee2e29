//! One connection's core, the same for every transport (architecture principle 2): ids, the
//! pending-call map, waking the waiting caller directly from the reader (no hop), the pause
//! clock, and the live elicitation bridge (contract §4). A transport only moves bytes: it calls
//! [`Conn::on_line`] for each inbound message and implements [`Outbound`].

use crate::bridge::{self, Route};
use crate::jsonrpc::{self, Inbound, LineKind};
use crate::responder::{self, Resolver, ResolverReturn};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How messages leave for the server.
pub trait Outbound: Send + Sync {
    /// Sends one complete JSON-RPC message (no trailing newline).
    fn send(&self, message: &str) -> Result<(), String>;
    /// The request `id` got no answer in time and was given up; a transport that holds work
    /// for it (an HTTP stream) drops that work.
    fn abandon(&self, _id: u64) {}
}

/// Locks a mutex, going on through poisoning (the data is plain and stays consistent).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The server answered with a JSON-RPC error object.
    Rpc(Value),
    /// No answer within the phase timeout (the request id, for `notifications/cancelled`).
    Timeout(u64),
    /// The connection failed (child gone, line too long, write failed…).
    Lost(String),
    /// The client is being disconnected.
    Closed,
}

/// A response line as the server sent it, checked to be UTF-8 JSON (the caller parses what it
/// needs), or why none came.
pub type Reply = Result<String, Failure>;

/// The last line of a call's output, and the status's `lastElicitationError`, when the server
/// asked for input while no resolver is registered (§4 "Capability").
pub const ASKED_WITHOUT_RESOLVER: &str = "the server asked for input; no resolver is registered";

struct Waiter {
    reply: Mutex<Option<Reply>>,
    thread: Thread,
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

/// Call-timer time that stops while an elicitation is outstanding (§4 "Which timer pauses"):
/// the active time is wall time minus paused time. Writers serialise on a mutex; readers are
/// lock-free and can only under-count (a timeout then fires late and is re-checked).
pub struct PauseClock {
    origin: Instant,
    outstanding: Mutex<usize>,
    /// Nanoseconds since `origin` when the current pause began; 0 when not paused.
    since: AtomicU64,
    /// Total paused nanoseconds of finished pauses.
    total: AtomicU64,
}

impl Default for PauseClock {
    fn default() -> Self {
        PauseClock {
            origin: Instant::now(),
            outstanding: Mutex::new(0),
            since: AtomicU64::new(0),
            total: AtomicU64::new(0),
        }
    }
}

impl PauseClock {
    fn nanos(&self) -> u64 {
        (self.origin.elapsed().as_nanos() as u64).max(1)
    }

    /// Active (unpaused) time since the clock started.
    pub fn active(&self) -> Duration {
        let since = self.since.load(Ordering::SeqCst);
        let total = self.total.load(Ordering::SeqCst);
        let now = self.nanos();
        let current = if since == 0 {
            0
        } else {
            now.saturating_sub(since)
        };
        Duration::from_nanos(now.saturating_sub(total).saturating_sub(current))
    }

    pub fn begin(&self) {
        let mut n = lock(&self.outstanding);
        if *n == 0 {
            self.since.store(self.nanos(), Ordering::SeqCst);
        }
        *n += 1;
    }

    pub fn end(&self) {
        let mut n = lock(&self.outstanding);
        if *n == 0 {
            return;
        }
        *n -= 1;
        if *n == 0 {
            let since = self.since.load(Ordering::SeqCst);
            self.total
                .fetch_add(self.nanos().saturating_sub(since), Ordering::SeqCst);
            self.since.store(0, Ordering::SeqCst);
        }
    }
}

thread_local! {
    /// The connection whose inline resolver this thread is running (its address), or 0.
    static IN_RESOLVER: Cell<usize> = const { Cell::new(0) };
}

/// The host's resolver and its bounds, when one is registered.
pub struct Bridge {
    pub resolver: Arc<dyn Resolver>,
    pub elicitation_timeout: Duration,
    /// Owner key for responders of this client (disconnect cancels them all).
    pub owner: u64,
    /// Calls into the host's resolver in progress, across the client's connections:
    /// disconnect waits (bounded) for none to be left.
    pub active: Arc<AtomicUsize>,
}

struct Pending {
    waiters: HashMap<u64, Arc<Waiter>>,
    /// Set once; every later request fails at once with it.
    dead: Option<Failure>,
}

/// One server connection.
pub struct Conn {
    pub server: String,
    pending: Mutex<Pending>,
    next_id: AtomicU64,
    out: OnceLock<Arc<dyn Outbound>>,
    dead_flag: AtomicBool,
    pub pause: Arc<PauseClock>,
    /// Whether each call gets its own pause clock (streamable HTTP) instead of sharing
    /// `pause` (stdio, legacy SSE).
    per_call_clock: AtomicBool,
    bridge: Option<Bridge>,
    skipped: AtomicUsize,
    /// Inbound notifications dropped because the reader fell behind (HTTP, §5).
    dropped: AtomicUsize,
    last_elicitation_error: Mutex<Option<String>>,
}

impl Conn {
    pub fn new(server: &str, bridge: Option<Bridge>) -> Arc<Conn> {
        Arc::new(Conn {
            server: server.to_string(),
            pending: Mutex::new(Pending {
                waiters: HashMap::new(),
                dead: None,
            }),
            next_id: AtomicU64::new(1),
            out: OnceLock::new(),
            dead_flag: AtomicBool::new(false),
            pause: Arc::new(PauseClock::default()),
            per_call_clock: AtomicBool::new(false),
            bridge,
            skipped: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
            last_elicitation_error: Mutex::new(None),
        })
    }

    /// Attaches the transport's sending half (once, right after it is created).
    pub fn attach(&self, out: Arc<dyn Outbound>) {
        let _ = self.out.set(out);
    }

    fn send(&self, message: &str) -> Result<(), String> {
        match self.out.get() {
            Some(o) => o.send(message),
            None => Err("no transport attached".into()),
        }
    }

    /// Chooses per-call pause clocks (streamable HTTP) or one per connection (stdio, §4).
    pub fn set_per_call_clock(&self, on: bool) {
        self.per_call_clock.store(on, Ordering::Relaxed);
    }

    /// Sends a notification. Callers may ignore the error: a dead connection is reported by
    /// its reader, and by the next request.
    pub fn notify(&self, method: &str, params_json: Option<&str>) -> Result<(), String> {
        self.send(&jsonrpc::notification_text(method, params_json))
    }

    /// Whether this thread is inside this connection's inline resolver (re-entrancy guard).
    pub fn in_own_resolver(&self) -> bool {
        IN_RESOLVER.with(Cell::get) == self as *const Conn as usize
    }

    /// Whether the connection has failed or closed.
    pub fn is_dead(&self) -> bool {
        self.dead_flag.load(Ordering::Acquire)
    }

    /// Why the connection is dead, if it is.
    pub fn death(&self) -> Option<Failure> {
        lock(&self.pending).dead.clone()
    }

    /// Lines skipped because they were not JSON objects (§5).
    pub fn skipped_lines(&self) -> usize {
        self.skipped.load(Ordering::Relaxed)
    }

    /// Inbound messages dropped because the reader fell behind (`droppedMessages`, §6).
    pub fn dropped_messages(&self) -> usize {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Counts one dropped inbound message.
    pub fn count_dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    pub fn last_elicitation_error(&self) -> Option<String> {
        lock(&self.last_elicitation_error).clone()
    }

    /// Sends a request and waits for its answer, at most `timeout` of active (unpaused) time.
    pub fn request(&self, method: &str, params_json: Option<&str>, timeout: Duration) -> Reply {
        self.request_noting(method, params_json, timeout).0
    }

    /// [`Conn::request`], and whether the server asked for input during it while no resolver
    /// is registered (§4 "Capability": the call's output then says so).
    pub fn request_noting(
        &self,
        method: &str,
        params_json: Option<&str>,
        timeout: Duration,
    ) -> (Reply, bool) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let clock = self
            .per_call_clock
            .load(Ordering::Relaxed)
            .then(|| Arc::new(PauseClock::default()));
        let waiter = Arc::new(Waiter {
            reply: Mutex::new(None),
            thread: std::thread::current(),
            clock,
            asked_without_resolver: AtomicBool::new(false),
        });
        {
            let mut p = lock(&self.pending);
            if let Some(d) = &p.dead {
                return (Err(d.clone()), false);
            }
            p.waiters.insert(id, waiter.clone());
        }
        if let Err(e) = self.send(&jsonrpc::request_text(id, method, params_json)) {
            lock(&self.pending).waiters.remove(&id);
            return (Err(self.send_failed(method, &e)), false);
        }
        let reply = self.wait(id, &waiter, timeout);
        (reply, waiter.asked_without_resolver.load(Ordering::Acquire))
    }

    fn wait(&self, id: u64, waiter: &Waiter, timeout: Duration) -> Reply {
        let clock: &PauseClock = waiter.clock.as_deref().unwrap_or(&self.pause);
        let start = clock.active();
        loop {
            if let Some(r) = lock(&waiter.reply).take() {
                return r;
            }
            let elapsed = clock.active().saturating_sub(start);
            if elapsed >= timeout {
                let removed = lock(&self.pending).waiters.remove(&id).is_some();
                if removed {
                    if let Some(o) = self.out.get() {
                        o.abandon(id);
                    }
                    return Err(Failure::Timeout(id));
                }
                // Completed concurrently: the reply is (about to be) in the slot.
                continue;
            }
            std::thread::park_timeout(timeout - elapsed);
        }
    }

    /// A write failed (a dead child's stdin): the reader is about to report why the server went
    /// away (exit status, stderr tail), which says more than `EPIPE`; wait briefly for it, else
    /// fail the connection with the write error, since nothing can reach the server any more.
    fn send_failed(&self, method: &str, error: &str) -> Failure {
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Some(d) = self.death() {
                return d;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.fail(Failure::Lost(format!("cannot send `{method}`: {error}")));
        self.death().unwrap_or(Failure::Closed)
    }

    /// Fails every pending call and every later one with `why` (first failure wins).
    pub fn fail(&self, why: Failure) {
        let waiters: Vec<Arc<Waiter>> = {
            let mut p = lock(&self.pending);
            if p.dead.is_none() {
                p.dead = Some(why);
            }
            self.dead_flag.store(true, Ordering::Release);
            p.waiters.drain().map(|(_, w)| w).collect()
        };
        let why = self.death().unwrap_or(Failure::Closed);
        for w in waiters {
            w.complete(Err(why.clone()));
        }
    }

    /// [`Conn::request`] for the `result` as a JSON value (a JSON-RPC error is `Failure::Rpc`).
    pub fn request_value(
        &self,
        method: &str,
        params_json: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, Failure> {
        let line = self.request(method, params_json, timeout)?;
        jsonrpc::result_value(&line).map_err(Failure::Rpc)
    }

    /// Fails one pending request (its transport could not deliver it or its answer).
    pub fn fail_request(&self, id: u64, why: Failure) {
        let waiter = lock(&self.pending).waiters.remove(&id);
        if let Some(w) = waiter {
            w.complete(Err(why));
        }
    }

    /// Files one inbound line: a response goes to its waiter as the raw line (the hot path: only
    /// `id` and `method` are looked at here); a server request goes to the bridge; anything
    /// else is ignored. Lines that are not JSON objects are counted and skipped (§5).
    pub fn on_line(self: &Arc<Self>, line: &[u8]) {
        self.on_line_carried(line, None);
    }

    /// [`Conn::on_line`] for a message that arrived on the stream of request `carrier` (HTTP):
    /// an elicitation there pauses that call's timer only.
    pub fn on_line_carried(self: &Arc<Self>, line: &[u8], carrier: Option<u64>) {
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
                    w.complete(Ok(text.to_string()));
                }
            }
            LineKind::Message => match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(obj)) => self.on_message(obj, carrier),
                _ => {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                }
            },
            LineKind::Other => {}
            LineKind::Invalid => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A server request (to the bridge) or a notification (ignored), classified by `method`.
    fn on_message(self: &Arc<Self>, mut obj: Map<String, Value>, carrier: Option<u64>) {
        let (id, method) = match jsonrpc::classify_object(&obj) {
            Inbound::Request { id, method, .. } => (id.clone(), method.to_string()),
            _ => return,
        };
        let params = obj.swap_remove("params");
        match bridge::route(&id, &method, params.as_ref(), self.bridge.is_some()) {
            Route::Reply(frame) => {
                if self.bridge.is_none() && method == "elicitation/create" {
                    // Before the -32601 goes out: the server's reaction (and the response)
                    // can only come after it.
                    self.asked_without_resolver(carrier);
                }
                let _ = self.send(&crate::json::to_text(&frame));
            }
            Route::Elicit(_) => {
                let params = match params {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                self.elicit(id, params, carrier);
            }
        }
    }

    /// A server asked for input with no resolver registered (§4 "Capability"): the status
    /// records it, and the calls it concerns are flagged so that their output says so: the call
    /// whose stream carried it (HTTP), else every call in flight on this server (stdio), as for
    /// which timer pauses.
    fn asked_without_resolver(&self, carrier: Option<u64>) {
        *lock(&self.last_elicitation_error) = Some(ASKED_WITHOUT_RESOLVER.to_string());
        let pending = lock(&self.pending);
        let flag = |w: &Arc<Waiter>| w.asked_without_resolver.store(true, Ordering::Release);
        match carrier {
            Some(c) => pending.waiters.get(&c).into_iter().for_each(flag),
            None => pending.waiters.values().for_each(flag),
        }
    }

    /// The live bridge for one `elicitation/create` (§4): runs the host's resolver inline on
    /// this (reader) thread with call timers paused; the answer, a timeout, a failure or
    /// disconnect ends the responder, which writes the reply.
    fn elicit(self: &Arc<Self>, id: Value, params: Map<String, Value>, carrier: Option<u64>) {
        let Some(b) = &self.bridge else { return };
        // Counted before the check, so that disconnect (which marks the connection dead, then
        // waits for this count) either stops this call here or waits for it.
        b.active.fetch_add(1, Ordering::SeqCst);
        self.elicit_counted(b, id, params, carrier);
        b.active.fetch_sub(1, Ordering::SeqCst);
    }

    fn elicit_counted(
        self: &Arc<Self>,
        b: &Bridge,
        id: Value,
        params: Map<String, Value>,
        carrier: Option<u64>,
    ) {
        if self.is_dead() {
            // Closing (or failed): the host is not asked any more.
            let frame = jsonrpc::result_frame(&id, bridge::ElicitResult::Cancel.into_value());
            let _ = self.send(&crate::json::to_text(&frame));
            return;
        }
        let request = bridge::elicitation_to_request(&params);
        let url_mode = bridge::is_url_mode(&params);
        let schema = params.get("requestedSchema").is_some().then(|| {
            let mut params = params;
            params.swap_remove("requestedSchema").unwrap_or_default()
        });
        let clock: Arc<PauseClock> = carrier
            .and_then(|c| {
                lock(&self.pending)
                    .waiters
                    .get(&c)
                    .and_then(|w| w.clock.clone())
            })
            .unwrap_or_else(|| self.pause.clone());
        clock.begin();
        let timer_key: Arc<Mutex<Option<crate::timer::Key>>> = Arc::new(Mutex::new(None));
        let conn = self.clone();
        let tk = timer_key.clone();
        let token = responder::open(b.owner, request.id, move |finish| {
            if let Some(k) = lock(&tk).take() {
                crate::timer::cancel(k);
            }
            let (result, why) = crate::sep1034::live_result(finish, url_mode, schema.as_ref());
            if let Some(why) = why {
                *lock(&conn.last_elicitation_error) = Some(why);
            }
            let frame = jsonrpc::result_frame(&id, result.into_value());
            let _ = conn.send(&crate::json::to_text(&frame));
            clock.end();
        });
        let key = crate::timer::schedule(b.elicitation_timeout, move || {
            // Off the shared timer thread: sending the cancel may wait on a slow server.
            let cancel = move || {
                responder::cancel(token, "no answer within elicitationTimeout");
            };
            if std::thread::Builder::new()
                .name("tn-elicit-timeout".into())
                .spawn(cancel)
                .is_err()
            {
                responder::cancel(token, "no answer within elicitationTimeout");
            }
        });
        *lock(&timer_key) = Some(key);
        if !responder::is_open(token) {
            // Already ended (cannot normally happen before the resolver runs): drop the timer.
            crate::timer::cancel(key);
        }
        if self.is_dead() {
            // Disconnect began after the first check and may already have cancelled this
            // client's responders: this one too, and the host is not called.
            responder::cancel(token, "the client was disconnected");
            return;
        }
        let previous = IN_RESOLVER.with(|c| c.replace(Arc::as_ptr(self) as usize));
        let rc = b.resolver.call(&request.json, token);
        IN_RESOLVER.with(|c| c.set(previous));
        match rc {
            ResolverReturn::Resolved => {
                responder::cancel(token, "the resolver returned TN_RESOLVED without answering");
            }
            ResolverReturn::Deferred => {}
            ResolverReturn::Failed(code) => {
                responder::cancel(token, format!("the resolver failed (returned {code})"));
            }
        }
    }
}
