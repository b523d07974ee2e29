//! The live elicitation bridge (contract §4): a server request arriving on a connection is
//! answered here. `elicitation/create` goes to the host's resolver, inline on the reader thread
//! with the concerned call timers paused; `ping` and anything else get the pure mapping's reply
//! ([`crate::bridge::route`]). The pure functions stay byte-identical to the vectors; this adds
//! SEP-1034 defaults and checks, the answer's timeout, and re-entrancy detection.

use crate::bridge::{self, Route};
use crate::clock::PauseClock;
use crate::conn::Conn;
use crate::responder::{self, Resolver, ResolverReturn};
use crate::util::lock;
use serde_json::{Map, Value};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The last line of a call's output, and the status's `lastElicitationError`, when the server
/// asked for input while no resolver is registered (§4 "Capability").
pub(crate) const ASKED_WITHOUT_RESOLVER: &str =
    "the server asked for input; no resolver is registered";

thread_local! {
    /// The connection whose inline resolver this thread is running (its address), or 0.
    static IN_RESOLVER: Cell<usize> = const { Cell::new(0) };
}

/// The host's resolver and its bounds, when one is registered.
#[derive(Clone)]
pub(crate) struct LiveBridge {
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) elicitation_timeout: Duration,
    /// Owner key for responders of this client (disconnect cancels them all).
    pub(crate) owner: u64,
    /// Calls into the host's resolver in progress, across the client's connections:
    /// disconnect waits (bounded) for none to be left.
    pub(crate) active: Arc<AtomicUsize>,
}

/// Whether this thread is inside `conn`'s inline resolver (the re-entrancy guard, §4).
pub(crate) fn in_own_resolver(conn: &Conn) -> bool {
    IN_RESOLVER.with(Cell::get) == conn as *const Conn as usize
}

