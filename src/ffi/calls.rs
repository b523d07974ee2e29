//! Calls the host controls (c-api.md "Calls the host controls", contract §7): the callback
//! types, `tn_call_tool_async`, `tn_call_tool_ex` and `tn_call_cancel`.

use super::guard::{guard, tn_status, TN_OK};
use super::handles::{self, tn_client};
use super::strings::{init_out, opt_str_arg, set_out, str_arg, to_cstring};
use crate::error::{Error, Result};
use serde_json::Value;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Completion: called exactly once per started call, on a library thread (never a reader,
/// never inside `tn_call_tool_async`), with what `tn_call_tool` would have returned;
/// `result_json` is NULL unless `status` is `TN_OK`, and borrowed for the callback.
#[allow(non_camel_case_types)]
pub type tn_call_done_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, status: tn_status, result_json: *const c_char),
>;

/// One `notifications/progress` for the call: `{"progress":n,"total":n?,"message":"…"?}`,
/// borrowed; on a library thread, in arrival order, never after `done`.
#[allow(non_camel_case_types)]
pub type tn_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, progress_json: *const c_char)>;

/// The host's callbacks and `user_data` for one call.
struct HostCall {
    done: unsafe extern "C" fn(*mut c_void, tn_status, *const c_char),
    progress: Option<unsafe extern "C" fn(*mut c_void, *const c_char)>,
    user_data: *mut c_void,
}

// SAFETY: c-api.md: `done` and `progress` run on a library thread, and `user_data` lives until
// `done` returns; the host vouches that it may be used from that thread. The library never
// dereferences it.
unsafe impl Send for HostCall {}
// SAFETY: as above; progress and done of one call never run at the same time.
unsafe impl Sync for HostCall {}

/// The host's `done` and `progress` as the client's callbacks.
fn host_callbacks(
    done: tn_call_done_fn,
    progress: tn_progress_fn,
    user_data: *mut c_void,
) -> Result<(crate::client::Done, Option<crate::client::Progress>)> {
    let done = done.ok_or_else(|| Error::invalid_argument("`done` is NULL"))?;
    let host = std::sync::Arc::new(HostCall {
        done,
        progress,
        user_data,
    });
    let on_progress: Option<crate::client::Progress> = host.progress.map(|_| {
        let h = host.clone();
        Box::new(move |p: &str| {
            let text = to_cstring(p);
            if let Some(f) = h.progress {
                // SAFETY: the host's callback with its own user_data and a borrowed string.
                unsafe { f(h.user_data, text.as_ptr()) };
            }
        }) as crate::client::Progress
    });
    let on_done: crate::client::Done = Box::new(move |result: String| {
        let text = to_cstring(&result);
        // SAFETY: the host's callback with its own user_data and a borrowed string.
        unsafe { (host.done)(host.user_data, TN_OK, text.as_ptr()) };
    });
    Ok((on_done, on_progress))
}

/// Writes `*out` when `out` is not NULL, as an atomic store with release ordering: another
/// host thread may read the id while the call runs (`tn_call_tool_ex`'s contract: it reads
/// it to cancel the call), and a plain write beside that read is a data race (C11 and Rust
/// alike; ThreadSanitizer reports it). The host reads it with an atomic load (C11
/// `atomic_load` on an `_Atomic uint64_t`, or `__atomic_load_n`).
///
/// # Safety
/// `out` is NULL or valid for writes; while this runs, other threads only read `*out`, and
/// atomically.
pub(super) unsafe fn put_id(out: *mut u64, id: u64) {
    if out.is_null() {
        return;
    }
    if out.align_offset(std::mem::align_of::<AtomicU64>()) == 0 {
        // SAFETY: non-NULL, writable, aligned for an AtomicU64 (checked just above), and only
        // accessed atomically by others meanwhile, per this function's contract.
        unsafe { AtomicU64::from_ptr(out) }.store(id, Ordering::Release);
    } else {
        // A uint64_t aligned to 4 (some 32-bit ABIs) cannot be an atomic: written plainly.
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *out = id };
    }
}

