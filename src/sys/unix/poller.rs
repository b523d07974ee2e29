//! The stderr drain's poller on POSIX: one epoll set, level-triggered.

use super::pipe::OutputPipe;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// See [`crate::sys::Poller`].
pub struct Poller {
    epoll: OwnedFd,
}

impl Poller {
    /// A new epoll instance (close-on-exec).
    pub fn new() -> io::Result<Poller> {
        // SAFETY: epoll_create1 takes flags and returns a new descriptor or -1; no memory is
        // involved.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Poller {
            // SAFETY: the descriptor was just created and is owned by nobody else.
            epoll: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Adds `pipe`, readable or hung up, reported with `token`.
    pub fn add(&self, pipe: &OutputPipe, token: usize) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            u64: token as u64,
        };
        // SAFETY: a valid epoll_event; both descriptors are open (the caller owns the pipe).
        if unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                pipe.raw(),
                &mut ev,
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes `pipe` (before it is closed).
    pub fn remove(&self, pipe: &OutputPipe) {
        // SAFETY: a NULL event is allowed for EPOLL_CTL_DEL since Linux 2.6.9; no memory is
        // written.
        unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                pipe.raw(),
                std::ptr::null_mut(),
            )
        };
    }

    /// Waits (without a timeout) for events and appends their tokens to `tokens`.
    pub fn wait(&self, tokens: &mut Vec<usize>) -> io::Result<()> {
        const MAX: usize = 64;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; MAX];
        // SAFETY: `events` has room for MAX entries, which is what the kernel may write.
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                MAX as libc::c_int,
                -1,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        tokens.extend(events[..n as usize].iter().map(|e| e.u64 as usize));
        Ok(())
    }
}
