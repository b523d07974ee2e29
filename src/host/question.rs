//! One question of an MRTR round or a -32042 error (contract §6), asked from the call's own
//! thread: no reader is blocked.

use super::Host;
use crate::conn::Conn;
use crate::mapping::elicitation;
use crate::responder::{self, ResolverReturn};
use crate::util::lock;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// One question of an MRTR round or a -32042 error, asked from the call's own thread (§6; no
/// reader is blocked): the responder, and where its outcome lands.
pub(crate) struct Question {
    pub(crate) token: responder::Token,
    slot: Arc<Slot>,
}

/// Where a [`Question`]'s outcome lands: the ElicitResult and why it is a cancel, if it is.
type Slot = (
    Mutex<Option<(elicitation::ElicitResult, Option<String>)>>,
    std::sync::Condvar,
);

/// The reason a suspended question's responder closes with (not an elicitation error).
const SUSPENDED: &str = "suspended (TN_SUSPEND)";

/// What the resolver did with a [`Question`].
#[derive(PartialEq, Eq, Debug)]
pub(crate) enum Asked {
    /// Answered, or will be (deferred): [`Question::wait`] gives the outcome.
    Open,
    /// `TN_SUSPEND` with no answer given: the responder is closed.
    Suspended,
}

impl Question {
    /// Opens a responder for a question, bounded by `elicitationTimeout`; [`Question::ask`]
    /// then hands it to the resolver (a cancel can close it in between, §7). `url_mode` and
    /// `schema` shape the answer as §4 says (SEP-1034).
    pub(crate) fn open(
        conn: &Arc<Conn>,
        b: &Host,
        request: &elicitation::Request,
        url_mode: bool,
        schema: Option<Value>,
    ) -> Question {
        let slot: Arc<Slot> = Arc::default();
        let s = slot.clone();
        let c = conn.clone();
        let timer_key: Arc<Mutex<Option<crate::util::timer::Key>>> = Arc::new(Mutex::new(None));
        let tk = timer_key.clone();
        let token = responder::open(b.owner, request.id.clone(), move |finish| {
            if let Some(k) = lock(&tk).take() {
                crate::util::timer::cancel(k);
            }
            let (result, why) =
                crate::host::defaults::live_result(finish, url_mode, schema.as_ref());
            if let Some(why) = why.as_ref().filter(|w| !w.starts_with(SUSPENDED)) {
                c.set_elicitation_error(why);
            }
            *lock(&s.0) = Some((result, why));
            s.1.notify_all();
        });
        let key = crate::util::timer::schedule(b.elicitation_timeout, move || {
            responder::cancel(token, "no answer within elicitationTimeout");
        });
        *lock(&timer_key) = Some(key);
        if !responder::is_open(token) {
            crate::util::timer::cancel(key);
        }
        Question { token, slot }
    }

    /// Hands the question to the resolver, on this (the call's) thread, marked as a callback
    /// of its client so that `tn_disconnect` from inside it is refused, not a deadlock.
    pub(crate) fn ask(&self, conn: &Conn, b: &Host, request: &elicitation::Request) -> Asked {
        let token = self.token;
        if conn.is_dead() {
            responder::cancel(token, "the client was disconnected");
            return Asked::Open;
        }
        if !responder::is_open(token) {
            return Asked::Open; // closed already (the call was cancelled)
        }
        b.active.fetch_add(1, Ordering::SeqCst);
        let rc = super::as_callback(b.owner, None, || b.resolver.call(&request.json, token));
        b.active.fetch_sub(1, Ordering::SeqCst);
        match rc {
            ResolverReturn::Resolved => {
                responder::cancel(token, "the resolver returned TN_RESOLVED without answering");
                Asked::Open
            }
            ResolverReturn::Deferred => Asked::Open,
            ResolverReturn::Suspend => {
                // An answer given before TN_SUSPEND stands; otherwise the responder closes.
                if responder::cancel(token, SUSPENDED) {
                    Asked::Suspended
                } else {
                    Asked::Open
                }
            }
            ResolverReturn::Failed(code) => {
                responder::cancel(token, format!("the resolver failed (returned {code})"));
                Asked::Open
            }
        }
    }

    /// The outcome as the ElicitResult to send (§4), once the responder has ended.
    pub(crate) fn wait(&self) -> elicitation::ElicitResult {
        let mut g = lock(&self.slot.0);
        loop {
            if let Some((result, _)) = g.take() {
                return result;
            }
            g = self.slot.1.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Ends the question with cancel when it is still open (a cancelled call, a suspended round).
    pub(crate) fn close(&self, why: &str) {
        responder::cancel(self.token, why.to_string());
    }
}
