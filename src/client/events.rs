//! The host's event callback (docs/live-servers.md): one per client, handed JSON events (a server's status
//! changed, its tool list changed, its log messages) in the order they happened, one at a
//! time, on the client's own event thread. Whoever emits (a reader thread among them) never
//! waits for the host: the queue is bounded, and an event that finds it full is dropped and
//! counted for its server (`droppedEvents` in the status).

use crate::util::lock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// Events waiting for the host at most; past it they are dropped and counted.
pub(crate) const EVENT_QUEUE: usize = 1024;

/// What the host registered: called with one event's JSON text, borrowed for the call.
pub type EventCallback = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Default)]
struct State {
    queue: VecDeque<(usize, String)>,
    callback: Option<EventCallback>,
    /// Counts registrations: the callback being run belongs to one of them.
    generation: u64,
    /// The registration whose callback is running now, if one is.
    running: Option<u64>,
    thread: Option<JoinHandle<()>>,
    thread_id: Option<ThreadId>,
    closed: bool,
}

/// One client's events: the queue, the callback and the thread that runs it.
pub(crate) struct Events {
    client: u64,
    state: Mutex<State>,
    wake: Condvar,
    /// Per server (in name order): events dropped because the queue was full.
    dropped: Vec<AtomicU64>,
}

impl Events {
    pub(crate) fn new(client: u64, servers: usize) -> Arc<Events> {
        Arc::new(Events {
            client,
            state: Mutex::default(),
            wake: Condvar::new(),
            dropped: (0..servers).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Whether a callback is registered (events are built only then).
    pub(crate) fn wanted(&self) -> bool {
        lock(&self.state).callback.is_some()
    }

    /// Queues an event of server `server` for the host; never waits. Nothing is kept while no
    /// callback is registered: the statuses say where things stand.
    pub(crate) fn emit(&self, server: usize, event: String) {
        let mut st = lock(&self.state);
        if st.closed || st.callback.is_none() {
            return;
        }
        if st.queue.len() >= EVENT_QUEUE {
            drop(st);
            if let Some(d) = self.dropped.get(server) {
                d.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        st.queue.push_back((server, event));
        self.wake.notify_all();
    }

    /// Events of server `server` dropped so far.
    pub(crate) fn dropped(&self, server: usize) -> u64 {
        self.dropped
            .get(server)
            .map_or(0, |d| d.load(Ordering::Relaxed))
    }

    /// Registers `callback` (None: none), replacing the one before. Once this returns, the
    /// callback it replaced is not running and is never called again, unless this is called
    /// from inside that callback (then it only will not be called again). Events queued for
    /// the one before go to the new one; with none they are dropped.
    pub(crate) fn set(self: &Arc<Self>, callback: Option<EventCallback>) -> Result<(), String> {
        let mut st = lock(&self.state);
        if st.closed {
            return Err("the client is disconnected".into());
        }
        st.generation += 1;
        let generation = st.generation;
        let on = callback.is_some();
        st.callback = callback;
        if !on {
            st.queue.clear();
        }
        self.wake.notify_all();
        let inside = st.thread_id == Some(std::thread::current().id());
        // No thread runs the queue once `thread_id` is None (set under this lock as it leaves).
        if on && st.thread_id.is_none() {
            if let Some(old) = st.thread.take() {
                let _ = old.join(); // past its last use of the lock: immediate
            }
            let me = self.clone();
            let t = crate::util::spawn(format!("tn-events-{}", self.client), move || me.run())
                .map_err(|e| format!("cannot start the event thread: {e}"))?;
            st.thread_id = Some(t.thread().id());
            st.thread = Some(t);
        }
        if !inside {
            while st.running.is_some_and(|g| g < generation) {
                st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        }
        Ok(())
    }

    /// The event thread: each queued event to the callback, in order; it leaves when the
    /// callback is removed or the client closes.
    fn run(self: Arc<Self>) {
        let mut st = lock(&self.state);
        loop {
            if st.closed || st.callback.is_none() {
                break;
            }
            let Some((_, event)) = st.queue.pop_front() else {
                st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            };
            let Some(callback) = st.callback.clone() else {
                break;
            };
            st.running = Some(st.generation);
            drop(st);
            // A panic in a Rust callback (the CLI's, a binding's) ends this event, not the
            // thread; the C ABI's adapter cannot unwind.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::host::as_callback(self.client, None, || callback(&event))
            }));
            st = lock(&self.state);
            st.running = None;
            self.wake.notify_all();
        }
        st.thread_id = None;
        drop(st);
        self.wake.notify_all();
    }

    /// Disconnect (§3): no more events; waits, at most `within`, for a callback still running
    /// (from inside one it cannot: the thread is then left to end on its own).
    pub(crate) fn close(&self, within: Duration) {
        let thread = {
            let mut st = lock(&self.state);
            st.closed = true;
            st.callback = None;
            st.queue.clear();
            self.wake.notify_all();
            if st.thread_id == Some(std::thread::current().id()) {
                return;
            }
            st.thread.take()
        };
        let Some(t) = thread else { return };
        let deadline = Instant::now() + within;
        while !t.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        if t.is_finished() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn events_arrive_in_order_and_a_full_queue_drops_and_counts() {
        let ev = Events::new(7, 2);
        ev.emit(0, "before".into()); // no callback: not kept
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (s, g) = (seen.clone(), gate.clone());
        ev.set(Some(Arc::new(move |e: &str| {
            let mut open = lock(&g.0);
            while !*open {
                open = g.1.wait(open).unwrap();
            }
            lock(&s).push(e.to_string());
        })))
        .unwrap();
        for i in 0..EVENT_QUEUE + 10 {
            ev.emit(1, format!("e{i}"));
        }
        // The first may already be in the callback, so 9 or 10 found the queue full.
        let dropped = ev.dropped(1);
        assert!((9..=10).contains(&dropped), "{dropped}");
        *lock(&gate.0) = true;
        gate.1.notify_all();
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock(&seen).len() < EVENT_QUEUE + 10 - dropped as usize && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let seen = lock(&seen).clone();
        assert_eq!(seen.len(), EVENT_QUEUE + 10 - dropped as usize);
        assert_eq!(seen[0], "e0");
        assert!(seen.windows(2).all(|w| {
            let n = |s: &str| s[1..].parse::<usize>().unwrap();
            n(&w[0]) < n(&w[1])
        }));
        ev.close(Duration::from_secs(2));
        ev.emit(0, "after".into());
        assert_eq!(ev.dropped(0), 0);
    }

    #[test]
    fn replacing_waits_for_the_old_callback_and_none_stops_the_thread() {
        let ev = Events::new(8, 1);
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        ev.set(Some(Arc::new(move |_: &str| {
            std::thread::sleep(Duration::from_millis(100));
            c.fetch_add(1, Ordering::SeqCst);
        })))
        .unwrap();
        ev.emit(0, "x".into());
        std::thread::sleep(Duration::from_millis(20));
        ev.set(None).unwrap();
        // The running call finished before `set` returned, and nothing runs after it.
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        ev.emit(0, "y".into());
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        ev.close(Duration::from_secs(1));
        assert!(ev.set(None).is_err());
    }
}
