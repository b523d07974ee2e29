//! Calls the host controls (contract §7): asynchronous calls, each run by a library thread of
//! the client's pool (never a reader, never an HTTP runtime worker) that also runs the call's
//! callbacks, so one call's progress and done are serialised and in order; cancel; and
//! disconnect ending every call in flight with its `done` fired.

use crate::session::CallState;
use crate::util::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// An idle pool thread leaves after this long without work.
const IDLE_EXIT: Duration = Duration::from_secs(2);

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