/// `options_json`: an object; `timeoutMs` a positive integer; unknown keys ignored (§7).
pub(super) fn parse_options(text: Option<&str>) -> Result<Option<Duration>> {
    let Some(text) = text else { return Ok(None) };
    let opts = crate::json::parse_object(text, "options_json")?;
    match opts.get("timeoutMs") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
            _ => Err(Error::invalid_argument(format!(
                "options_json.timeoutMs must be a positive integer (milliseconds), got {}",
                crate::json::to_text(v)
            ))),
        },
    }
}

/// Starts a call and returns at once (§7). `options_json` may be NULL: `{"timeoutMs": n}`.
/// `progress` may be NULL. When this returns anything but `TN_OK`, `done` is never called.
/// `*call_id_out` (may be NULL) is written before `done` can fire.
///
/// # Safety
/// `name`, `args_json` and `options_json` are NULL or NUL-terminated strings; `call_id_out` is
/// NULL or writable; `done` and `progress` follow their contracts with `user_data`, which
/// lives until `done` returns. `client` is any value (a handle, not dereferenced).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tn_call_tool_async(
    client: *mut tn_client,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    done: tn_call_done_fn,
    progress: tn_progress_fn,
    user_data: *mut c_void,
    call_id_out: *mut u64,
) -> tn_status {
    guard("tn_call_tool_async", || {
        // SAFETY: forwarded caller guarantee (NULL or writable).
        unsafe { put_id(call_id_out, 0) };
        // SAFETY: forwarded caller guarantees.
        let name = unsafe { str_arg(name, "name")? };
        // SAFETY: forwarded caller guarantees.
        let args = unsafe { opt_str_arg(args_json, "args_json")? };
        // SAFETY: forwarded caller guarantees.
        let timeout = parse_options(unsafe { opt_str_arg(options_json, "options_json")? })?;
        let (on_done, on_progress) = host_callbacks(done, progress, user_data)?;
        let c = handles::lookup(client)?;
        let started = c.call_tool_async(name, args, timeout, on_done, on_progress, |id| {
            // SAFETY: as above; written before the call can complete.
            unsafe { put_id(call_id_out, id) }
        });
        if started.is_err() {
            // SAFETY: as above; 0 on error (c-api.md).
            unsafe { put_id(call_id_out, 0) };
        }
        started.map(drop)
    })
}

/// Cancels a call in flight (§7): the server is told, and `done` fires promptly with `TN_OK`
/// and an isError result saying it was cancelled. An unknown or finished id:
/// `TN_ERR_NOT_FOUND`.
///
/// # Safety
/// `client` is any value (a handle, not dereferenced).
#[no_mangle]
pub unsafe extern "C" fn tn_call_cancel(client: *mut tn_client, call_id: u64) -> tn_status {
    guard("tn_call_cancel", || {
        handles::lookup(client)?.cancel_call(call_id)
    })
}

/// [`tn_call_tool`](super::tn_call_tool) with options and an id (§7): `options_json` as for
/// `tn_call_tool_async` (NULL, or `{"timeoutMs": n}`); `*call_id_out` (may be NULL) is
/// written before the request goes out, so another thread may end the call with
/// `tn_call_cancel` while this one waits (its result is then the cancelled isError); it is
/// stored atomically, for that thread to read with an atomic load (C11 `atomic_load`). It runs
/// and is woken as `tn_call_tool` is, on this thread: a binding's main thread waits at the
/// plain call's speed and can still stop on a signal (docs/performance.md). 0 in `*call_id_out` on error.
///
/// # Safety
/// As for `tn_call_tool`; `options_json` is NULL or a NUL-terminated string; `call_id_out` is
/// NULL or writable until this function returns.
#[no_mangle]
pub unsafe extern "C" fn tn_call_tool_ex(
    client: *mut tn_client,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    call_id_out: *mut u64,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_call_tool_ex", || {
        // SAFETY: forwarded caller guarantee (NULL or writable).
        unsafe { put_id(call_id_out, 0) };
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let name = unsafe { str_arg(name, "name")? };
        // SAFETY: forwarded caller guarantees.
        let args = unsafe { opt_str_arg(args_json, "args_json")? };
        // SAFETY: forwarded caller guarantees.
        let timeout = parse_options(unsafe { opt_str_arg(options_json, "options_json")? })?;
        let c = handles::lookup(client)?;
        let result = c.call_tool_with(name, args, timeout, |id| {
            // SAFETY: as above; written before the request goes out.
            unsafe { put_id(call_id_out, id) }
        });
        match result {
            // SAFETY: checked by init_out above.
            Ok(text) => unsafe { set_out(result_json_out, text) },
            Err(e) => {
                // SAFETY: as above; 0 on error.
                unsafe { put_id(call_id_out, 0) };
                Err(e)
            }
        }
    })
}

