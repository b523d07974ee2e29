//! The C boundary and nothing else (c-api.md): every exported function checks its arguments,
//! calls the core, converts the result, and runs inside [`guard::guard`].
#![allow(unsafe_code)]

pub mod adapters;
pub mod calls;
pub mod events;
pub mod guard;
pub mod handles;
pub mod prompts;
pub mod resolver;
pub mod resources;
pub mod skills;
pub mod strings;
pub mod tasks;

use crate::error::Error;
use crate::{pure, responder};
use guard::{guard, guard_value, tn_status};
use resolver::{tn_resolver_fn, tn_responder, HostResolver};
use std::ffi::{c_char, c_void};
use strings::{init_out, set_out, str_arg};

pub use guard::{
    TN_ERR_CANCELLED, TN_ERR_CLOSED, TN_ERR_CONFIG, TN_ERR_INTERNAL, TN_ERR_INVALID_ARGUMENT,
    TN_ERR_INVALID_JSON, TN_ERR_NOT_FOUND, TN_ERR_PANIC, TN_ERR_REENTRANT, TN_ERR_SERVER,
    TN_ERR_TIMEOUT, TN_OK,
};
pub use resolver::{TN_DEFERRED, TN_RESOLVED, TN_SUSPEND};

/// The library version, e.g. "0.1.0". Static; do not free.
#[no_mangle]
pub extern "C" fn tn_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Static text for a status code; do not free.
#[no_mangle]
pub extern "C" fn tn_status_str(code: tn_status) -> *const c_char {
    guard::status_text(code).as_ptr()
}

/// The calling thread's last error message, or NULL when none. Borrowed: valid until the next
/// `tn_` call on this thread.
#[no_mangle]
pub extern "C" fn tn_last_error_message() -> *const c_char {
    guard_value(std::ptr::null(), guard::last_error_ptr)
}

/// Releases a string returned by the library. NULL is a no-op.
///
/// # Safety
/// `s` is NULL or a string from a `tn_` function that was not freed before.
#[no_mangle]
pub unsafe extern "C" fn tn_string_free(s: *mut c_char) {
    guard_value((), || {
        // SAFETY: the caller passes a library-made string (or NULL), once.
        unsafe { strings::free(s) }
    })
}

/// MCP `elicitation/create` params (a JSON object) → a §10 Request (contract §4). Anything
/// but an object, `null` included, is invalid input here; only the live bridge and
/// `tn_server_request_response` read absent or `null` params as `{}` (§4).
///
/// # Safety
/// `params_json` is NULL or a NUL-terminated string; `request_json_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_elicitation_to_request(
    params_json: *const c_char,
    request_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_elicitation_to_request", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(request_json_out, "request_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let text = unsafe { str_arg(params_json, "params_json")? };
        let request = pure::elicitation_to_request(text)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(request_json_out, request) }
    })
}

/// A §10 Answer → an MCP ElicitResult (contract §4).
///
/// # Safety
/// `answer_json` is NULL or a NUL-terminated string; `result_json_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_answer_to_result(
    answer_json: *const c_char,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_answer_to_result", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let text = unsafe { str_arg(answer_json, "answer_json")? };
        let result = pure::answer_to_result(text)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(result_json_out, result) }
    })
}

/// One inbound JSON-RPC message → the reply to write back (contract §4). `*reply_json_out`
/// stays NULL, with `TN_OK`, when the message is not a server request. `resolver` may be NULL;
/// it is called synchronously and `TN_DEFERRED` counts as cancel here.
///
/// # Safety
/// `message_json` is NULL or a NUL-terminated string; `reply_json_out` is NULL or writable;
/// `resolver`, when set, follows the `tn_resolver_fn` contract with `user_data`.
#[no_mangle]
pub unsafe extern "C" fn tn_server_request_response(
    resolver: tn_resolver_fn,
    user_data: *mut c_void,
    message_json: *const c_char,
    reply_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_server_request_response", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(reply_json_out, "reply_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let text = unsafe { str_arg(message_json, "message_json")? };
        let host = HostResolver::new(resolver, user_data);
        let host = host.as_ref().map(|h| h as &dyn responder::Resolver);
        if let Some(reply) = pure::server_request_response(text, host)? {
            // SAFETY: checked by init_out above.
            unsafe { set_out(reply_json_out, reply)? };
        }
        Ok(())
    })
}

