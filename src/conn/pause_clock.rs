//! The call timer's clock (contract §4 "Which timer pauses"): time that stops while the host is
//! being asked, since a person may take minutes to answer and that must not time a call out.

use crate::util::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Call-timer time that stops while an elicitation is outstanding (§4 "Which timer pauses"):
/// the active time is wall time minus paused time. Writers serialise on a mutex; readers are
/// lock-free and can only under-count (a timeout then fires late and is re-checked).
pub(crate) struct PauseClock {
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
    pub(crate) fn active(&self) -> Duration {
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

    /// Whether an elicitation is outstanding (the clock stands still).
    pub(crate) fn is_paused(&self) -> bool {
        self.since.load(Ordering::SeqCst) != 0
    }

    pub(crate) fn begin(&self) {
        let mut n = lock(&self.outstanding);
        if *n == 0 {
            self.since.store(self.nanos(), Ordering::SeqCst);
        }
        *n += 1;
    }

    pub(crate) fn end(&self) {
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
