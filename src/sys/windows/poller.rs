//! The stderr drain's poller on Windows: one I/O completion port. A pipe given to it is
//! associated with the port under its token and always has one overlapped read under way
//! ([`OutputPipe`]'s polled read); that read's completion is the pipe's readiness, and a read
//! of the pipe takes its bytes and starts the next. (The `polling` crate's IOCP backend waits
//! for sockets only, through AFD, not for pipes; a thread per child's stderr was measured on
//! POSIX to cost about 2% of a connect, so one port serves every child as epoll does there.)

use super::pipe::OutputPipe;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Threading::INFINITE;
use windows_sys::Win32::System::IO::{
    CreateIoCompletionPort, GetQueuedCompletionStatusEx, OVERLAPPED_ENTRY,
};

/// See [`crate::sys::Poller`].
pub struct Poller {
    port: OwnedHandle,
}

impl Poller {
    /// A new completion port, for one waiting thread.
    pub fn new() -> io::Result<Poller> {
        // SAFETY: creating a port with no file; the result is checked.
        let port =
            unsafe { CreateIoCompletionPort(INVALID_HANDLE_VALUE, std::ptr::null_mut(), 0, 1) };
        if port.is_null() {
            return Err(io::Error::last_os_error());
        }
        Ok(Poller {
            // SAFETY: a handle just created and owned by nobody else.
            port: unsafe { OwnedHandle::from_raw_handle(port as RawHandle) },
        })
    }

    /// Adds `pipe` (its completions reported with `token`) and starts its first read.
    pub fn add(&self, pipe: &OutputPipe, token: usize) -> io::Result<()> {
        // SAFETY: both handles are open (the caller owns the pipe); a handle is associated with
        // one port for its life, which is what the drain does.
        let r = unsafe {
            CreateIoCompletionPort(pipe.raw(), self.port.as_raw_handle() as HANDLE, token, 0)
        };
        if r.is_null() {
            return Err(io::Error::last_os_error());
        }
        pipe.start_polling(&self.port, token)
    }

    /// Removes `pipe` (before it is closed): its read is cancelled and waited for. A
    /// completion already queued for it still wakes [`Poller::wait`] with its token, which the
    /// drain no longer knows (tokens are never reused).
    pub fn remove(&self, pipe: &OutputPipe) {
        pipe.stop_polling();
    }

    /// Waits (without a timeout) for completions and appends their tokens to `tokens`.
    pub fn wait(&self, tokens: &mut Vec<usize>) -> io::Result<()> {
        const MAX: usize = 64;
        // SAFETY: OVERLAPPED_ENTRY is plain data.
        let mut entries: [OVERLAPPED_ENTRY; MAX] = unsafe { std::mem::zeroed() };
        let mut n = 0u32;
        // SAFETY: `entries` has room for MAX entries, which is what the port may write; not
        // alertable.
        let ok = unsafe {
            GetQueuedCompletionStatusEx(
                self.port.as_raw_handle() as HANDLE,
                entries.as_mut_ptr(),
                MAX as u32,
                &mut n,
                INFINITE,
                0,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        tokens.extend(entries[..n as usize].iter().map(|e| e.lpCompletionKey));
        Ok(())
    }
}