/// Answers a responder with a §10 Answer (JSON, copied). `TN_OK` when taken; invalid JSON or
/// an invalid Answer is an error and the responder stays open; an answered, timed-out or
/// cancelled responder is `TN_ERR_CLOSED`. Callable from any thread.
///
/// # Safety
/// `answer_json` is NULL or a NUL-terminated string. `responder` is any value: it is a token,
/// never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn tn_responder_answer(
    responder: *mut tn_responder,
    answer_json: *const c_char,
) -> tn_status {
    guard("tn_responder_answer", || {
        if responder.is_null() {
            return Err(Error::invalid_argument("`responder` is NULL"));
        }
        // SAFETY: forwarded caller guarantees.
        let text = unsafe { str_arg(answer_json, "answer_json")? };
        responder::answer(resolver::handle_to_token(responder), text)
    })
}

/// A name (as a JSON string literal) → its sanitized form (a JSON string literal) (§0.1):
/// every code point outside `[a-zA-Z0-9_-]` becomes one `_`. For parity tests of naming.
///
/// # Safety
/// `name_json` is NULL or a NUL-terminated string; `name_json_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_sanitize_name(
    name_json: *const c_char,
    name_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_sanitize_name", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(name_json_out, "name_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let text = unsafe { str_arg(name_json, "name_json")? };
        let name = pure::sanitize_name(text)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(name_json_out, name) }
    })
}

/// Panics inside the guard on purpose and returns `TN_ERR_PANIC` with a message that contains
/// `message`: lets hosts and bindings test their handling of the panic status. Debug-only
/// (c-api.md): exported by debug builds alone, declared under `TOOLNEXUS_DEBUG_API`.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[cfg(debug_assertions)]
#[no_mangle]
pub unsafe extern "C" fn tn_debug_force_panic(message: *const c_char) -> tn_status {
    guard("tn_debug_force_panic", || {
        // SAFETY: forwarded caller guarantees.
        let m = unsafe { strings::opt_str_arg(message, "message")? }.unwrap_or("forced");
        panic!("{m}");
    })
}

/// Connects every server in `config_json` (contract §2). `resolver` may be NULL: then no
/// elicitation capability is advertised. Succeeds even when some or all servers fail (their
/// status says why); fails only when the config itself is unusable.
///
/// # Safety
/// `config_json` is NULL or a NUL-terminated string; `client_out` is NULL or writable;
/// `resolver`, when set, may be called from the library's reader threads with `user_data`
/// until `tn_disconnect` returns.
#[no_mangle]
pub unsafe extern "C" fn tn_connect(
    config_json: *const c_char,
    resolver: tn_resolver_fn,
    user_data: *mut c_void,
    client_out: *mut *mut handles::tn_client,
) -> tn_status {
    guard("tn_connect", || {
        if client_out.is_null() {
            return Err(Error::invalid_argument("`client_out` is NULL"));
        }
        // SAFETY: non-NULL and writable per the caller's guarantee.
        unsafe { *client_out = std::ptr::null_mut() };
        // SAFETY: forwarded caller guarantees.
        let text = unsafe { str_arg(config_json, "config_json")? };
        let host = HostResolver::new(resolver, user_data)
            .map(|h| std::sync::Arc::new(h) as std::sync::Arc<dyn responder::Resolver>);
        let c = crate::client::Client::connect(text, host)?;
        // SAFETY: checked above.
        unsafe { *client_out = handles::register(c) };
        Ok(())
    })
}

/// The tools of every connected server as a JSON array sorted by name (contract §1).
///
/// # Safety
/// `tools_json_out` is NULL or writable. `client` is any value (a handle, not dereferenced).
#[no_mangle]
pub unsafe extern "C" fn tn_list_tools(
    client: *const handles::tn_client,
    tools_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_list_tools", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(tools_json_out, "tools_json_out")? };
        let c = handles::lookup(client)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(tools_json_out, c.tools_json()) }
    })
}

