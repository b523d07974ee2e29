//! One process-wide timer thread for deadlines that must fire while every other thread may be
//! blocked (an `elicitationTimeout` fires even while an inline resolver holds the reader).
//! Scheduling wakes the thread only when the new deadline is earlier than its current sleep.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send>;

/// Identifies a scheduled job, for [`cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key(Instant, u64);

struct State {
    jobs: BTreeMap<Key, Job>,
    seq: u64,
    /// When the thread will wake next on its own (None: it waits for a notify).
    sleeping_until: Option<Instant>,
    started: bool,
}

struct Timer {
    state: Mutex<State>,
    wake: Condvar,
}

fn timer() -> &'static Timer {
    static T: OnceLock<Timer> = OnceLock::new();
    T.get_or_init(|| Timer {
        state: Mutex::new(State {
            jobs: BTreeMap::new(),
            seq: 0,
            sleeping_until: None,
            started: false,
        }),
        wake: Condvar::new(),
    })
}

fn lock(t: &Timer) -> std::sync::MutexGuard<'_, State> {
    t.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `job` on the timer thread after `delay`, unless cancelled first.
pub fn schedule(delay: Duration, job: impl FnOnce() + Send + 'static) -> Key {
    let t = timer();
    let at = Instant::now()
        .checked_add(delay)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
    let mut st = lock(t);
    st.seq += 1;
    let key = Key(at, st.seq);
    st.jobs.insert(key, Box::new(job));
    if !st.started {
        st.started = true;
        let spawned = super::spawn_sized("toolnexus-timer", Some(256 * 1024), run);
        if spawned.is_err() {
            st.started = false;
        }
    }
    if st.sleeping_until.is_none_or(|s| at < s) {
        t.wake.notify_one();
    }
    key
}

/// Drops a scheduled job; a no-op when it already ran.
pub fn cancel(key: Key) {
    lock(timer()).jobs.remove(&key);
}

fn run() {
    let t = timer();
    let mut st = lock(t);
    loop {
        let now = Instant::now();
        let due: Vec<Key> = st
            .jobs
            .range(..Key(now, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        if !due.is_empty() {
            let jobs: Vec<Job> = due.iter().filter_map(|k| st.jobs.remove(k)).collect();
            drop(st);
            for j in jobs {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(j));
            }
            st = lock(t);
            continue;
        }
        match st.jobs.keys().next().map(|k| k.0) {
            Some(next) => {
                st.sleeping_until = Some(next);
                st = t
                    .wake
                    .wait_timeout(st, next.saturating_duration_since(now))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            None => {
                // Keep `sleeping_until` as it was only when a deadline is pending; idle waits
                // must be woken by the next schedule.
                st.sleeping_until = None;
                st = t.wake.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn fires_and_cancels() {
        let (tx, rx) = mpsc::channel();
        let tx2 = tx.clone();
        let k = schedule(Duration::from_millis(10), move || tx2.send(1).unwrap());
        cancel(k);
        schedule(Duration::from_millis(20), move || tx.send(2).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 2);
    }
}
