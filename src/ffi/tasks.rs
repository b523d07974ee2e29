//! A server's tasks (c-api.md has no entry yet, see docs/tasks.md).

use super::guard::{guard, tn_status};
use super::handles::{self, tn_client};
use super::strings::{init_out, set_out, str_arg};
use std::ffi::c_char;

/// `{"server","tasks":[<Task>…]}`: server `server`'s `tasks/list`, every page (MCP 2025-11-25;
/// a server that lists none, or an MCP 2026-07-28 one, is `TN_ERR_NOT_FOUND` naming why).
///
/// # Safety
/// `server` is NULL or a NUL-terminated string; `tasks_json_out` is NULL or writable. `client`
/// is any value (a handle, not dereferenced).
#[no_mangle]
pub unsafe extern "C" fn tn_list_tasks(
    client: *const tn_client,
    server: *const c_char,
    tasks_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_list_tasks", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(tasks_json_out, "tasks_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let server = unsafe { str_arg(server, "server")? };
        let c = handles::lookup(client)?;
        let out = c.list_tasks(server)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(tasks_json_out, out) }
    })
}
