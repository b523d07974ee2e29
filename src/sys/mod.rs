//! The few POSIX calls the transports need, wrapped safely (`unsafe` lives here and in
//! `src/ffi/` only): a stdin pipe that can never raise SIGPIPE, bounded writes, process-group
//! signals, peeking at a child's exit without reaping it (so a recycled pgid is never
//! signalled), waiting for that exit on a pidfd rather than on a timer (§3: disconnect is
//! prompt as well as bounded), the epoll set every child's stderr is drained from, and peeking
//! at an idle HTTP connection.

#![allow(unsafe_code)]

pub mod net;

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

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
/// thread. Belt and braces: stdin pipes always have a reader ([`stdin_pipe`]) and Rust's
/// sockets send with `MSG_NOSIGNAL`.
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

/// How often a waiting writer looks at its `give_up` flag.
const GIVE_UP_CHECK: std::time::Duration = std::time::Duration::from_millis(50);

/// Waits until `fd` can be written, at most until `deadline`.
fn wait_writable(fd: RawFd, deadline: std::time::Instant, give_up: &AtomicBool) -> io::Result<()> {
    loop {
        if give_up.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the connection is closing",
            ));
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the server is not reading its stdin",
            ));
        }
        let left = left.min(GIVE_UP_CHECK);
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

/// Writes `a` then `b` (a message and its newline) with as few `writev` calls as it takes; on
/// a non-blocking `fd` a full pipe is waited on until `deadline`.
fn write_loop(
    give_up: &AtomicBool,
    fd: RawFd,
    mut a: &[u8],
    mut b: &[u8],
    deadline: std::time::Instant,
) -> io::Result<()> {
    while !a.is_empty() || !b.is_empty() {
        let iov = [
            libc::iovec {
                iov_base: a.as_ptr() as *mut libc::c_void,
                iov_len: a.len(),
            },
            libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            },
        ];
        // SAFETY: both iovecs describe valid readable slices; `fd` is an open descriptor the
        // caller owns.
        let n = unsafe { libc::writev(fd, iov.as_ptr(), 2) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    wait_writable(fd, deadline, give_up)?;
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

/// Writes all of `buf` and then `tail` to the non-blocking `fd`, waiting at most until
/// `deadline` while the pipe is full, and not at all once `give_up` is set: a connection that
/// is closing never keeps a caller, or `tn_disconnect`, waiting on a child that does not read.
pub fn write_all(
    fd: RawFd,
    buf: &[u8],
    tail: &[u8],
    deadline: std::time::Instant,
    give_up: &AtomicBool,
) -> io::Result<()> {
    write_loop(give_up, fd, buf, tail, deadline)
}

/// Reads once from `fd` into the spare capacity of `buf`, appending; returns how many bytes
/// came (0 at end of file). The buffer is never zeroed first, so a reader's 64 KiB buffer costs
/// only the pages that messages actually reach (a zeroed one was 16 page faults per server at
/// connect, and 64 KiB of every server's resident memory, for replies that are mostly a few
/// hundred bytes).
pub fn read_appending(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    // SAFETY: `read` writes at most `spare.len()` bytes at `spare`, memory this Vec owns and
    // nobody else references while we hold `&mut buf`.
    let n = unsafe { libc::read(fd, spare.as_mut_ptr().cast(), spare.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: the kernel initialised the first `n` bytes of the spare capacity (n <= its len).
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// A pipe for a child's stdin: (read end for the child, write end for us, a second read end
/// that we keep). While we hold a read end the pipe always has a reader, so no write to it
/// can ever raise SIGPIPE in the host (or fail with EPIPE), whatever the child does and
/// without a signal-mask call per write; a dead child is noticed by its stdout instead.
pub fn stdin_pipe() -> io::Result<(OwnedFd, OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two-element array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let keep = read.try_clone()?;
    Ok((read, write, keep))
}

/// How many bytes written to a pipe its reader has not read yet, seen through a read end of
/// it (the stdin pipe's end we keep, [`stdin_pipe`]).
pub fn unread_bytes(read_end: &OwnedFd) -> io::Result<u64> {
    rustix::io::ioctl_fionread(read_end).map_err(io::Error::from)
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

/// A pidfd for child `pid` (Linux 5.3 and later), or None where the kernel has none. Open it
/// while the child is unreaped, so `pid` is certainly ours.
pub fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; no memory
    // is involved.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Waits until child `pid` has ended (it stays unreaped), at most `within`; true when it has.
/// With its `pidfd` the wake-up is the exit itself (the pidfd turns readable); without one
/// (an old kernel) it looks every millisecond.
pub fn wait_exit(pid: i32, pidfd: Option<&OwnedFd>, within: std::time::Duration) -> bool {
    use std::os::fd::AsRawFd;
    let deadline = std::time::Instant::now() + within;
    loop {
        if peek_exit(pid).is_some() {
            return true;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        match pidfd {
            Some(fd) => {
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = left.as_micros().div_ceil(1000).clamp(1, i32::MAX as u128) as i32;
                // SAFETY: one valid pollfd; the result is only a hint, peek_exit decides.
                unsafe { libc::poll(&mut p, 1, ms) };
            }
            None => std::thread::sleep(left.min(std::time::Duration::from_millis(1))),
        }
    }
}

/// Whether process group `pgid` has a member (one we may signal, or one we may not: `EPERM`).
/// One `kill(…, 0)`, no scan of `/proc`.
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for the group's existence; no memory is involved.
    let r = unsafe { libc::kill(-pgid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A new epoll instance (close-on-exec): the one descriptor the stderr drain waits on for every
/// child's stderr (transport/stderr.rs).
pub fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 takes flags and returns a new descriptor or -1; no memory is involved.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds `fd` to `epoll`, readable or hung up, reported with `token`.
pub fn epoll_add(epoll: RawFd, fd: RawFd, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
        u64: token,
    };
    // SAFETY: a valid epoll_event; both descriptors are open (the caller owns them).
    if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Removes `fd` from `epoll` (before `fd` is closed).
pub fn epoll_remove(epoll: RawFd, fd: RawFd) {
    // SAFETY: a NULL event is allowed for EPOLL_CTL_DEL since Linux 2.6.9; no memory is written.
    unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
}

/// Waits (without a timeout) for events on `epoll` and appends their tokens to `tokens`.
pub fn epoll_wait(epoll: RawFd, tokens: &mut Vec<u64>) -> io::Result<()> {
    const MAX: usize = 64;
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; MAX];
    // SAFETY: `events` has room for MAX entries, which is what the kernel may write.
    let n = unsafe { libc::epoll_wait(epoll, events.as_mut_ptr(), MAX as libc::c_int, -1) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    tokens.extend(events[..n as usize].iter().map(|e| e.u64));
    Ok(())
}

pub use libc::{SIGKILL, SIGTERM};
