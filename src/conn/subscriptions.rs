//! MCP 2026-07-28's `subscriptions/listen` as a connection sees it: which listens the server
//! acknowledged (`notifications/subscriptions/acknowledged`, stamped with the listen's request
//! id in `_meta["io.modelcontextprotocol/subscriptionId"]`), and which were replaced. A live
//! filter cannot be changed, so a new listen replaces the old one; from the moment the new one
//! is acknowledged, what the old one still carries is dropped here, on the reader, so that one
//! change is told once (over stdio both listens share the one channel, in order).

use crate::util::lock;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The `_meta` key every message of a listen carries (its request id).
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

#[derive(Default)]
struct State {
    /// Listens acknowledged so far.
    acked: HashSet<u64>,
    /// A listen opened to replace another: once it is acknowledged the other is retired.
    replacing: HashMap<u64, u64>,
    /// Listens replaced: what they still carry is dropped.
    retired: HashSet<u64>,
}

/// One connection's listens.
#[derive(Default)]
pub(crate) struct Listens {
    state: Mutex<State>,
    acked: Condvar,
}

/// The subscription id a notification's params are stamped with, if any.
pub(crate) fn stamp(params: Option<&Value>) -> Option<u64> {
    params?.get("_meta")?.get(SUBSCRIPTION_ID)?.as_u64()
}

impl Listens {
    /// Listen `id` is being opened; when it is acknowledged, `replaces` (if any) is retired.
    pub(crate) fn expect(&self, id: u64, replaces: Option<u64>) {
        if let Some(old) = replaces {
            lock(&self.state).replacing.insert(id, old);
        }
    }

    /// A notification arrived: notes an acknowledgement; false when it belongs to a retired
    /// listen and is to be dropped.
    pub(crate) fn file(&self, method: &str, params: Option<&Value>) -> bool {
        let Some(id) = stamp(params) else {
            return true;
        };
        let mut st = lock(&self.state);
        if st.retired.contains(&id) {
            return false;
        }
        if method == "notifications/subscriptions/acknowledged" && st.acked.insert(id) {
            if let Some(old) = st.replacing.remove(&id) {
                st.retired.insert(old);
            }
            self.acked.notify_all();
        }
        true
    }

    /// Retires listen `id` now (it was cancelled, or never acknowledged in time).
    pub(crate) fn retire(&self, id: u64) {
        let mut st = lock(&self.state);
        st.retired.insert(id);
        st.replacing.remove(&id);
    }

    /// Waits at most `within` for listen `id`'s acknowledgement, or until `give_up` says so
    /// (checked every few ms: the connection died, the client is closing).
    pub(crate) fn wait_acked(&self, id: u64, within: Duration, give_up: &dyn Fn() -> bool) -> bool {
        let deadline = Instant::now() + within;
        let mut st = lock(&self.state);
        loop {
            if st.acked.contains(&id) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || give_up() {
                return false;
            }
            st = self
                .acked
                .wait_timeout(st, left.min(Duration::from_millis(20)))
                .map_or_else(|p| p.into_inner().0, |r| r.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stamped(id: u64) -> Value {
        json!({"_meta": {SUBSCRIPTION_ID: id}})
    }

    #[test]
    fn the_old_listen_is_dropped_from_the_new_ones_acknowledgement_on() {
        let l = Listens::default();
        assert!(l.file(
            "notifications/subscriptions/acknowledged",
            Some(&stamped(1))
        ));
        l.expect(2, Some(1));
        // Before the new one is acknowledged the old one still speaks.
        assert!(l.file("notifications/resources/updated", Some(&stamped(1))));
        assert!(l.file(
            "notifications/subscriptions/acknowledged",
            Some(&stamped(2))
        ));
        assert!(!l.file("notifications/resources/updated", Some(&stamped(1))));
        assert!(l.file("notifications/resources/updated", Some(&stamped(2))));
        // Unstamped notifications (the handshake era's) always pass.
        assert!(l.file("notifications/resources/updated", None));
        assert!(l.wait_acked(2, Duration::ZERO, &|| false));
        assert!(!l.wait_acked(3, Duration::from_millis(30), &|| false));
    }

    #[test]
    fn waiting_gives_up_when_told_to() {
        let l = Listens::default();
        let t0 = Instant::now();
        assert!(!l.wait_acked(9, Duration::from_secs(30), &|| true));
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
