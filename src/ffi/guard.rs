//! The one guard every exported function goes through: status codes, the thread-local last
//! error, and `catch_unwind` so that no panic ever crosses the C boundary (c-api.md).

use crate::error::{Error, ErrorKind};
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A status code: `TN_OK` or an error. Append-only, never renumbered.
#[allow(non_camel_case_types)]
pub type tn_status = i32;

pub const TN_OK: tn_status = 0;
/// NULL, bad UTF-8, wrong JSON shape.
pub const TN_ERR_INVALID_ARGUMENT: tn_status = 1;
/// Text that is not JSON.
pub const TN_ERR_INVALID_JSON: tn_status = 2;
/// The whole config is unusable (not per-server problems).
pub const TN_ERR_CONFIG: tn_status = 3;
/// No tool of that name.
pub const TN_ERR_NOT_FOUND: tn_status = 4;
/// Client (or responder) already closed.
pub const TN_ERR_CLOSED: tn_status = 5;
/// A call that would deadlock (tn_call_tool on a server from inside its own inline resolver).
pub const TN_ERR_REENTRANT: tn_status = 6;
pub const TN_ERR_PANIC: tn_status = 7;
pub const TN_ERR_INTERNAL: tn_status = 8;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// The C status for an error kind.
pub fn status_of(kind: ErrorKind) -> tn_status {
    match kind {
        ErrorKind::InvalidArgument => TN_ERR_INVALID_ARGUMENT,
        ErrorKind::InvalidJson => TN_ERR_INVALID_JSON,
        ErrorKind::Config => TN_ERR_CONFIG,
        ErrorKind::NotFound => TN_ERR_NOT_FOUND,
        ErrorKind::Closed => TN_ERR_CLOSED,
        ErrorKind::Reentrant => TN_ERR_REENTRANT,
        ErrorKind::Internal => TN_ERR_INTERNAL,
    }
}

/// Static text for a status code.
pub fn status_text(code: tn_status) -> &'static std::ffi::CStr {
    match code {
        TN_OK => c"ok",
        TN_ERR_INVALID_ARGUMENT => c"invalid argument",
        TN_ERR_INVALID_JSON => c"invalid JSON",
        TN_ERR_CONFIG => c"unusable config",
        TN_ERR_NOT_FOUND => c"not found",
        TN_ERR_CLOSED => c"closed",
        TN_ERR_REENTRANT => c"reentrant call",
        TN_ERR_PANIC => c"panic inside the library",
        TN_ERR_INTERNAL => c"internal error",
        _ => c"unknown status",
    }
}

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

fn clear_last_error() {
    LAST_ERROR.with(|e| *e.borrow_mut() = None);
}

/// The calling thread's last error message, or NULL. Valid until the next `tn_` call here.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Runs `f`, turning an error into its status plus a last-error message and a panic into
/// `TN_ERR_PANIC`. `function` names the exported function in panic messages.
pub fn guard(function: &str, f: impl FnOnce() -> Result<(), Error>) -> tn_status {
    clear_last_error();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => TN_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            status_of(e.kind)
        }
        Err(p) => {
            set_last_error(&format!(
                "panic inside {function}: {} (this is a bug in toolnexus)",
                panic_message(p.as_ref())
            ));
            TN_ERR_PANIC
        }
    }
}

/// [`guard`] for functions that cannot report a status (`void` or pointer returns): a panic
/// yields `fallback` instead of unwinding.
pub fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}
