//! The platform layer on Windows (docs/windows.md): Job Objects for a child's tree, named pipes with
//! overlapped I/O for its stdio, one I/O completion port for every child's stderr, and the
//! direct path's socket calls. Tested under Wine 8 on Linux (scripts/test-windows.sh).

#![allow(unsafe_code)]

pub mod fs;
pub mod net;
pub mod pipe;
pub mod poller;
pub mod process;

/// See [`crate::sys::block_sigpipe_on_this_thread`]: Windows has no SIGPIPE (a write to a
/// closed pipe or socket fails with an error), so there is nothing to block.
pub fn block_sigpipe_on_this_thread() {}

/// `s` as a NUL-terminated UTF-16 string, for the `W` functions.
fn wide(s: &std::ffi::OsStr) -> Vec<u16> {
    use std::os::windows::ffi::OsStrExt;
    s.encode_wide().chain(std::iter::once(0)).collect()
}

/// Milliseconds for a Win32 wait: rounded up (a wait never ends early), below `INFINITE`.
fn millis(d: std::time::Duration) -> u32 {
    d.as_micros().div_ceil(1000).min(u128::from(u32::MAX - 1)) as u32
}

/// A mutex's guard, whether or not a holder panicked (the data here stays consistent: every
/// critical section is a few assignments).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
