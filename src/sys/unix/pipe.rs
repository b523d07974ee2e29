//! A child's pipes on POSIX: a stdin whose writes are bounded and can never raise SIGPIPE, and
//! reads of stdout and stderr, through rustix. Every end is close-on-exec: `pipe2` on Linux,
//! `pipe` then `FD_CLOEXEC` where `pipe2` is missing (macOS).

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, OwnedFd};
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
    let why = |e: io::Error| io::Error::new(e.kind(), format!("cannot create the stdin pipe: {e}"));
    let (read, write) = cloexec_pipe().map_err(why)?;
    let keep = read.try_clone().map_err(why)?;
    // Best effort: without it a write to a child that stops reading is not bounded.
    let _ = rustix::io::ioctl_fionbio(&write, true);
    Ok((read, StdinWriter(write), StdinProbe(keep)))
}

/// A pipe whose two ends are close-on-exec, so no other child of the host inherits them: in one
/// call where `pipe2` exists, else (macOS) `pipe` then `FD_CLOEXEC` on each end. (Between the two
/// a fork in another host thread could inherit them; std's own pipes on macOS have the same gap.)
fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(not(any(target_vendor = "apple", target_os = "aix", target_os = "haiku")))]
    {
        Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
    }
    #[cfg(any(target_vendor = "apple", target_os = "aix", target_os = "haiku"))]
    {
        use rustix::io::{fcntl_setfd, FdFlags};
        let (read, write) = rustix::pipe::pipe()?;
        fcntl_setfd(&read, FdFlags::CLOEXEC)?;
        fcntl_setfd(&write, FdFlags::CLOEXEC)?;
        Ok((read, write))
    }
}

/// How often a waiting writer looks at its `give_up` flag.
const GIVE_UP_CHECK: Duration = Duration::from_millis(50);

/// Waits until `fd` can be written, at most until `deadline`.
fn wait_writable(fd: impl AsFd, deadline: Instant, give_up: &AtomicBool) -> io::Result<()> {
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
        let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
        match rustix::event::poll(&mut fds, Some(&timespec(left.min(GIVE_UP_CHECK)))) {
            Ok(n) if n > 0 => return Ok(()),
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// `d` for poll(2) (at least a millisecond: a shorter wait would spin).
pub(super) fn timespec(d: Duration) -> Timespec {
    let d = d.max(Duration::from_millis(1));
    Timespec {
        tv_sec: d.as_secs().min(i32::MAX as u64) as _,
        tv_nsec: d.subsec_nanos() as _,
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
        while !a.is_empty() || !b.is_empty() {
            let mut n = match rustix::io::writev(&self.0, &[IoSlice::new(a), IoSlice::new(b)]) {
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => {
                    wait_writable(&self.0, deadline, give_up)?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
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
        rustix::io::read(&self.0, rustix::buffer::spare_capacity(buf)).map_err(io::Error::from)
    }

    /// Reads once into `buf`.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        rustix::io::read(&self.0, buf).map_err(io::Error::from)
    }

    /// Makes reads return `WouldBlock` instead of waiting (the stderr drain reads a pipe only
    /// when its poller says so, and never blocks on one).
    pub fn set_nonblocking(&self) -> io::Result<()> {
        rustix::io::ioctl_fionbio(&self.0, true).map_err(io::Error::from)
    }
}

impl AsFd for OutputPipe {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::{fcntl_getfd, FdFlags};

    /// Every end we keep is close-on-exec (`pipe2` on Linux; `pipe` then `FD_CLOEXEC` where it
    /// is missing), so no other child of the host inherits a child's stdin and holds it open.
    #[test]
    fn our_ends_are_close_on_exec() {
        let (child_end, writer, probe) = stdin_pipe().unwrap();
        for fd in [child_end.as_fd(), writer.0.as_fd(), probe.0.as_fd()] {
            assert!(fcntl_getfd(fd).unwrap().contains(FdFlags::CLOEXEC));
        }
    }
}
