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
/// The server failed the request (resources, prompts, completions): an error answer other than
/// not-found, an invalid result or one over `maxResultBytes`, a connection that ended.
pub const TN_ERR_SERVER: tn_status = 9;
/// No answer within the request's timeout.
pub const TN_ERR_TIMEOUT: tn_status = 10;
/// The host cancelled the request (`tn_call_cancel`).
pub const TN_ERR_CANCELLED: tn_status = 11;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// Set while this thread runs inside [`guard`]: a panic there is reported through the
    /// status and the last error, so the panic hook stays quiet (and records where it was).
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs, once, a panic hook that is silent for panics inside the guard (they become
/// `TN_ERR_PANIC` with a message) and defers to the previous hook elsewhere. The hook belongs to
/// this library's own copy of std, so a host's own Rust code (another cdylib) is unaffected.
fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(std::cell::Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                PANIC_AT.with(|p| *p.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
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
        ErrorKind::Server => TN_ERR_SERVER,
        ErrorKind::Timeout => TN_ERR_TIMEOUT,
        ErrorKind::Cancelled => TN_ERR_CANCELLED,
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
        TN_ERR_SERVER => c"the server failed the request",
        TN_ERR_TIMEOUT => c"timed out",
        TN_ERR_CANCELLED => c"cancelled",
        _ => c"unknown status",
    }
}

// Thread-locals are reached with `try_with` everywhere: a `tn_` call made while the host's
// thread is being torn down (from a pthread-key destructor) must not panic outside the guard.

fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = Some(c));
}

fn clear_last_error() {
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = None);
}

/// The calling thread's last error message, or NULL. Valid until the next `tn_` call here.
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
        .unwrap_or(std::ptr::null())
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
    install_quiet_hook();
    let outer = GUARDED.try_with(|g| g.replace(true)).unwrap_or(false);
    let r = catch_unwind(AssertUnwindSafe(f));
    let _ = GUARDED.try_with(|g| g.set(outer));
    match r {
        Ok(Ok(())) => TN_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            status_of(e.kind)
        }
        Err(p) => {
            let at = PANIC_AT
                .try_with(|a| a.borrow_mut().take())
                .ok()
                .flatten()
                .map(|a| format!(" at {a}"))
                .unwrap_or_default();
            set_last_error(&format!(
                "panic inside {function}: {}{at} (this is a bug in toolnexus)",
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
