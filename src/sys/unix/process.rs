//! Child processes on POSIX: a child in a process group of its own, its exit peeked at without
//! reaping it (so a recycled pgid is never signalled), waited for on a pidfd rather than on a
//! timer (§3: disconnect is prompt as well as bounded), and the group's stragglers ended once
//! the leader was reaped.

use super::pipe::{self, OutputPipe};
use crate::sys::types::{Exit, Stop};
use crate::sys::{Command, Spawned};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// See [`crate::sys::Child`].
pub struct Child {
    child: std::process::Child,
    pid: i32,
}

/// See [`crate::sys::ExitWatch`].
pub struct ExitWatch {
    pid: i32,
    /// A pidfd for the leader, opened while it was unreaped (None on kernels without pidfds:
    /// then it looks every millisecond).
    pidfd: Option<OwnedFd>,
}

/// See [`crate::sys::Leftovers`].
pub struct Leftovers {
    pgid: i32,
}

pub fn spawn(command: &Command<'_>) -> io::Result<Spawned> {
    let (child_stdin, stdin, stdin_probe) = pipe::stdin_pipe()?;
    let mut cmd = std::process::Command::new(command.program);
    cmd.args(command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::from(child_stdin))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = command.cwd {
        cmd.current_dir(dir);
    }
    let spawned = cmd.spawn();
    drop(cmd); // closes our copy of the child's read end
    let mut child = spawned?;
    let pid = child.id() as i32;
    let exit = ExitWatch {
        pid,
        pidfd: pidfd_open(pid),
    };
    let stdout = child.stdout.take().map(OwnedFd::from);
    let stderr = child.stderr.take().map(OwnedFd::from);
    let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
        unreachable!("both were piped")
    };
    Ok(Spawned {
        child: Child { child, pid },
        exit,
        stdin,
        stdin_probe,
        stdout: OutputPipe::new(stdout),
        stderr: OutputPipe::new(stderr),
    })
}

impl Child {
    pub fn peek_exit(&self) -> Option<Exit> {
        peek_exit(self.pid)
    }

    pub fn stop_tree(&self, how: Stop) -> bool {
        signal_group(self.pid, signal(how))
    }

    pub fn reap(mut self) -> (Option<Exit>, Leftovers) {
        let exit = self.child.wait().ok().and_then(exit_of);
        (exit, Leftovers { pgid: self.pid })
    }
}

fn signal(how: Stop) -> i32 {
    match how {
        Stop::Ask => libc::SIGTERM,
        Stop::Kill => libc::SIGKILL,
    }
}

/// A reaped child's exit in the words of [`peek_exit`].
fn exit_of(status: std::process::ExitStatus) -> Option<Exit> {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .map(Exit::Code)
        .or_else(|| status.signal().map(Exit::Signal))
}

/// The exit of child `pid` if it has ended, leaving it unreaped (`waitid` with `WNOWAIT`), so
/// its pid and process group stay reserved until the caller reaps it.
fn peek_exit(pid: i32) -> Option<Exit> {
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
fn signal_group(pgid: i32, sig: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill with a negative pid signals a process group; no memory is involved.
    unsafe { libc::kill(-pgid, sig) == 0 }
}

/// A pidfd for child `pid` (Linux 5.3 and later), or None where the kernel has none. Open it
/// while the child is unreaped, so `pid` is certainly ours.
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; no memory
    // is involved.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0 as libc::c_uint) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

impl ExitWatch {
    /// With the pidfd the wake-up is the exit itself (the pidfd turns readable); without one
    /// (an old kernel) it looks every millisecond.
    pub fn wait(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if peek_exit(self.pid).is_some() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match &self.pidfd {
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
                None => std::thread::sleep(left.min(Duration::from_millis(1))),
            }
        }
    }
}

/// Whether process group `pgid` has a member (one we may signal, or one we may not: `EPERM`).
/// One `kill(…, 0)`, no scan of `/proc`.
fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for the group's existence; no memory is involved.
    let r = unsafe { libc::kill(-pgid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Live (not zombie) processes in process group `pgid` other than a process `pgid` itself, from
/// /proc. Called only once `kill(-pgid, 0)` found the group alive after the leader was reaped.
fn group_members(pgid: i32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|pid| *pid != pgid)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    // pid (comm) state ppid pgrp …; comm may hold spaces, so split after ')'.
                    let rest = &s[s.rfind(')')? + 1..];
                    let mut f = rest.split_whitespace();
                    let state = f.next()?;
                    let _ppid = f.next()?;
                    let pgrp: i32 = f.next()?.parse().ok()?;
                    Some(pgrp == pgid && state != "Z")
                })
                .unwrap_or(false)
        })
        .count()
}

impl Leftovers {
    /// Stragglers (§3: no orphans). The group outlives its reaped leader only while it has
    /// members (zombies included), and while it has any the kernel keeps the number allocated,
    /// so it cannot have been recycled: a group found alive now is the child's. One
    /// `kill(-pgid, 0)` says there is none, the common case, instead of reading every
    /// process's /proc stat file; only when there is one does the scan tell live members from
    /// zombies that nobody reaps (a container's pid 1 may not). (Only if every member died
    /// between two checks *and* the pid space wrapped around in that instant could the number
    /// name someone else's group.)
    pub fn end(self) {
        let pgid = self.pgid;
        if group_alive(pgid) && group_members(pgid) > 0 {
            signal_group(pgid, libc::SIGTERM);
            let deadline = Instant::now() + Duration::from_millis(500);
            while group_alive(pgid) && group_members(pgid) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if group_alive(pgid) {
                signal_group(pgid, libc::SIGKILL);
            }
        }
    }
}
