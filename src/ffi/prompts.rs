//! Prompts and completions (c-api.md "Prompts"): the listing across the servers under host
//! names, a prompt got by its host name (with a timeout and a cancel of its own in the `_ex`
//! form), and `completion/complete`.

use super::calls::{parse_options, put_id};
use super::guard::{guard, tn_status};
use super::handles::{self, tn_client};
use super::strings::{init_out, opt_str_arg, set_out, str_arg};
use std::ffi::c_char;

/// Every connected server's prompts, sorted by host name: `[{"name":<host name>,"server",
/// "prompt":<the server's name>,"title"?,"description"?,"arguments":[{"name","title"?,
/// "description"?,"required"?}]}]`. Host names are made as tool names are (contract §0.1),
/// collisions included (the status's `warnings` names the loser).
///
/// # Safety
/// `prompts_json_out` is NULL or writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_list_prompts(
    client: *mut tn_client,
    prompts_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_list_prompts", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(prompts_json_out, "prompts_json_out")? };
        let out = handles::lookup(client)?.list_prompts()?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(prompts_json_out, out) }
    })
}

/// Gets the prompt of host name `name` with `args_json` (NULL, or an object of strings):
/// `{"description"?,"messages":[{"role","content":{…}}…]}`, every content block as sent. A
/// question the server asks on the way goes to the resolver. An unknown prompt:
/// `TN_ERR_NOT_FOUND`; arguments the server refuses or another failure: `TN_ERR_SERVER`.
///
/// # Safety
/// `name` and `args_json` are NULL or NUL-terminated strings; `result_json_out` is NULL or
/// writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_get_prompt(
    client: *mut tn_client,
    name: *const c_char,
    args_json: *const c_char,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_get_prompt", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let name = unsafe { str_arg(name, "name")? };
        // SAFETY: forwarded caller guarantees.
        let args = unsafe { opt_str_arg(args_json, "args_json")? };
        let out = handles::lookup(client)?.get_prompt(name, args)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(result_json_out, out) }
    })
}

/// [`tn_get_prompt`] with options and an id, as `tn_call_tool_ex` is for a call:
/// `options_json` NULL or `{"timeoutMs": n}`; `*call_id_out` (may be NULL) is written before
/// the request goes out, so another thread may end it with `tn_call_cancel`
/// (`TN_ERR_CANCELLED`). 0 in `*call_id_out` on error.
///
/// # Safety
/// As for `tn_get_prompt`; `options_json` is NULL or a NUL-terminated string; `call_id_out` is
/// NULL or writable until this function returns.
#[no_mangle]
pub unsafe extern "C" fn tn_get_prompt_ex(
    client: *mut tn_client,
    name: *const c_char,
    args_json: *const c_char,
    options_json: *const c_char,
    call_id_out: *mut u64,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_get_prompt_ex", || {
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
        let out = c.get_prompt_with(name, args, timeout, |id| {
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

/// `completion/complete` on a server: `request_json` is `{"server","ref":{"type":"ref/prompt",
/// "name":"<the server's prompt name>"} | {"type":"ref/resource","uri":"<template>"},
/// "argument":{"name","value"},"context"?:{"arguments":{…}}}`; the server's `completion` object
/// as sent, `{"values":[…],"total"?,"hasMore"?}` (`{"values":[]}` from a server without
/// completions).
///
/// # Safety
/// `request_json` is NULL or a NUL-terminated string; `result_json_out` is NULL or writable.
/// `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_complete(
    client: *mut tn_client,
    request_json: *const c_char,
    result_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_complete", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(result_json_out, "result_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let req = unsafe { str_arg(request_json, "request_json")? };
        let out = handles::lookup(client)?.complete(req)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(result_json_out, out) }
    })
}
