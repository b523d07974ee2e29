//! The host's event callback (c-api.md "Events"): the C function pointer type and
//! `tn_set_event_callback`.

use super::guard::{guard, tn_status};
use super::handles::{self, tn_client};
use super::strings::to_cstring;
use std::ffi::{c_char, c_void};

/// Called with one event as JSON (`{"type":"status"|"tools"|"log","server":…,…}`), borrowed
/// for the call, on the client's event thread (never a reader), one event at a time, in the
/// order they happened.
#[allow(non_camel_case_types)]
pub type tn_event_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char)>;

/// The host's function and `user_data`.
struct HostEvents {
    f: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: *mut c_void,
}

// SAFETY: c-api.md: the event callback runs on the client's event thread, and `user_data`
// lives until the callback is replaced or the client disconnected; the host vouches that it
// may be used from that thread. The library never dereferences it.
unsafe impl Send for HostEvents {}
// SAFETY: as above; one event at a time, never two calls at once.
unsafe impl Sync for HostEvents {}

impl HostEvents {
    fn call(&self, event: &str) {
        let text = to_cstring(event);
        // SAFETY: the host's callback with its own user_data and a borrowed string.
        unsafe { (self.f)(self.user_data, text.as_ptr()) };
    }
}

/// Registers `callback` for the client's events (docs/live-servers.md), replacing the one before; NULL
/// removes it. When this returns (outside the callback itself) the callback it replaced is not
/// running and is never called again, so its `user_data` may be freed. Events before a
/// callback is registered are not kept: `tn_server_statuses` says where things stand.
///
/// # Safety
/// `callback`, when set, follows the `tn_event_fn` contract with `user_data`, which lives until
/// this is called again or `tn_disconnect` returns. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_set_event_callback(
    client: *mut tn_client,
    callback: tn_event_fn,
    user_data: *mut c_void,
) -> tn_status {
    guard("tn_set_event_callback", || {
        let c = handles::lookup(client)?;
        let cb = callback.map(|f| {
            let host = HostEvents { f, user_data };
            std::sync::Arc::new(move |event: &str| host.call(event)) as crate::client::EventCallback
        });
        c.set_event_callback(cb)
    })
}
