//! The platform layer on POSIX: Linux and macOS (and, untested, the other Unixes the calls
//! exist on). Where the two differ, the difference is inside the file that needs it.

#![allow(unsafe_code)]

pub mod fs;
pub mod net;
pub mod pipe;
pub mod poller;
pub mod process;

fn sigpipe_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it fully.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        set
    }
}

/// See [`crate::sys::block_sigpipe_on_this_thread`].
pub fn block_sigpipe_on_this_thread() {
    let set = sigpipe_set();
    // SAFETY: pthread_sigmask with a valid set and a NULL old-set pointer.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}
