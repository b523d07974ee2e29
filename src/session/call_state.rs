//! One call the host may cancel (contract §7): who ends it first, the answer or the cancel, and
//! what a cancel closes (the request in flight, the open questions of its round).

use crate::conn::Conn;
use crate::util::lock;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

const RUNNING: u8 = 0;
const DECIDED: u8 = 1;
const CANCELLED: u8 = 2;

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
    pub(crate) fn cancel(&self) -> bool {
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
