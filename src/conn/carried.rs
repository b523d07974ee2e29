//! Responders carried by a request's stream (HTTP: an elicitation that arrived on a call's
//! own stream): a cancel or timeout of that request closes them, their answers sent in order
//! before the `notifications/cancelled` (§7).

use super::{Conn, SEND_IN_ORDER};
use crate::util::lock;

impl Conn {
    /// Remembers that responder `token` answers an elicitation carried by request `carrier`.
    pub(crate) fn carry(&self, carrier: u64, token: crate::responder::Token) {
        lock(&self.carried).entry(carrier).or_default().push(token);
    }

    /// Forgets responder `token` of request `carrier` (it ended).
    pub(crate) fn uncarry(&self, carrier: u64, token: crate::responder::Token) {
        let mut c = lock(&self.carried);
        if let Some(list) = c.get_mut(&carrier) {
            list.retain(|t| *t != token);
            if list.is_empty() {
                c.remove(&carrier);
            }
        }
    }

    /// Answers cancel to the elicitations carried by request `id` that are still open (§7).
    pub(crate) fn close_carried(&self, id: u64) {
        let tokens = lock(&self.carried).remove(&id).unwrap_or_default();
        // Their cancel answers go out before this returns, so before the caller's
        // notifications/cancelled (§7).
        SEND_IN_ORDER.with(|o| o.set(true));
        for t in tokens {
            crate::responder::cancel(t, "the call was cancelled or timed out");
        }
        SEND_IN_ORDER.with(|o| o.set(false));
    }
}
