//! A child's pipes on POSIX: a stdin whose writes are bounded and can never raise SIGPIPE, and
//! reads of stdout and stderr.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// See [`crate::sys::StdinWriter`].
pub struct StdinWriter(OwnedFd);

/// See [`crate::sys::StdinProbe`].
pub struct StdinProbe(OwnedFd);

/// See [`crate::sys::OutputPipe`].
pub struct OutputPipe(OwnedFd);

/// A pipe for a child's stdin: (read end for the child, write end for us, a second read end
/// that we keep). While we hold a read end the pipe always has a reader, so no write to it
/// can ever raise SIGPIPE in the host (or fail with EPIPE), whatever the child does and
/// without a signal-mask call per write; a dead child is noticed by its stdout instead.
pub(super) fn stdin_pipe() -> io::Result<(OwnedFd, StdinWriter, StdinProbe)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two-element array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot create the stdin pipe: {e}"),
        ));
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let keep = read.try_clone()?;
    // Best effort: without it a write to a child that stops reading is not bounded.
    let _ = set_nonblocking(write.as_raw_fd());
    Ok((read, StdinWriter(write), StdinProbe(keep)))
}

/// Makes `fd` non-blocking, so that a write to a child that stops reading is bounded.
fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns; no memory is involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// How often a waiting writer looks at its `give_up` flag.
const GIVE_UP_CHECK: Duration = Duration::from_millis(50);

/// Waits until `fd` can be written, at most until `deadline`.
fn wait_writable(fd: RawFd, deadline: Instant, give_up: &AtomicBool) -> io::Result<()> {
    loop {
        if give_up.load(Ordering::Acquire) {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the connection is closing",
            ));
        }
        let left = deadline.saturating_duration_since(Instant::now());
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

impl StdinWriter {
    /// Writes `a` then `b` (a message and its newline) with as few `writev` calls as it takes;
    /// a full pipe is waited on until `deadline`, and not at all once `give_up` is set: a
    /// connection that is closing never keeps a caller, or `tn_disconnect`, waiting on a child
    /// that does not read.
    pub fn write_all(
        &self,
        mut a: &[u8],
        mut b: &[u8],
        deadline: Instant,
        give_up: &AtomicBool,
    ) -> io::Result<()> {
        let fd = self.0.as_raw_fd();
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
            // SAFETY: both iovecs describe valid readable slices; `fd` is open (we own it).
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
}

impl StdinProbe {
    /// How many bytes written to the pipe its reader has not read yet.
    pub fn unread_bytes(&self) -> io::Result<u64> {
        rustix::io::ioctl_fionread(&self.0).map_err(io::Error::from)
    }
}

impl OutputPipe {
    pub(super) fn new(fd: OwnedFd) -> OutputPipe {
        OutputPipe(fd)
    }

    /// Reads once into the spare capacity of `buf`, appending; returns how many bytes came (0
    /// at end of file). The buffer is never zeroed first, so a reader's 64 KiB buffer costs
    /// only the pages that messages actually reach (a zeroed one was 16 page faults per server
    /// at connect, and 64 KiB of every server's resident memory, for replies that are mostly a
    /// few hundred bytes).
    pub fn read_appending(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let spare = buf.spare_capacity_mut();
        // SAFETY: `read` writes at most `spare.len()` bytes at `spare`, memory this Vec owns
        // and nobody else references while we hold `&mut buf`.
        let n = unsafe { libc::read(self.0.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        // SAFETY: the kernel initialised the first `n` bytes of the spare capacity (n <= its len).
        unsafe { buf.set_len(buf.len() + n) };
        Ok(n)
    }

    /// Reads once into `buf`.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        rustix::io::read(&self.0, buf).map_err(io::Error::from)
    }

    /// Makes reads return `WouldBlock` instead of waiting (the stderr drain reads a pipe only
    /// when its poller says so, and never blocks on one).
    pub fn set_nonblocking(&self) -> io::Result<()> {
        set_nonblocking(self.0.as_raw_fd())
    }

    pub(super) fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}