/// Answers one server request (`id` and a string `method`, classified by the reader), which
/// arrived on the stream of request `carrier` when the transport knows one (HTTP).
pub(crate) fn on_request(
    conn: &Arc<Conn>,
    id: Value,
    method: &str,
    params: Option<Value>,
    carrier: Option<u64>,
) {
    let live = conn.live();
    match bridge::route(&id, method, params.as_ref(), live.is_some()) {
        Route::Reply(frame) => {
            if live.is_none() && method == "elicitation/create" {
                // Before the -32601 goes out: the server's reaction (and the response) can
                // only come after it.
                conn.set_elicitation_error(ASKED_WITHOUT_RESOLVER);
                conn.flag_asked_without_resolver(carrier);
            }
            let _ = conn.send_response(&crate::json::to_text(&frame));
        }
        Route::Elicit(_) => {
            let Some(b) = live else { return };
            let params = match params {
                Some(Value::Object(m)) => m,
                _ => Map::new(),
            };
            // Counted before the check, so that disconnect (which marks the connection dead,
            // then waits for this count) either stops this call here or waits for it.
            b.active.fetch_add(1, Ordering::SeqCst);
            elicit(conn, b, id, params, carrier);
            b.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// One `elicitation/create` (§4): the host's resolver runs inline on this (reader) thread with
/// the concerned timers paused; the answer, a timeout, a failure or disconnect ends the
/// responder, which writes the reply.
fn elicit(
    conn: &Arc<Conn>,
    b: &LiveBridge,
    id: Value,
    params: Map<String, Value>,
    carrier: Option<u64>,
) {
    if conn.is_dead() {
        // Closing (or failed): the host is not asked any more.
        let _ = conn.send_response(&bridge::ElicitResult::Cancel.frame_text(&id));
        return;
    }
    let request = bridge::elicitation_to_request(&params);
    let url_mode = bridge::is_url_mode(&params);
    let schema = params.get("requestedSchema").is_some().then(|| {
        let mut params = params;
        params.swap_remove("requestedSchema").unwrap_or_default()
    });
    let clock: Arc<PauseClock> = conn.clock_for(carrier);
    clock.begin();
    let timer_key: Arc<Mutex<Option<crate::util::timer::Key>>> = Arc::new(Mutex::new(None));
    let c = conn.clone();
    let tk = timer_key.clone();
    let own_token: Arc<std::sync::OnceLock<responder::Token>> = Arc::default();
    let ot = own_token.clone();
    let token = responder::open(b.owner, request.id, move |finish| {
        if let Some(k) = lock(&tk).take() {
            crate::util::timer::cancel(k);
        }
        if let (Some(carrier), Some(t)) = (carrier, ot.get()) {
            c.uncarry(carrier, *t);
        }
        let (result, why) = crate::sep1034::live_result(finish, url_mode, schema.as_ref());
        if let Some(why) = why {
            c.set_elicitation_error(&why);
        }
        let _ = c.send_response(&result.frame_text(&id));
        clock.end();
    });
    let key = crate::util::timer::schedule(b.elicitation_timeout, move || {
        // Off the shared timer thread: sending the cancel may wait on a slow server.
        let cancel = move || {
            responder::cancel(token, "no answer within elicitationTimeout");
        };
        if crate::util::spawn("tn-elicit-timeout", cancel).is_err() {
            responder::cancel(token, "no answer within elicitationTimeout");
        }
    });
    *lock(&timer_key) = Some(key);
    if let Some(carrier) = carrier {
        let _ = own_token.set(token);
        conn.carry(carrier, token);
    }
    if !responder::is_open(token) {
        // Already ended (cannot normally happen before the resolver runs): drop the timer and
        // the carried entry its finisher may have missed.
        crate::util::timer::cancel(key);
        if let Some(carrier) = carrier {
            conn.uncarry(carrier, token);
        }
    }
    if conn.is_dead() {
        // Disconnect began after the first check and may already have cancelled this
        // client's responders: this one too, and the host is not called.
        responder::cancel(token, "the client was disconnected");
        return;
    }
    let previous = IN_RESOLVER.with(|c| c.replace(Arc::as_ptr(conn) as usize));
    let rc = b.resolver.call(&request.json, token);
    IN_RESOLVER.with(|c| c.set(previous));
    match rc {
        ResolverReturn::Resolved => {
            responder::cancel(token, "the resolver returned TN_RESOLVED without answering");
        }
        ResolverReturn::Deferred => {}
        ResolverReturn::Suspend => {
            // A legacy elicitation/create holds the call open: it cannot be suspended (§6).
            responder::cancel(
                token,
                "TN_SUSPEND is cancel for an elicitation/create request",
            );
        }
        ResolverReturn::Failed(code) => {
            responder::cancel(token, format!("the resolver failed (returned {code})"));
        }
    }
}

/// One question of an MRTR round or a -32042 error, asked from the call's own thread (§6; no
/// reader is blocked): the responder, and where its outcome lands.
pub(crate) struct Question {
    pub(crate) token: responder::Token,
    slot: Arc<Slot>,
}

/// Where a [`Question`]'s outcome lands: the ElicitResult and why it is a cancel, if it is.
type Slot = (
    Mutex<Option<(bridge::ElicitResult, Option<String>)>>,
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
        b: &LiveBridge,
        request: &bridge::Request,
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
            let (result, why) = crate::sep1034::live_result(finish, url_mode, schema.as_ref());
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
    pub(crate) fn ask(&self, conn: &Conn, b: &LiveBridge, request: &bridge::Request) -> Asked {
        let token = self.token;
        if conn.is_dead() {
            responder::cancel(token, "the client was disconnected");
            return Asked::Open;
        }
        if !responder::is_open(token) {
            return Asked::Open; // closed already (the call was cancelled)
        }
        b.active.fetch_add(1, Ordering::SeqCst);
        let rc = crate::calls::as_callback(b.owner, || b.resolver.call(&request.json, token));
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
    pub(crate) fn wait(&self) -> bridge::ElicitResult {
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
