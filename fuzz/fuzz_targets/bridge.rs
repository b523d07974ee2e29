//! The pure bridge functions through the C ABI, as a host calls them (§4, c-api.md): never a
//! panic across the boundary, every success valid JSON, no output on an error. The first byte
//! picks the resolver's answer for `tn_server_request_response`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::{c_char, c_void, CStr, CString};
use toolnexus::ffi;

type PureFn = unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> i32;

fn check(status: i32, out: *mut c_char, what: &str) {
    assert_ne!(status, ffi::TN_ERR_PANIC, "{what} panicked");
    if status == ffi::TN_OK {
        if out.is_null() {
            return;
        }
        // SAFETY: a string the library just returned, freed right after the copy.
        let text = unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned();
        // SAFETY: returned by the library, freed once.
        unsafe { ffi::tn_string_free(out) };
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{what}: {text}");
    } else {
        assert!(out.is_null(), "{what} set its output on an error");
    }
}

fn pure(f: PureFn, input: &CString, what: &str) {
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: a valid C string and out-pointer.
    let status = unsafe { f(input.as_ptr(), &mut out) };
    check(status, out, what);
}

unsafe extern "C" fn answering(
    ud: *mut c_void,
    _request: *const c_char,
    responder: *mut ffi::resolver::tn_responder,
) -> i32 {
    // SAFETY: the target passes a pointer to a live CString as user data.
    let answer = unsafe { &*(ud as *const CString) };
    // SAFETY: a valid responder handle and C string.
    unsafe { ffi::tn_responder_answer(responder, answer.as_ptr()) };
    ffi::TN_RESOLVED
}

const ANSWERS: [&str; 4] = [
    r#"{"ok":true,"data":{"name":"x"}}"#,
    r#"{"ok":false,"reason":"declined"}"#,
    r#"{"ok":"yes"}"#,
    "not json",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let Ok(c) = CString::new(input) else { return };
    pure(ffi::tn_elicitation_to_request, &c, "tn_elicitation_to_request");
    pure(ffi::tn_answer_to_result, &c, "tn_answer_to_result");
    pure(ffi::tn_sanitize_name, &c, "tn_sanitize_name");
    let answer = CString::new(ANSWERS[usize::from(pick) % ANSWERS.len()]).unwrap();
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: valid strings, out-pointer and resolver; the user data outlives the call.
    let status = unsafe {
        ffi::tn_server_request_response(
            Some(answering),
            &answer as *const CString as *mut c_void,
            c.as_ptr(),
            &mut out,
        )
    };
    check(status, out, "tn_server_request_response");
});
