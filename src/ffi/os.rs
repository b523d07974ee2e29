//! The few POSIX calls the transports need, wrapped safely (the crate keeps `unsafe` in
//! `src/ffi/`): a socketpair stdin written with `MSG_NOSIGNAL` (a dead child never raises
//! SIGPIPE in the host), process-group signals, and peeking at a child's exit without reaping
//! it (so a recycled pgid is never signalled).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn sigpipe_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it fully.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        set
    }
}

/// Blocks SIGPIPE for the rest of the calling thread's life: only for threads the library
/// spawned itself (readers, stderr drains, the timer, the HTTP runtime), never for a host
/// thread. A belt to the braces of `MSG_NOSIGNAL` sends and Rust's sockets.
pub fn block_sigpipe_on_this_thread() {
    let set = sigpipe_set();
    // SAFETY: pthread_sigmask with a valid set and a NULL old-set pointer.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Makes `fd` non-blocking, so that a write to a child that stops reading is bounded.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns; no memory is involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until `fd` can be written, at most until `deadline`.
fn wait_writable(fd: RawFd, deadline: std::time::Instant) -> io::Result<()> {
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the server is not reading its stdin",
            ));
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r > 0 {
            return Ok(());
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// A connected pair of UNIX stream sockets for a child's stdin: (ours, the child's). Node's
/// libuv gives every child socketpairs for its stdio the same way, so MCP servers already run
/// on them; unlike a pipe, a socket can be written with `MSG_NOSIGNAL`, so a dead child is an
/// `EPIPE` error and never a SIGPIPE in the host, with no per-write signal-mask calls.
pub fn stdin_socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair fills the two-element array on success.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Only our end writes and only the child's end reads: close the directions not used, so
    // the child's end reads EOF once ours is closed, exactly like a pipe.
    // SAFETY: shutdown on descriptors we own.
    unsafe {
        libc::shutdown(ours.as_raw_fd(), libc::SHUT_RD);
        libc::shutdown(theirs.as_raw_fd(), libc::SHUT_WR);
    }
    Ok((ours, theirs))
}

/// Sends `a` then `b` (a message and its newline) on the socket `fd` with `MSG_NOSIGNAL`, in as
/// few `sendmsg` calls as it takes; when the socket is full (the child is not reading) it waits
/// until `deadline`.
pub fn send_all(
    fd: RawFd,
    mut a: &[u8],
    mut b: &[u8],
    deadline: std::time::Instant,
) -> io::Result<()> {
    while !a.is_empty() || !b.is_empty() {
        let mut iov = [
            libc::iovec {
                iov_base: a.as_ptr() as *mut libc::c_void,
                iov_len: a.len(),
            },
            libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            },
        ];
        // SAFETY: msghdr is plain data; the fields set below describe the iovecs above.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = 2;
        // SAFETY: `msg` points at two iovecs over valid readable slices; `fd` is a socket the
        // caller owns. MSG_NOSIGNAL: a closed peer is EPIPE, not a signal.
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    wait_writable(fd, deadline)?;
                    continue;
                }
                _ => return Err(e),
            }
        }
        let mut n = n as usize;
        let from_a = n.min(a.len());
        a = &a[from_a..];
        n -= from_a;
        b = &b[n.min(b.len())..];
    }
    Ok(())
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exited with status {c}"),
            Exit::Signal(s) => write!(f, "was killed by signal {s}"),
        }
    }
}

/// The exit of child `pid` if it has ended, leaving it unreaped (`waitid` with `WNOWAIT`), so
/// its pid and process group stay reserved until the caller reaps it.
pub fn peek_exit(pid: i32) -> Option<Exit> {
    // SAFETY: siginfo_t is plain data that waitid fills.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer; the flags only observe the child.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: si_pid/si_status are valid to read for SIGCHLD-style siginfo filled by waitid.
    let (spid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if r != 0 || spid == 0 {
        return None;
    }
    Some(match info.si_code {
        libc::CLD_EXITED => Exit::Code(status),
        _ => Exit::Signal(status),
    })
}

/// Sends `sig` to the whole process group `pgid`; true when at least one process got it.
pub fn signal_group(pgid: i32, sig: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill with a negative pid signals a process group; no memory is involved.
    unsafe { libc::kill(-pgid, sig) == 0 }
}

pub use libc::{SIGKILL, SIGTERM};
