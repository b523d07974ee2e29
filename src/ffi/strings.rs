//! C strings in and out: borrowed NUL-terminated UTF-8 arguments, and library-allocated
//! results released only with `tn_string_free`.

use crate::error::{Error, ErrorKind, Result};
use std::ffi::{c_char, CStr, CString};

/// Borrows a C string argument as `&str`; NULL and invalid UTF-8 are named errors.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for `'a`.
pub unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::invalid_argument(format!("`{name}` is NULL")));
    }
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string that outlives 'a.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|e| {
        Error::invalid_argument(format!(
            "`{name}` is not valid UTF-8 (bad byte at offset {})",
            e.valid_up_to()
        ))
    })
}

/// Like [`str_arg`], but NULL is allowed and gives None.
///
/// # Safety
/// As for [`str_arg`].
pub unsafe fn opt_str_arg<'a>(p: *const c_char, name: &str) -> Result<Option<&'a str>> {
    if p.is_null() {
        Ok(None)
    } else {
        // SAFETY: forwarded caller guarantee.
        unsafe { str_arg(p, name) }.map(Some)
    }
}

/// Checks an out-pointer and sets `*out = NULL` (c-api.md: outputs are NULL on entry).
///
/// # Safety
/// `out` is NULL or valid for writing one pointer.
pub unsafe fn init_out(out: *mut *mut c_char, name: &str) -> Result<()> {
    if out.is_null() {
        return Err(Error::invalid_argument(format!("`{name}` is NULL")));
    }
    // SAFETY: non-NULL and writable per the caller's guarantee.
    unsafe { *out = std::ptr::null_mut() };
    Ok(())
}

/// Stores `s` in `*out` as a library-owned C string.
///
/// # Safety
/// `out` was checked by [`init_out`] and is still valid for writing.
pub unsafe fn set_out(out: *mut *mut c_char, s: String) -> Result<()> {
    let c = CString::new(s).map_err(|_| {
        Error::new(
            ErrorKind::Internal,
            "output contains a NUL byte (a bug in toolnexus)",
        )
    })?;
    // SAFETY: checked by init_out; the pointer is valid for one write.
    unsafe { *out = c.into_raw() };
    Ok(())
}

/// Releases a string made by [`set_out`].
///
/// # Safety
/// `s` is NULL or came from [`set_out`] and was not freed before.
pub unsafe fn free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: the caller passes back a pointer made by CString::into_raw.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// Copies a library-side `String` into a transient C string for a callback argument.
pub fn to_cstring(s: &str) -> CString {
    // The usual text has no NUL: copied once, not searched and copied again by `replace`.
    if !s.as_bytes().contains(&0) {
        return CString::new(s).unwrap_or_default();
    }
    CString::new(s.replace('\0', "\\u0000")).unwrap_or_default()
}