/// `{"servers":{"<name>":{"status":"connected"|"disabled"|"failed","error":"…"?,…}}}`.
///
/// # Safety
/// `statuses_json_out` is NULL or writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_server_statuses(
    client: *const handles::tn_client,
    statuses_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_server_statuses", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(statuses_json_out, "statuses_json_out")? };
        let c = handles::lookup(client)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(statuses_json_out, c.statuses_json()) }
    })
}

/// Calls a tool by its listed name. `args_json` may be NULL (= `{}`). Every outcome the model
/// should see (tool error, timeout, server gone) is `TN_OK` with an isError ToolResult.
///
/// # Safety
/// `name` and `args_json` are NULL or NUL-terminated strings; `result_json_out` is NULL or
/// writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_call_tool(
    client: *mut handles::tn_client,
    name: *const c_char,
    args_json: *const c_char,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_call_tool", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let name = unsafe { str_arg(name, "name")? };
        // SAFETY: forwarded caller guarantees.
        let args = unsafe { strings::opt_str_arg(args_json, "args_json")? };
        let c = handles::lookup(client)?;
        let result = c.call_tool(name, args)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(result_json_out, result) }
    })
}

/// Closes every connection (bounded: stdin close, then SIGTERM, then SIGKILL of the process
/// group), answers deferred responders with cancel, and frees the client once in-flight calls
/// have returned. NULL and a second call are no-ops. From inside one of this client's inline
/// resolvers it does nothing and leaves `TN_ERR_REENTRANT` as the last error.
#[no_mangle]
pub extern "C" fn tn_disconnect(client: *mut handles::tn_client) {
    guard("tn_disconnect", || handles::disconnect(client));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{CStr, CString};

    /// `tn_elicitation_to_request` on `input`: the status, and the output or the last error.
    fn to_request(input: &str) -> (tn_status, String) {
        let c = CString::new(input).unwrap();
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: a valid C string and out-pointer.
        let st = unsafe { tn_elicitation_to_request(c.as_ptr(), &mut out) };
        if out.is_null() {
            // SAFETY: the library's last-error message, valid until the next call here.
            let m = unsafe { CStr::from_ptr(tn_last_error_message()) };
            return (st, m.to_string_lossy().into_owned());
        }
        // SAFETY: a string the library just returned; freed once, right after the copy.
        let s = unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        unsafe { tn_string_free(out) };
        (st, s)
    }

    /// §4: the pure function takes a JSON object; `null` is as invalid as any other non-object.
    #[test]
    fn elicitation_to_request_takes_only_an_object() {
        for (input, kind) in [
            ("null", "null"),
            (" null ", "null"),
            ("[]", "array"),
            ("5", "number"),
            ("\"s\"", "string"),
            ("true", "boolean"),
        ] {
            let (st, msg) = to_request(input);
            assert_eq!(st, TN_ERR_INVALID_ARGUMENT, "{input}: {msg}");
            assert!(
                msg.contains("params_json must be a JSON object") && msg.contains(kind),
                "{input}: {msg}"
            );
        }
        let (st, out) = to_request("{}");
        assert_eq!(st, TN_OK, "{out}");
        assert!(out.ends_with(r#"","kind":"input","prompt":""}"#), "{out}");
    }

    /// §4: `tn_server_request_response` still reads `null` params as `{}` (no resolver: -32601;
    /// a resolver that answers: its ElicitResult).
    #[test]
    fn server_request_response_reads_null_params_as_empty() {
        let msg =
            CString::new(r#"{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":null}"#)
                .unwrap();
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: a NULL resolver, a valid C string and out-pointer.
        let st = unsafe {
            tn_server_request_response(None, std::ptr::null_mut(), msg.as_ptr(), &mut out)
        };
        assert_eq!(st, TN_OK);
        assert!(!out.is_null());
        // SAFETY: a string the library just returned; freed once, right after the copy.
        let s = unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        unsafe { tn_string_free(out) };
        assert_eq!(
            s,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#
        );
    }
}
