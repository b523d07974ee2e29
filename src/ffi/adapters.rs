//! Tools for a model (c-api.md "Tools for a model"): the connected tools, or any tools array, in
//! a provider's function-calling shape (`openai`, `anthropic`, `gemini`).

use super::guard::{guard, tn_status};
use super::handles::{self, tn_client};
use super::strings::{init_out, set_out, str_arg};
use crate::pure;
use std::ffi::c_char;

/// The connected tools (as `tn_list_tools` lists them) in `style`'s function-calling shape:
/// `"openai"`, `"anthropic"` or `"gemini"`. The server's input schema passes through verbatim.
/// An unknown style is `TN_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `style` is NULL or a NUL-terminated string; `tools_json_out` is NULL or writable. `client`
/// is any value (a handle, not dereferenced).
#[no_mangle]
pub unsafe extern "C" fn tn_tools_for(
    client: *const tn_client,
    style: *const c_char,
    tools_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_tools_for", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(tools_json_out, "tools_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let style = unsafe { str_arg(style, "style")? };
        let c = handles::lookup(client)?;
        let out = pure::tools_to_provider(&c.tools_json(), style)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(tools_json_out, out) }
    })
}

/// The same mapping as [`tn_tools_for`] over a JSON array of tools (JSON in, JSON out).
///
/// # Safety
/// `tools_json` and `style` are NULL or NUL-terminated strings; `provider_json_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tn_tools_to_provider(
    tools_json: *const c_char,
    style: *const c_char,
    provider_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_tools_to_provider", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(provider_json_out, "provider_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let tools = unsafe { str_arg(tools_json, "tools_json")? };
        // SAFETY: forwarded caller guarantees.
        let style = unsafe { str_arg(style, "style")? };
        let text = pure::tools_to_provider(tools, style)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(provider_json_out, text) }
    })
}
