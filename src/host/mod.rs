//! The host's side of the library (contract §4, §6, §8; c-api.md "Callbacks"): its resolver and
//! bounds ([`Host`]), the one re-entrancy guard (which client's callback, which
//! connection's inline resolver this thread is running), answering a server's own requests on
//! a live connection ([`server_requests`]), the questions of an MRTR round or a -32042 error
//! ([`question`]), the live bridge's SEP-1034 defaults and checks on an answer ([`defaults`]),
//! and the login's browser step ([`login`], what auth knows as
//! [`crate::auth::LoginHost`]).

pub(crate) mod defaults;
pub(crate) mod login;
pub(crate) mod question;
pub(crate) mod server_requests;

use crate::responder::Resolver;
use std::cell::Cell;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// The host's resolver and its bounds, when one is registered.
#[derive(Clone)]
pub(crate) struct Host {
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) elicitation_timeout: Duration,
    /// Owner key for responders of this client (disconnect cancels them all).
    pub(crate) owner: u64,
    /// Calls into the host's resolver in progress, across the client's connections:
    /// disconnect waits (bounded) for none to be left.
    pub(crate) active: Arc<AtomicUsize>,
}

/// What this thread is running of the host's: a callback of client `client` (0: none), and
/// when it is an inline resolver, for connection `conn` (its address; 0: none).
#[derive(Clone, Copy)]
struct Inside {
    client: u64,
    conn: usize,
}

thread_local! {
    /// The one re-entrancy guard (§4): `tn_disconnect` from inside any callback of its client,
    /// and `tn_call_tool` on a server from inside that server's inline resolver, would wait for
    /// themselves.
    static INSIDE: Cell<Inside> = const { Cell::new(Inside { client: 0, conn: 0 }) };
}

/// Runs `f` marked as a callback of `client`, and as connection `conn`'s inline resolver when
/// given (the mark is restored even if `f` unwinds).
pub(crate) fn as_callback<T>(client: u64, conn: Option<usize>, f: impl FnOnce() -> T) -> T {
    struct Restore(Inside);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = INSIDE.try_with(|c| c.set(self.0));
        }
    }
    let now = Inside {
        client,
        conn: conn.unwrap_or(0),
    };
    let _restore = Restore(INSIDE.with(|c| c.replace(now)));
    f()
}

/// Whether this thread is inside a callback of client `client`.
pub(crate) fn in_callback_of(client: u64) -> bool {
    INSIDE.with(Cell::get).client == client
}

/// Whether this thread is inside `conn`'s inline resolver (the re-entrancy guard, §4).
pub(crate) fn in_own_resolver(conn: &crate::conn::Conn) -> bool {
    INSIDE.with(Cell::get).conn == conn as *const crate::conn::Conn as usize
}
