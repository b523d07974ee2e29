//! The host's resolver (c-api.md "The resolver (§10)"): the C function pointer type, the
//! opaque responder handle, and the adapter that lets protocol code call the host.

use crate::responder::{Resolver, ResolverReturn, Token};
use std::ffi::{c_char, c_void};

/// One-shot responder handle, owned by the library. It is a token, not memory: answering it
/// twice, late, or after disconnect is `TN_ERR_CLOSED`, never a use-after-free.
#[allow(non_camel_case_types)]
pub struct tn_responder {
    _private: [u8; 0],
}

/// Called with a §10 Request as JSON. Answer with `tn_responder_answer` exactly once, then
/// return `TN_RESOLVED`; or return `TN_DEFERRED` and answer later from any thread. Returning
/// anything else, or `TN_RESOLVED` without answering, makes the server see cancel.
#[allow(non_camel_case_types)]
pub type tn_resolver_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        request_json: *const c_char,
        responder: *mut tn_responder,
    ) -> i32,
>;

/// The resolver answered before returning.
pub const TN_RESOLVED: i32 = 0;
/// The host will answer later, from any thread, with `tn_responder_answer`.
pub const TN_DEFERRED: i32 = 1;
/// 'SUSP': suspend this question durably (contract §6). Counts only for an MRTR or -32042
/// question; for a legacy `elicitation/create`, an OAuth login or `tn_server_request_response`
/// it is cancel. An answer given before returning it stands; after a suspension the responder
/// is closed.
pub const TN_SUSPEND: i32 = 0x5355_5350;

/// The host's function pointer and its `user_data`.
pub struct HostResolver {
    f: unsafe extern "C" fn(*mut c_void, *const c_char, *mut tn_responder) -> i32,
    user_data: *mut c_void,
}

// SAFETY: the C API documents that the resolver is called from the library's reader threads
// (and the calling thread for the pure function), so the host vouches that `user_data` may be
// used from any thread; the library itself never dereferences it.
unsafe impl Send for HostResolver {}
// SAFETY: as above; the library only passes the pointer back to the host's function.
unsafe impl Sync for HostResolver {}

impl HostResolver {
    /// None when the host registered no resolver.
    pub fn new(f: tn_resolver_fn, user_data: *mut c_void) -> Option<Self> {
        f.map(|f| HostResolver { f, user_data })
    }
}

/// The handle the host sees for a responder token.
pub fn token_to_handle(token: Token) -> *mut tn_responder {
    token as usize as *mut tn_responder
}

/// The token behind a handle (no dereference happens).
pub fn handle_to_token(handle: *mut tn_responder) -> Token {
    handle as usize as Token
}

impl Resolver for HostResolver {
    fn call(&self, request_json: &str, token: Token) -> ResolverReturn {
        let text = super::strings::to_cstring(request_json);
        // SAFETY: `f` is the host's resolver, called as c-api.md documents: `user_data` as
        // given, a NUL-terminated request borrowed for the call, and an opaque handle.
        let rc = unsafe { (self.f)(self.user_data, text.as_ptr(), token_to_handle(token)) };
        match rc {
            TN_RESOLVED => ResolverReturn::Resolved,
            TN_DEFERRED => ResolverReturn::Deferred,
            TN_SUSPEND => ResolverReturn::Suspend,
            other => ResolverReturn::Failed(other),
        }
    }
}
