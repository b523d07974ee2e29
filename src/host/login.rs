//! The host's side of a login (contract §8): the browser step's Request goes to the host's
//! resolver on a thread of its own (it may block: open a browser, wait for a person; the HTTP
//! runtime's workers must not), and the asking request's timer pauses meanwhile. This is what
//! auth knows as [`crate::auth::LoginHost`].

use super::Host;
use crate::conn::{Conn, PauseClock};
use crate::responder::{self, Finish, ResolverReturn, Token};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A server's login desk: its connection (for the paused timer) and the host's resolver.
pub(crate) struct LoginDesk {
    pub(crate) conn: Weak<Conn>,
    pub(crate) live: Option<Host>,
}

/// Runs the paused timer on when dropped.
struct Unpause(Option<Arc<PauseClock>>);

impl Drop for Unpause {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.end();
        }
    }
}

impl crate::auth::LoginHost for LoginDesk {
    fn ask(
        &self,
        id: String,
        request_json: String,
        done: Box<dyn FnOnce(Finish) + Send>,
    ) -> Option<Token> {
        let b = self.live.as_ref()?;
        let token = responder::open(b.owner, id, done);
        let resolver = b.resolver.clone();
        let active = b.active.clone();
        let owner = b.owner;
        active.fetch_add(1, Ordering::SeqCst);
        let spawned = crate::util::spawn("tn-auth-login", move || {
            // A callback of its client: tn_disconnect from inside it is refused (c-api.md).
            let rc = super::as_callback(owner, None, || resolver.call(&request_json, token));
            match rc {
                ResolverReturn::Resolved => {
                    responder::cancel(token, "the resolver returned TN_RESOLVED without answering");
                }
                ResolverReturn::Deferred => {}
                ResolverReturn::Suspend => {
                    // A login cannot be suspended (c-api.md "The resolver"): cancel.
                    responder::cancel(token, "TN_SUSPEND is cancel for a login");
                }
                ResolverReturn::Failed(code) => {
                    responder::cancel(token, format!("the resolver failed (returned {code})"));
                }
            }
            active.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            b.active.fetch_sub(1, Ordering::SeqCst);
            responder::cancel(token, "cannot start a thread for the resolver");
        }
        Some(token)
    }

    fn patience(&self) -> Option<Duration> {
        self.live.as_ref().map(|b| b.elicitation_timeout)
    }

    fn pause(&self, carrier: Option<u64>) -> Box<dyn Send> {
        Box::new(Unpause(self.conn.upgrade().map(|c| {
            let clock = c.clock_for(carrier);
            clock.begin();
            clock
        })))
    }
}
