//! A server's own requests on a live connection (contract §4): `elicitation/create` goes to
//! the host's resolver, inline on the reader thread with the concerned call timers paused;
//! `ping` and anything else get the pure mapping's reply ([`crate::mapping::elicitation::route`]). The pure
//! functions stay byte-identical to the vectors; this adds SEP-1034 defaults and checks, the
//! answer's timeout, and the re-entrancy mark.

use super::Host;
use crate::conn::{Conn, PauseClock};
use crate::mapping::elicitation::{self, Route};
use crate::responder::{self, ResolverReturn};
use crate::util::lock;
use serde_json::{Map, Value};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The last line of a call's output, and the status's `lastElicitationError`, when the server
/// asked for input while no resolver is registered (§4 "Capability").
pub(crate) const ASKED_WITHOUT_RESOLVER: &str =
    "the server asked for input; no resolver is registered";

/// Answers a connection's server requests with the host's resolver, when one is registered.
pub(crate) struct Answering {
    pub(crate) live: Option<Host>,
}

impl crate::conn::ServerRequests for Answering {
    fn on_request(
        &self,
        conn: &Arc<Conn>,
        id: Value,
        method: &str,
        params: Option<Value>,
        carrier: Option<u64>,
    ) {
        on_request(conn, self.live.as_ref(), id, method, params, carrier);
    }
}

/// Answers one server request (`id` and a string `method`, classified by the reader), which
/// arrived on the stream of request `carrier` when the transport knows one (HTTP).
fn on_request(
    conn: &Arc<Conn>,
    live: Option<&Host>,
    id: Value,
    method: &str,
    params: Option<Value>,
    carrier: Option<u64>,
) {
    match elicitation::route(&id, method, params.as_ref(), live.is_some()) {
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
fn elicit(conn: &Arc<Conn>, b: &Host, id: Value, params: Map<String, Value>, carrier: Option<u64>) {
    if conn.is_dead() {
        // Closing (or failed): the host is not asked any more.
        let _ = conn.send_response(&elicitation::ElicitResult::Cancel.frame_text(&id));
        return;
    }
    let request = elicitation::elicitation_to_request(&params);
    let url_mode = elicitation::is_url_mode(&params);
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
        let (result, why) = crate::host::defaults::live_result(finish, url_mode, schema.as_ref());
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
    let rc = super::as_callback(b.owner, Some(Arc::as_ptr(conn) as usize), || {
        b.resolver.call(&request.json, token)
    });
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
