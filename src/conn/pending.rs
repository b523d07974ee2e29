//! The pending-call map of one connection: a request sent and waited for (its idle and total
//! bounds, progress restarting the idle one, the clock that stands still while the host is
//! asked), its waiter woken with the reply by the reader directly, every waiter failed at once
//! when the connection ends (§3), a cancel (§7).

use super::{Conn, Limits, PauseClock, ProgressSink, Reply, Req, RequestError};
use crate::json::rpc;
use crate::transport::{OutKind, Outgoing};
use crate::util::lock;
use crate::util::IdMap;
use serde_json::Value;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How often a request whose timeout is not armed yet looks again ([`Req::armed`]).
const ARMED_LOOK: Duration = Duration::from_millis(5);

pub(super) struct Waiter {
    pub(super) reply: Mutex<Option<Reply>>,
    pub(super) thread: Thread,
    /// `notifications/progress` params for this request (`progressToken` left out), in
    /// arrival order, for the caller to hand on.
    pub(super) progress: Mutex<Vec<String>>,
    /// The active time (of `clock`, in ns) of the last progress notification: it restarts the
    /// idle timeout (§7).
    pub(super) last_progress: AtomicU64,
    /// This call's own timer when only the call whose stream carried an elicitation pauses
    /// (HTTP); None: the connection's clock (stdio: every call pauses).
    pub(super) clock: Option<Arc<PauseClock>>,
    /// The server asked for input during this call while no resolver is registered (§4
    /// "Capability"); set by the reader before it files the response, read once after it.
    pub(super) asked_without_resolver: AtomicBool,
}

thread_local! {
    /// This thread's waiter from its last request, reused by the next one when nobody else
    /// holds it any more: a request then allocates no waiter (the per-call path).
    static SPARE: RefCell<Option<Arc<Waiter>>> = const { RefCell::new(None) };
    /// This thread's last request line, whose capacity the next one reuses.
    static REQUEST_TEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs `f` with this thread's request buffer, or a new one while it is in use (a request
/// sent from inside another's send).
fn with_request_buffer<R>(f: impl FnOnce(&mut String) -> R) -> R {
    REQUEST_TEXT.with(|b| match b.try_borrow_mut() {
        Ok(mut text) => {
            let r = f(&mut text);
            // A huge request's buffer is not kept for the thread's life.
            text.shrink_to(64 * 1024);
            r
        }
        Err(_) => f(&mut String::new()),
    })
}

impl Waiter {
    /// A fresh waiter for a request on this thread, with `clock` as its own timer: this
    /// thread's spare when only this thread holds it (the reader that filed its last reply
    /// has let go of it), else a new one.
    fn for_this_thread(clock: Option<Arc<PauseClock>>) -> Arc<Waiter> {
        if let Some(mut w) = SPARE.with(|s| s.borrow_mut().take()) {
            if let Some(m) = Arc::get_mut(&mut w) {
                *m.reply.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
                m.progress
                    .get_mut()
                    .unwrap_or_else(|p| p.into_inner())
                    .clear();
                *m.last_progress.get_mut() = 0;
                m.clock = clock;
                *m.asked_without_resolver.get_mut() = false;
                return w;
            }
        }
        Arc::new(Waiter {
            reply: Mutex::new(None),
            thread: std::thread::current(),
            progress: Mutex::new(Vec::new()),
            last_progress: AtomicU64::new(0),
            clock,
            asked_without_resolver: AtomicBool::new(false),
        })
    }

    /// Keeps this (finished) request's waiter as this thread's spare.
    fn keep_for_this_thread(self: Arc<Self>) {
        SPARE.with(|s| *s.borrow_mut() = Some(self));
    }

    fn complete(&self, r: Reply) {
        *lock(&self.reply) = Some(r);
        self.thread.unpark();
    }
}

pub(super) struct Waiting {
    pub(super) waiters: IdMap<Arc<Waiter>>,
    /// progressToken → the request it belongs to (the current round's).
    pub(super) progress_routes: IdMap<u64>,
    /// Progress of a task's call between its polls (docs/tasks.md): token -> notes held until the
    /// waiting call takes them.
    pub(super) held_progress: IdMap<Vec<String>>,
    /// Set once; every later request fails at once with it.
    pub(super) dead: Option<RequestError>,
}

impl Conn {
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
        let waiter = Waiter::for_this_thread(clock);
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
        // The timeout counts from here: writing the request is part of it (the HTTP direct
        // path writes on this thread, bounded by the same timeout).
        let start = waiter.clock.as_deref().unwrap_or(&self.pause).active();
        // Written into this thread's request buffer (no allocation per request); a transport
        // copies what it keeps.
        let sent = with_request_buffer(|text| {
            rpc::write_request(text, id, method, params_json);
            self.send(&Outgoing {
                text,
                kind: OutKind::Request { id, method },
                routing,
                timeout: Some(limits.idle.min(limits.total)),
            })
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
        let asked = waiter.asked_without_resolver.load(Ordering::Acquire);
        waiter.keep_for_this_thread();
        (reply, asked)
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
        rpc::result_value(&line).map_err(RequestError::Rpc)
    }

    pub(super) fn wait(
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
            // Read every time, the first too: sending may have taken long (a big request
            // written on this thread, the HTTP direct path), and that counts (§7).
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
            // The HTTP direct path reads the reply here, on the caller's thread (docs/http-and-tls.md).
            if self.transport.get().is_some_and(|t| t.drive(id, left)) {
                continue;
            }
            std::thread::park_timeout(left);
        }
    }

    /// A write failed (a dead child's stdin): the reader is about to report why the server went
    /// away (exit status, stderr tail), which says more than `EPIPE`; wait briefly for it, else
    /// fail the connection with the write error, since nothing can reach the server any more.
    pub(super) fn send_failed(&self, method: &str, error: &str) -> RequestError {
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
    pub(super) fn finish(&self, id: u64, w: &Waiter, r: Reply) {
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
}
