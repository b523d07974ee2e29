//! `notifications/progress` routed to the request whose token it names (§7): it restarts that
//! request's idle timeout and goes to its sink, or is held while a call's progress is held
//! (a task's wait) and handed over later.

use super::{Conn, PauseClock};
use crate::util::lock;
use serde_json::Value;
use std::sync::atomic::Ordering;

impl Conn {
    /// A `notifications/progress`: to the request its token belongs to, restarting its idle
    /// timeout (§7); an unknown token is ignored.
    pub(super) fn on_progress(&self, params: Option<Value>) {
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
    /// polls), until [`Conn::release_progress`].
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
