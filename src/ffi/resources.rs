//! Resources (c-api.md "Resources"): listings across the servers, a read (with a timeout and a
//! cancel of its own in the `_ex` form), subscriptions, and the RFC 6570 template helper.

use super::calls::{parse_options, put_id};
use super::guard::{guard, tn_status};
use super::handles::{self, tn_client};
use super::strings::{init_out, opt_str_arg, set_out, str_arg};
use std::ffi::c_char;

/// Every connected server's resources, all pages, sorted by server then uri:
/// `[{"server","uri","name","title"?,"description"?,"mimeType"?,"size"?,"annotations"?,
/// "icons"?,"_meta"?}]`, each as the server listed it. A server that declares no `resources`
/// lists none; one whose listing failed keeps the one held before (the status's `listErrors`
/// says why).
///
/// # Safety
/// `resources_json_out` is NULL or writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_list_resources(
    client: *mut tn_client,
    resources_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_list_resources", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(resources_json_out, "resources_json_out")? };
        let out = handles::lookup(client)?.list_resources()?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(resources_json_out, out) }
    })
}

/// Every connected server's resource templates, sorted by server then `uriTemplate`:
/// `[{"server","uriTemplate","name",…}]`.
///
/// # Safety
/// `templates_json_out` is NULL or writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_list_resource_templates(
    client: *mut tn_client,
    templates_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_list_resource_templates", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(templates_json_out, "templates_json_out")? };
        let out = handles::lookup(client)?.list_resource_templates()?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(templates_json_out, out) }
    })
}

/// Reads `uri` from server `server`: `{"contents":[{"uri","mimeType"?,"text"} |
/// {"uri","mimeType"?,"blob":"<base64>"}…],"_meta"?}` as sent. An unknown server or uri:
/// `TN_ERR_NOT_FOUND`; a result over `maxResultBytes` or another failure of the server:
/// `TN_ERR_SERVER`; no answer within the server's `timeout`: `TN_ERR_TIMEOUT`.
///
/// # Safety
/// `server` and `uri` are NULL or NUL-terminated strings; `result_json_out` is NULL or
/// writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_read_resource(
    client: *mut tn_client,
    server: *const c_char,
    uri: *const c_char,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_read_resource", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let server = unsafe { str_arg(server, "server")? };
        // SAFETY: forwarded caller guarantees.
        let uri = unsafe { str_arg(uri, "uri")? };
        let out = handles::lookup(client)?.read_resource(server, uri)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(result_json_out, out) }
    })
}

/// [`tn_read_resource`] with options and an id, as `tn_call_tool_ex` is for a call:
/// `options_json` NULL or `{"timeoutMs": n}`; `*call_id_out` (may be NULL) is written before
/// the request goes out, so another thread may end the read with `tn_call_cancel`
/// (`TN_ERR_CANCELLED`). 0 in `*call_id_out` on error.
///
/// # Safety
/// As for `tn_read_resource`; `options_json` is NULL or a NUL-terminated string;
/// `call_id_out` is NULL or writable until this function returns.
#[no_mangle]
pub unsafe extern "C" fn tn_read_resource_ex(
    client: *mut tn_client,
    server: *const c_char,
    uri: *const c_char,
    options_json: *const c_char,
    call_id_out: *mut u64,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_read_resource_ex", || {
        // SAFETY: forwarded caller guarantee (NULL or writable).
        unsafe { put_id(call_id_out, 0) };
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let server = unsafe { str_arg(server, "server")? };
        // SAFETY: forwarded caller guarantees.
        let uri = unsafe { str_arg(uri, "uri")? };
        // SAFETY: forwarded caller guarantees.
        let timeout = parse_options(unsafe { opt_str_arg(options_json, "options_json")? })?;
        let c = handles::lookup(client)?;
        let out = c.read_resource_with(server, uri, timeout, |id| {
            // SAFETY: as above; written before the request goes out.
            unsafe { put_id(call_id_out, id) }
        });
        match out {
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

/// Subscribes to `uri` on server `server` (`resources/subscribe`; in MCP 2026-07-28 a new
/// `subscriptions/listen` whose acknowledgement this waits for): its updates come to the event
/// callback as `{"type":"resource_updated","server","uri"}`. Kept across restarts. A server
/// that offers no subscriptions: `TN_ERR_NOT_FOUND`.
///
/// # Safety
/// `server` and `uri` are NULL or NUL-terminated strings. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_subscribe_resource(
    client: *mut tn_client,
    server: *const c_char,
    uri: *const c_char,
) -> tn_status {
    guard("tn_subscribe_resource", || {
        // SAFETY: forwarded caller guarantees.
        let server = unsafe { str_arg(server, "server")? };
        // SAFETY: forwarded caller guarantees.
        let uri = unsafe { str_arg(uri, "uri")? };
        handles::lookup(client)?.subscribe_resource(server, uri)
    })
}

/// Ends the subscription to `uri` on server `server`: no `resource_updated` event of it comes
/// once this returns. A uri not subscribed to: `TN_ERR_NOT_FOUND`.
///
/// # Safety
/// `server` and `uri` are NULL or NUL-terminated strings. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_unsubscribe_resource(
    client: *mut tn_client,
    server: *const c_char,
    uri: *const c_char,
) -> tn_status {
    guard("tn_unsubscribe_resource", || {
        // SAFETY: forwarded caller guarantees.
        let server = unsafe { str_arg(server, "server")? };
        // SAFETY: forwarded caller guarantees.
        let uri = unsafe { str_arg(uri, "uri")? };
        handles::lookup(client)?.unsubscribe_resource(server, uri)
    })
}

/// An RFC 6570 URI template's variables, and its expansion (levels 1-4) when values are given,
/// for a resource template picker. Pure: `{"template":"…","values"?:{"<name>": string |
/// number | boolean | [..] | {..}}}` → `{"variables":["<name>"…],"uri"?:"…"}`.
///
/// # Safety
/// `request_json` is NULL or a NUL-terminated string; `result_json_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_uri_template(
    request_json: *const c_char,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_uri_template", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let text = unsafe { str_arg(request_json, "request_json")? };
        let out = crate::pure::uri_template(text)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(result_json_out, out) }
    })
}
