//! Skills (c-api.md "Skills", SEP-2640): the servers that offer skills and their
//! listings, one skill loaded with its SKILL.md verified, and one file of a loaded skill. A
//! skill, or file, that fails verification is `TN_ERR_NOT_FOUND` and nothing of it is returned.

use super::guard::{guard, tn_status};
use super::handles::{self, tn_client};
use super::strings::{init_out, set_out, str_arg};
use std::ffi::c_char;

/// `{"servers":{"<name>":{"skills":[<entry>…],"warnings":["…"]?} | {"error":"…"}}}`: each
/// connected server whose capabilities declare `extensions["io.modelcontextprotocol/skills"]`,
/// in name order, with every `skills/list` page; each entry as the server sent it (`uri`,
/// `frontmatter`, `resources`). No skill file is read.
///
/// # Safety
/// `skills_json_out` is NULL or writable. `client` is any value (a handle, not dereferenced).
#[no_mangle]
pub unsafe extern "C" fn tn_list_skills(
    client: *const tn_client,
    skills_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_list_skills", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(skills_json_out, "skills_json_out")? };
        let c = handles::lookup(client)?;
        let out = c.list_skills()?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(skills_json_out, out) }
    })
}

/// Loads the skill of server `server` whose SKILL.md is `uri` (its entry from the last
/// `tn_list_skills`, else the server's `skills/get`): one `resources/read`, then its size,
/// SHA-256 digest and YAML frontmatter checked against the entry.
/// `{"server","uri","frontmatter","resources","mimeType"?,"text"}`. Any mismatch, an unknown
/// server or skill, or a server that offers none: `TN_ERR_NOT_FOUND`, the message naming the
/// server, the URI and what did not match.
///
/// # Safety
/// `server` and `uri` are NULL or NUL-terminated strings; `skill_json_out` is NULL or writable.
/// `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_get_skill(
    client: *mut tn_client,
    server: *const c_char,
    uri: *const c_char,
    skill_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_get_skill", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(skill_json_out, "skill_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let server = unsafe { str_arg(server, "server")? };
        // SAFETY: forwarded caller guarantees.
        let uri = unsafe { str_arg(uri, "uri")? };
        let c = handles::lookup(client)?;
        let out = c.get_skill(server, uri)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(skill_json_out, out) }
    })
}

/// Reads one file of a skill `tn_get_skill` loaded: `file` is its URI or its path in the skill
/// (`references/FORMS.md`). Only a file the skill's entry lists is requested, and its size and
/// digest are checked. `{"server","skill","uri","mimeType"?,"text"|"blob"}` (`blob`: base64).
/// A skill not loaded, a file not listed (nothing is sent) or a mismatch: `TN_ERR_NOT_FOUND`.
///
/// # Safety
/// `server`, `skill_uri` and `file` are NULL or NUL-terminated strings; `file_json_out` is NULL
/// or writable. `client` is any value (a handle).
#[no_mangle]
pub unsafe extern "C" fn tn_read_skill_file(
    client: *mut tn_client,
    server: *const c_char,
    skill_uri: *const c_char,
    file: *const c_char,
    file_json_out: *mut *mut c_char,
) -> tn_status {
    guard("tn_read_skill_file", || {
        // SAFETY: forwarded caller guarantees.
        unsafe { init_out(file_json_out, "file_json_out")? };
        // SAFETY: forwarded caller guarantees.
        let server = unsafe { str_arg(server, "server")? };
        // SAFETY: forwarded caller guarantees.
        let skill = unsafe { str_arg(skill_uri, "skill_uri")? };
        // SAFETY: forwarded caller guarantees.
        let file = unsafe { str_arg(file, "file")? };
        let c = handles::lookup(client)?;
        let out = c.read_skill_file(server, skill, file)?;
        // SAFETY: checked by init_out above.
        unsafe { set_out(file_json_out, out) }
    })
}
