//! MCP 2026-07-28's `subscriptions/listen` as a connection sees it: which of our listens the
//! server acknowledged (`notifications/subscriptions/acknowledged`, stamped with the listen's
//! request id in `_meta["io.modelcontextprotocol/subscriptionId"]`), how often (a second
//! acknowledgement of one listen: it was opened again after a break), what it honoured of the
//! filter, an error answer that refused it, and which listens were replaced. A live filter
//! cannot be changed, so a new listen replaces the old one; from the moment the new one is
//! acknowledged, what the old one still carries is dropped here, on the reader, so that one
//! change is told once (over stdio both listens share the one channel, in order). Only listens
//! this client opened are recorded: a server that acknowledges other ids grows nothing.

use crate::util::lock;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The `_meta` key every message of a listen carries (its request id).
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

#[derive(Default)]
struct State {
    /// Listens this client opened and has not retired.
    opened: HashSet<u64>,
    /// Acknowledgements seen per listen.
    acks: HashMap<u64, u32>,
    /// The `resourceSubscriptions` each listen's first acknowledgement honoured (None: the
    /// acknowledgement listed none).
    honoured: HashMap<u64, Option<Vec<String>>>,
    /// A listen opened to replace another: once it is acknowledged the other is retired.
    replacing: HashMap<u64, u64>,
    /// Listens replaced: what they still carry is dropped.
    retired: HashSet<u64>,
    /// Listens the server answered with an error before acknowledging them.
    refused: HashMap<u64, String>,
}

/// How waiting for a listen's acknowledgement ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Acked {
    /// Acknowledged, with the `resourceSubscriptions` it honoured (None: it listed none).
    Yes(Option<Vec<String>>),
    /// The server answered the listen with this error.
    Refused(String),
    /// No acknowledgement in time, or the connection ended.
    No,
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
        let mut st = lock(&self.state);
        st.opened.insert(id);
        if let Some(old) = replaces {
            st.replacing.insert(id, old);
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
        if method == "notifications/subscriptions/acknowledged" && st.opened.contains(&id) {
            let n = st.acks.entry(id).or_insert(0);
            *n += 1;
            if *n == 1 {
                let honoured = params
                    .and_then(|p| p.pointer("/notifications/resourceSubscriptions"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    });
                st.honoured.insert(id, honoured);
                if let Some(old) = st.replacing.remove(&id) {
                    st.retire(old);
                }
                self.acked.notify_all();
            }
        }
        true
    }

    /// How often listen `id` was acknowledged (more than once: it was opened again after a
    /// break, and changes may have been missed meanwhile).
    pub(crate) fn acks(&self, id: u64) -> u32 {
        lock(&self.state).acks.get(&id).copied().unwrap_or(0)
    }

    /// A response to `id` that nobody waited for: when `id` is a listen not acknowledged yet
    /// and the line is an error, the listen was refused (`why`).
    pub(crate) fn answered(&self, id: u64, why: impl FnOnce() -> Option<String>) {
        let mut st = lock(&self.state);
        if !st.opened.contains(&id) || st.acks.contains_key(&id) {
            return;
        }
        if let Some(why) = why() {
            st.refused.insert(id, why);
            self.acked.notify_all();
        }
    }

    /// Retires listen `id` now (it was cancelled, refused, or never acknowledged in time).
    pub(crate) fn retire(&self, id: u64) {
        lock(&self.state).retire(id);
    }

    /// Waits at most `within` for listen `id`'s acknowledgement (or its refusal), or until
    /// `give_up` says so (checked every few ms: the connection died, the client is closing).
    pub(crate) fn wait_acked(
        &self,
        id: u64,
        within: Duration,
        give_up: &dyn Fn() -> bool,
    ) -> Acked {
        let deadline = Instant::now() + within;
        let mut st = lock(&self.state);
        loop {
            if st.acks.contains_key(&id) {
                return Acked::Yes(st.honoured.get(&id).cloned().flatten());
            }
            if let Some(why) = st.refused.remove(&id) {
                return Acked::Refused(why);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || give_up() {
                return Acked::No;
            }
            st = self
                .acked
                .wait_timeout(st, left.min(Duration::from_millis(20)))
                .map_or_else(|p| p.into_inner().0, |r| r.0);
        }
    }
}

impl State {
    fn retire(&mut self, id: u64) {
        self.retired.insert(id);
        self.opened.remove(&id);
        self.replacing.remove(&id);
        self.honoured.remove(&id);
        self.refused.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stamped(id: u64) -> Value {
        json!({"_meta": {SUBSCRIPTION_ID: id}})
    }

    fn ack(id: u64, uris: &[&str]) -> Value {
        json!({"_meta": {SUBSCRIPTION_ID: id}, "notifications": {"resourceSubscriptions": uris}})
    }

    const ACK: &str = "notifications/subscriptions/acknowledged";

    #[test]
    fn the_old_listen_is_dropped_from_the_new_ones_acknowledgement_on() {
        let l = Listens::default();
        l.expect(1, None);
        assert!(l.file(ACK, Some(&stamped(1))));
        l.expect(2, Some(1));
        // Before the new one is acknowledged the old one still speaks.
        assert!(l.file("notifications/resources/updated", Some(&stamped(1))));
        assert!(l.file(ACK, Some(&ack(2, &["a://x"]))));
        assert!(!l.file("notifications/resources/updated", Some(&stamped(1))));
        assert!(l.file("notifications/resources/updated", Some(&stamped(2))));
        // Unstamped notifications (the handshake era's) always pass.
        assert!(l.file("notifications/resources/updated", None));
        assert_eq!(
            l.wait_acked(2, Duration::ZERO, &|| false),
            Acked::Yes(Some(vec!["a://x".to_string()]))
        );
        l.expect(3, None);
        assert_eq!(
            l.wait_acked(3, Duration::from_millis(30), &|| false),
            Acked::No
        );
    }

    #[test]
    fn a_second_acknowledgement_is_counted_and_strangers_are_not() {
        let l = Listens::default();
        l.expect(5, None);
        l.file(ACK, Some(&stamped(5)));
        l.file(ACK, Some(&stamped(5)));
        assert_eq!(l.acks(5), 2, "opened again after a break");
        l.file(ACK, Some(&stamped(77)));
        assert_eq!(
            l.acks(77),
            0,
            "a listen this client never opened is not recorded"
        );
    }

    #[test]
    fn an_error_answer_refuses_a_listen_at_once() {
        let l = Listens::default();
        l.expect(9, None);
        l.answered(9, || Some("-32603 too many".into()));
        assert_eq!(
            l.wait_acked(9, Duration::from_secs(30), &|| false),
            Acked::Refused("-32603 too many".into())
        );
        l.answered(10, || Some("not a listen".into()));
        l.expect(10, None);
        assert_eq!(l.wait_acked(10, Duration::ZERO, &|| false), Acked::No);
    }

    #[test]
    fn waiting_gives_up_when_told_to() {
        let l = Listens::default();
        let t0 = Instant::now();
        assert_eq!(
            l.wait_acked(9, Duration::from_secs(30), &|| true),
            Acked::No
        );
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