/// Continues a call whose result carried `metadata.pending` (contract §6): `resume_token` is
/// that pending's `resume`, `answers_json` `{"<Request id>": <§10 Answer>, …}`. Same result
/// contract as `tn_call_tool`; it may return another pending. A malformed token or a key that
/// is no Request id of it: `TN_ERR_INVALID_ARGUMENT`; its server unknown, failed, disabled, or
/// the tool filtered out: `TN_ERR_NOT_FOUND`.
///
/// # Safety
/// `resume_token` and `answers_json` are NULL or NUL-terminated strings; `result_json_out` is
/// NULL or writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_call_tool_resume(
    client: *mut tn_client,
    resume_token: *const c_char,
    answers_json: *const c_char,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_call_tool_resume", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let token = unsafe { str_arg(resume_token, "resume_token")? };
        // SAFETY: forwarded caller guarantees.
        let answers = unsafe { opt_str_arg(answers_json, "answers_json")? }.unwrap_or("{}");
        let result = handles::lookup(client)?.resume(token, answers)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(result_json_out, result) }
    })
}

/// [`tn_call_tool_resume`], asynchronously: the rules of `tn_call_tool_async`.
///
/// # Safety
/// As for `tn_call_tool_resume` and `tn_call_tool_async`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tn_call_tool_resume_async(
    client: *mut tn_client,
    resume_token: *const c_char,
    answers_json: *const c_char,
    options_json: *const c_char,
    done: tn_call_done_fn,
    progress: tn_progress_fn,
    user_data: *mut c_void,
    call_id_out: *mut u64,
) -> tn_status {
    guard("tn_call_tool_resume_async", || {
        // SAFETY: forwarded caller guarantee (NULL or writable).
        unsafe { put_id(call_id_out, 0) };
        // SAFETY: forwarded caller guarantees.
        let token = unsafe { str_arg(resume_token, "resume_token")? };
        // SAFETY: forwarded caller guarantees.
        let answers = unsafe { opt_str_arg(answers_json, "answers_json")? }.unwrap_or("{}");
        // SAFETY: forwarded caller guarantees.
        let timeout = parse_options(unsafe { opt_str_arg(options_json, "options_json")? })?;
        let (on_done, on_progress) = host_callbacks(done, progress, user_data)?;
        let c = handles::lookup(client)?;
        let started = c.resume_async(token, answers, timeout, on_done, on_progress, |id| {
            // SAFETY: as above; written before the call can complete.
            unsafe { put_id(call_id_out, id) }
        });
        if started.is_err() {
            // SAFETY: as above; 0 on error (c-api.md).
            unsafe { put_id(call_id_out, 0) };
        }
        started.map(drop)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        assert_eq!(parse_options(None).unwrap(), None);
        assert_eq!(
            parse_options(Some(r#"{"timeoutMs":250,"other":1}"#)).unwrap(),
            Some(Duration::from_millis(250))
        );
        for bad in [
            r#"{"timeoutMs":0}"#,
            r#"{"timeoutMs":-5}"#,
            r#"{"timeoutMs":1.5}"#,
            r#"{"timeoutMs":"9"}"#,
            "[]",
        ] {
            let e = parse_options(Some(bad)).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::InvalidArgument, "{bad}");
        }
        assert_eq!(
            parse_options(Some("nope")).unwrap_err().kind,
            crate::error::ErrorKind::InvalidJson
        );
    }
}
