//! Child processes on POSIX: a child in a process group of its own, its exit peeked at without
//! reaping it (so a recycled pgid is never signalled), waited for on an event rather than on a
//! timer (§3: disconnect is prompt as well as bounded), and the group's stragglers ended once
//! the leader was reaped. Linux and macOS differ in two places only, each behind one function:
//! how the exit is waited for ([`ExitWatch`]: a pidfd, kqueue's `EVFILT_PROC`) and how a
//! group's live members are counted ([`live_members`]: /proc, libproc).

use super::pipe::{self, OutputPipe};
use crate::sys::types::{Exit, Stop};
use crate::sys::{Command, Spawned};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// See [`crate::sys::Child`].
pub struct Child {
    child: std::process::Child,
    pid: Pid,
}

/// See [`crate::sys::ExitWatch`].
pub struct ExitWatch {
    pid: Pid,
    /// The exit as an event, registered while the leader was unreaped (so the pid is ours);
    /// None where that failed or the platform has none: then it looks every millisecond.
    event: Option<ExitEvent>,
}

/// See [`crate::sys::Leftovers`].
pub struct Leftovers {
    pgid: Pid,
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
    let pid = Pid::from_child(&child);
    let exit = ExitWatch {
        pid,
        event: ExitEvent::new(pid),
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        unreachable!("both were piped")
    };
    Ok(Spawned {
        child: Child { child, pid },
        exit,
        stdin,
        stdin_probe,
        stdout: OutputPipe::new(OwnedFd::from(stdout)),
        stderr: OutputPipe::new(OwnedFd::from(stderr)),
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

fn signal(how: Stop) -> Signal {
    match how {
        Stop::Ask => Signal::TERM,
        Stop::Kill => Signal::KILL,
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
fn peek_exit(pid: Pid) -> Option<Exit> {
    let flags = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    let status = rustix::process::waitid(WaitId::Pid(pid), flags).ok()??;
    status
        .exit_status()
        .map(Exit::Code)
        .or_else(|| status.terminating_signal().map(Exit::Signal))
}

/// Sends `sig` to the whole process group `pgid`; true when at least one process got it.
fn signal_group(pgid: Pid, sig: Signal) -> bool {
    !pgid.is_init() && rustix::process::kill_process_group(pgid, sig).is_ok()
}

/// Whether process group `pgid` has a member (one we may signal, or one we may not: `EPERM`).
/// One `kill(…, 0)`, no listing of processes.
fn group_alive(pgid: Pid) -> bool {
    if pgid.is_init() {
        return false;
    }
    match rustix::process::test_kill_process_group(pgid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

impl ExitWatch {
    /// With an exit event the wake-up is the exit itself; without one it looks every
    /// millisecond. The event only wakes: the peek decides.
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
            match &self.event {
                Some(e) => e.wait(left),
                None => std::thread::sleep(left.min(Duration::from_millis(1))),
            }
        }
    }
}

/// A child's exit as an event on Linux: a pidfd (Linux 5.3 and later), which turns readable
/// when the process ends.
#[cfg(target_os = "linux")]
struct ExitEvent(OwnedFd);

#[cfg(target_os = "linux")]
impl ExitEvent {
    /// Opened while the child is unreaped, so `pid` is certainly ours.
    fn new(pid: Pid) -> Option<ExitEvent> {
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
            .ok()
            .map(ExitEvent)
    }

    fn wait(&self, within: Duration) {
        use rustix::event::{PollFd, PollFlags};
        let mut fds = [PollFd::new(&self.0, PollFlags::IN)];
        let _ = rustix::event::poll(&mut fds, Some(&pipe::timespec(within)));
    }
}

/// A child's exit as an event on Apple platforms: kqueue's `EVFILT_PROC` with
/// `NOTE_EXIT` (through `polling`), which fires once when the process ends. Once it has fired
/// the wait looks every millisecond, so an exit that `waitid` does not show yet at that instant
/// is still seen promptly (the event cannot fire twice).
#[cfg(target_vendor = "apple")]
struct ExitEvent {
    poller: polling::Poller,
    fired: std::sync::atomic::AtomicBool,
}

#[cfg(target_vendor = "apple")]
impl ExitEvent {
    /// Registered while the child is unreaped, so `pid` is certainly ours (a child that has
    /// already exited may refuse it: then the caller looks every millisecond).
    fn new(pid: Pid) -> Option<ExitEvent> {
        use polling::os::kqueue::{PollerKqueueExt, Process, ProcessOps};
        let poller = polling::Poller::new().ok()?;
        // SAFETY: `pid` is our own child, unreaped (spawn calls this before anyone can reap
        // it); the filter is deleted with the poller, which lives no longer than ExitWatch.
        let filter = unsafe { Process::from_pid(pid.as_raw_nonzero(), ProcessOps::Exit) };
        poller
            .add_filter(filter, 0, polling::PollMode::Oneshot)
            .ok()?;
        Some(ExitEvent {
            poller,
            fired: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn wait(&self, within: Duration) {
        use std::sync::atomic::Ordering;
        if self.fired.load(Ordering::Acquire) {
            return std::thread::sleep(within.min(Duration::from_millis(1)));
        }
        let mut events = polling::Events::with_capacity(std::num::NonZeroUsize::MIN);
        if self.poller.wait(&mut events, Some(within)).is_ok() && !events.is_empty() {
            self.fired.store(true, Ordering::Release);
        }
    }
}

/// Elsewhere: no event; the caller looks every millisecond.
#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
struct ExitEvent;

#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
impl ExitEvent {
    fn new(_pid: Pid) -> Option<ExitEvent> {
        None
    }

    fn wait(&self, _within: Duration) {}
}

/// Live (not zombie) processes in process group `pgid` other than a process `pgid` itself,
/// from /proc. Called only once `kill(-pgid, 0)` found the group alive after the leader was
/// reaped.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn live_members(pgid: Pid) -> usize {
    let pgid = pgid.as_raw_nonzero().get();
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

/// Live (not zombie) processes in process group `pgid` other than a process `pgid` itself, on
/// macOS (no /proc): the group's pids from libproc (`proc_listpgrppids`), each one's state from
/// `proc_pidinfo`. A member whose state cannot be read for another reason than being gone
/// counts as live (the caller then signals and waits at most 500 ms).
#[cfg(target_os = "macos")]
fn live_members(pgid: Pid) -> usize {
    use std::mem::size_of;
    let pgid = pgid.as_raw_nonzero().get();
    // Room for every member the kernel reports now, and some more that may appear meanwhile.
    // SAFETY: a NULL buffer asks only for the size needed; nothing is written.
    let need = unsafe { libc::proc_listpgrppids(pgid, std::ptr::null_mut(), 0) };
    let mut pids: Vec<libc::pid_t> = vec![0; need.max(0) as usize + 16];
    let bytes = (pids.len() * size_of::<libc::pid_t>()).min(i32::MAX as usize) as libc::c_int;
    // SAFETY: `pids` has room for `bytes` bytes, which is all the kernel may write.
    let n = unsafe { libc::proc_listpgrppids(pgid, pids.as_mut_ptr().cast(), bytes) };
    if n <= 0 {
        // libproc says 0 for a failed listing as well as an empty one, and the caller has just
        // seen the group alive: someone counts as live (the caller signals, and stops waiting
        // as soon as `kill(-pgid, 0)` finds the group gone).
        return 1;
    }
    pids.truncate((n as usize).min(pids.len()));
    pids.iter()
        .filter(|&&pid| pid != pgid && pid > 0)
        .filter(|&&pid| {
            // SAFETY: proc_bsdshortinfo is plain data that proc_pidinfo fills.
            let mut info: libc::proc_bsdshortinfo = unsafe { std::mem::zeroed() };
            let size = size_of::<libc::proc_bsdshortinfo>() as libc::c_int;
            // SAFETY: `info` is a valid buffer of `size` bytes for this flavor.
            let got = unsafe {
                libc::proc_pidinfo(
                    pid,
                    libc::PROC_PIDT_SHORTBSDINFO,
                    0,
                    (&mut info as *mut libc::proc_bsdshortinfo).cast(),
                    size,
                )
            };
            if got == size {
                info.pbsi_pgid == pgid as u32 && info.pbsi_status != libc::SZOMB
            } else if got <= 0 {
                // Gone since the listing (ESRCH) is not live; not ours to read (EPERM) may be.
                io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
            } else {
                true
            }
        })
        .count()
}

/// Elsewhere: no way to list a group here, so a group that is alive counts as having a live
/// member (the caller signals it and waits at most 500 ms for it to be gone).
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
fn live_members(pgid: Pid) -> usize {
    usize::from(group_alive(pgid))
}

impl Leftovers {
    /// Stragglers (§3: no orphans), the same steps on every POSIX system. The group outlives
    /// its reaped leader only while it has members (zombies included), and while it has any
    /// the kernel keeps the number allocated, so it cannot have been recycled: a group found
    /// alive now is the child's. One `kill(-pgid, 0)` says there is none, the common case,
    /// instead of listing processes; only when there is one does the listing tell live members
    /// from zombies that nobody reaps (a container's pid 1 may not). (Only if every member
    /// died between two checks *and* the pid space wrapped around in that instant could the
    /// number name someone else's group.)
    pub fn end(self) {
        let pgid = self.pgid;
        if group_alive(pgid) && live_members(pgid) > 0 {
            signal_group(pgid, Signal::TERM);
            let deadline = Instant::now() + Duration::from_millis(500);
            while group_alive(pgid) && live_members(pgid) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if group_alive(pgid) {
                signal_group(pgid, Signal::KILL);
            }
        }
    }
}

/// Whether process `pid` exists and has not ended (a zombie counts as ended): on Linux its
/// `/proc` state, on macOS its libproc status, elsewhere `kill(pid, 0)` (which cannot tell a
/// zombie). Tests ask it of a child's descendants.
#[cfg(test)]
pub fn running(pid: u32) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                let state = s[s.rfind(')')? + 1..].split_whitespace().next()?.to_owned();
                Some(state != "Z" && state != "X")
            })
            .unwrap_or(false)
    }
    #[cfg(target_os = "macos")]
    {
        let size = std::mem::size_of::<libc::proc_bsdshortinfo>() as libc::c_int;
        // SAFETY: proc_bsdshortinfo is plain data that proc_pidinfo fills.
        let mut info: libc::proc_bsdshortinfo = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid buffer of `size` bytes for this flavor.
        let got = unsafe {
            libc::proc_pidinfo(
                pid as libc::c_int,
                libc::PROC_PIDT_SHORTBSDINFO,
                0,
                (&mut info as *mut libc::proc_bsdshortinfo).cast(),
                size,
            )
        };
        got == size && info.pbsi_status != libc::SZOMB
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
    {
        Pid::from_raw(pid as i32).is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{spawn, Command, Spawned};

    fn sh(script: &str) -> Spawned {
        let args = ["-c".to_string(), script.to_string()];
        spawn(&Command {
            program: "sh",
            args: &args,
            env: &[],
            cwd: None,
        })
        .unwrap()
    }

    fn first_line(s: &Spawned) -> String {
        let mut buf = Vec::with_capacity(256);
        while !buf.contains(&b'\n') && s.stdout.read_appending(&mut buf).unwrap() > 0 {}
        String::from_utf8(buf)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    }

    /// The straggler path (§3): the leader exits and leaves a grandchild in its group; once the
    /// leader is reaped, `end` finds it by listing the group (/proc on Linux, libproc on macOS)
    /// and ends it.
    #[test]
    fn leftovers_end_a_grandchild_the_leader_left_behind() {
        let s = sh("sleep 60 </dev/null >/dev/null 2>&1 & echo $!");
        let grandchild: i32 = first_line(&s).parse().unwrap();
        assert!(s.exit.wait(Duration::from_secs(10)));
        let pgid = s.child.pid;
        let (exit, leftovers) = s.child.reap();
        assert_eq!(exit, Some(Exit::Code(0)));
        assert!(group_alive(pgid), "the grandchild keeps the group");
        assert_eq!(
            live_members(pgid),
            1,
            "one live member: the grandchild {grandchild}"
        );
        let t0 = Instant::now();
        leftovers.end();
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert_eq!(live_members(pgid), 0, "the grandchild was ended");
    }

    /// A member that is a zombie nobody reaps is not waited for: the leader `exec`s a program
    /// that never reaps the child the shell left (it stays a zombie in the group).
    #[test]
    fn zombies_are_not_live_members() {
        let s = sh("sleep 0 & exec sleep 30");
        let pgid = s.child.pid;
        let deadline = Instant::now() + Duration::from_secs(10);
        // The zombie is in the group while the leader lives; only the leader is alive.
        while live_members(pgid) > 0 {
            assert!(
                Instant::now() < deadline,
                "the short-lived member never ended"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(group_alive(pgid));
        assert!(s.child.stop_tree(Stop::Kill));
        assert!(s.exit.wait(Duration::from_secs(10)));
        let (_, leftovers) = s.child.reap();
        let t0 = Instant::now();
        leftovers.end();
        assert!(
            t0.elapsed() < Duration::from_millis(400),
            "no 500 ms wait for zombies"
        );
    }
}
