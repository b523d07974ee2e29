//! Calls the host controls (contract §7): asynchronous calls, each run by a library thread of
//! the client's pool (never a reader, never an HTTP runtime worker) that also runs the call's
//! callbacks, so one call's progress and done are serialised and in order; cancel; and
//! disconnect ending every call in flight with its `done` fired.

use crate::conn::Conn;
use crate::util::lock;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// An idle pool thread leaves after this long without work.
const IDLE_EXIT: Duration = Duration::from_secs(2);

const RUNNING: u8 = 0;
const DECIDED: u8 = 1;
const CANCELLED: u8 = 2;

thread_local! {
    /// The client whose callback this thread is running (its id), or 0: `tn_disconnect` from
    /// there would wait for itself.
    static IN_CALLBACK: Cell<u64> = const { Cell::new(0) };
}

/// Whether this thread is inside a callback of client `client`.
pub(crate) fn in_callback_of(client: u64) -> bool {
    IN_CALLBACK.with(Cell::get) == client
}

/// Runs `f` marked as a callback of `client` (the mark is restored even if `f` unwinds).
pub(crate) fn as_callback<T>(client: u64, f: impl FnOnce() -> T) -> T {
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = IN_CALLBACK.try_with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(IN_CALLBACK.with(|c| c.replace(client)));
    f()
}

/// One call the host may cancel: who ends it first, the answer or the cancel (§7).
#[derive(Default)]
pub(crate) struct CallState {
    phase: AtomicU8,
    /// The JSON-RPC id of the request in flight (0: none yet).
    request: AtomicU64,
    conn: Mutex<Option<Arc<Conn>>>,
    /// The open questions of the current MRTR / -32042 round: a cancel closes them (§7).
    questions: Mutex<Vec<crate::responder::Token>>,
}

impl CallState {
    /// The request `id` went out on `conn`: a cancel that came before it ends it now.
    pub(crate) fn started(&self, conn: &Arc<Conn>, id: u64) {
        *lock(&self.conn) = Some(conn.clone());
        self.request.store(id, Ordering::SeqCst);
        if self.phase.load(Ordering::SeqCst) == CANCELLED {
            conn.cancel_request(id);
        }
    }

    /// Whether a cancel ended the call.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.phase.load(Ordering::SeqCst) == CANCELLED
    }

    /// A question of the current round is open (a cancel closes it).
    pub(crate) fn add_question(&self, token: crate::responder::Token) {
        lock(&self.questions).push(token);
        if self.is_cancelled() {
            crate::responder::cancel(token, "the call was cancelled");
        }
    }

    /// The round's questions are answered.
    pub(crate) fn clear_questions(&self) {
        lock(&self.questions).clear();
    }

    /// The request in flight, or the last one.
    pub(crate) fn request_id(&self) -> u64 {
        self.request.load(Ordering::SeqCst)
    }

    /// The call has its outcome: true when that outcome stands, false when a cancel came first.
    pub(crate) fn decide(&self) -> bool {
        self.phase
            .compare_exchange(RUNNING, DECIDED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            || self.phase.load(Ordering::SeqCst) == DECIDED
    }

    /// Cancels the call; true when this is what ends it (§7: `tn_call_cancel` is `TN_OK` only
    /// then).
    fn cancel(&self) -> bool {
        if self
            .phase
            .compare_exchange(RUNNING, CANCELLED, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return false;
        }
        let id = self.request.load(Ordering::SeqCst);
        let conn = lock(&self.conn).clone();
        if let (true, Some(conn)) = (id != 0, conn) {
            conn.cancel_request(id);
        }
        for t in std::mem::take(&mut *lock(&self.questions)) {
            crate::responder::cancel(t, "the call was cancelled");
        }
        true
    }
}

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct PoolState {
    queue: VecDeque<Job>,
    idle: usize,
    closing: bool,
}

/// The client's asynchronous calls: ids, the calls in flight, and the threads that run them.
#[derive(Default)]
pub(crate) struct Calls {
    next_id: AtomicU64,
    inflight: Mutex<HashMap<u64, Arc<CallState>>>,
    /// Signalled when a call leaves `inflight`.
    left: Condvar,
    pool: Arc<(Mutex<PoolState>, Condvar)>,
    closing: AtomicBool,
}

impl Calls {
    /// Registers a new call and returns its id (from 1, below 2^53, never reused, §7); None
    /// once disconnect began (checked under the same lock that disconnect drains with, so a
    /// call either is drained or was refused).
    pub(crate) fn register(&self) -> Option<(u64, Arc<CallState>)> {
        let mut inflight = lock(&self.inflight);
        if self.closing.load(Ordering::Acquire) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let state = Arc::new(CallState::default());
        inflight.insert(id, state.clone());
        Some((id, state))
    }

    /// The call `id` finished (its `done` has returned).
    pub(crate) fn finished(&self, id: u64) {
        lock(&self.inflight).remove(&id);
        self.left.notify_all();
    }

    /// Cancels call `id`; false when it is unknown or already decided.
    pub(crate) fn cancel(&self, id: u64) -> bool {
        let state = lock(&self.inflight).get(&id).cloned();
        state.is_some_and(|s| s.cancel())
    }

    /// Runs `job` on a pool thread: an idle one when there are enough for the queue, else a
    /// new thread that starts with this job (so a failed start leaves nothing queued).
    pub(crate) fn spawn(&self, job: Job) -> std::io::Result<()> {
        let (m, cv) = &*self.pool;
        let mut st = lock(m);
        // `idle` counts waiting workers, kept by the workers themselves: each takes jobs from
        // the queue until it is empty, so the queue needs no more workers than it has jobs.
        if st.idle > st.queue.len() {
            st.queue.push_back(job);
            cv.notify_one();
            return Ok(());
        }
        drop(st);
        let pool = self.pool.clone();
        crate::util::spawn("tn-call", move || worker(&pool, Some(job))).map(drop)
    }

    /// Disconnect: refuse new calls, then wait until every call in flight has fired its done.
    /// The connections were failed before, so no call waits on a server any more.
    pub(crate) fn close_and_drain(&self) {
        let mut inflight = lock(&self.inflight);
        self.closing.store(true, Ordering::Release);
        while !inflight.is_empty() {
            inflight = self
                .left
                .wait_timeout(inflight, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        drop(inflight);
        let (m, cv) = &*self.pool;
        lock(m).closing = true;
        cv.notify_all();
    }
}

fn worker(pool: &(Mutex<PoolState>, Condvar), first: Option<Job>) {
    let (m, cv) = pool;
    let run = |job: Job| {
        // A job fires its own done even when it panics (a guard in it); here a panic only
        // must not take the pool down.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    };
    if let Some(job) = first {
        run(job);
    }
    let mut st = lock(m);
    loop {
        if let Some(job) = st.queue.pop_front() {
            drop(st);
            run(job);
            st = lock(m);
            continue;
        }
        if st.closing {
            return;
        }
        st.idle += 1;
        let (g, timeout) = cv
            .wait_timeout(st, IDLE_EXIT)
            .unwrap_or_else(|p| p.into_inner());
        st = g;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() {
            return;
        }
    }
}
