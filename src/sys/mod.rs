//! The platform layer (docs/module-map.md; docs/windows.md): the one leaf where the operating system is named, so
//! that the transports above it are written once. `unsafe` lives here and in `src/ffi/` only.
//!
//! This file is the interface, the same on every platform; `unix/` implements it for Linux and
//! macOS (their differences inside it); a Windows port adds `windows/` beside it and changes no
//! transport. What the transports get:
//!
//! - a child process ([`spawn`]): the leader of a tree of its own (a POSIX process group), its
//!   exit peeked at without reaping it ([`Child::peek_exit`]) and waited for promptly
//!   ([`ExitWatch`]: a pidfd on Linux, kqueue on macOS), the whole tree asked to stop or killed
//!   ([`Child::stop_tree`]), the leader reaped ([`Child::reap`]) and whatever outlived it ended
//!   ([`Leftovers::end`], contract §3: no orphans);
//! - its pipes: a stdin that can never raise SIGPIPE in the host, with writes bounded by a
//!   deadline ([`StdinWriter`], [`StdinProbe`]), and stdout and stderr ([`OutputPipe`]);
//! - the poller the process-wide stderr drain waits on ([`Poller`]);
//! - the direct HTTP path's sockets ([`net`]: sends without SIGPIPE, bounded waits);
//! - a file only its owner may read, for `auth.store` ([`fs`]);
//! - SIGPIPE blocked on the library's own threads ([`block_sigpipe_on_this_thread`]).

pub mod fs;
pub mod net;
/// The POSIX-only cases (children are `sh` scripts).
#[cfg(all(test, unix))]
mod posix_tests;
/// The cases every platform runs, against the fixture server (Linux and Wine).
#[cfg(test)]
mod tests;
mod types;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

pub use types::{Exit, Stop};

/// What to start: the program (looked up on PATH as the platform does), its arguments, the
/// variables added to the inherited environment, and the working directory.
pub struct Command<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a str>,
}

/// A child just started, and our ends of its three pipes.
pub struct Spawned {
    pub child: Child,
    pub exit: ExitWatch,
    pub stdin: StdinWriter,
    pub stdin_probe: StdinProbe,
    pub stdout: OutputPipe,
    pub stderr: OutputPipe,
}

/// Starts `command` as the leader of a process tree of its own (on POSIX a new process group,
/// pgid = its pid), stdin, stdout and stderr piped to us; our stdin end is non-blocking
/// (best effort: without it a write to a child that stops reading is not bounded).
pub fn spawn(command: &Command<'_>) -> std::io::Result<Spawned> {
    imp::process::spawn(command)
}

/// The leader of a child's process tree, unreaped until [`Child::reap`]: while this exists the
/// leader's id (and on POSIX its process group's) cannot be recycled, so signalling the tree
/// through it never reaches a stranger.
///
/// `peek_exit(&self) -> Option<Exit>`: the leader's exit if it has ended, leaving it unreaped.
/// `stop_tree(&self, Stop) -> bool`: asks every process of the tree to stop ([`Stop::Ask`],
/// SIGTERM) or kills them ([`Stop::Kill`], SIGKILL); true when at least one was reached.
/// `reap(self) -> (Option<Exit>, Leftovers)`: waits for the leader (call it once it has ended
/// or been killed) and releases it; what is left of the tree comes back as [`Leftovers`].
pub use imp::process::Child;

/// Waits for a child's exit without reaping it, at most a given time: `wait(&self, within) ->
/// bool`, true once it has ended. The wake-up is the exit itself where the platform has a way
/// (a pidfd on Linux 5.3+, kqueue's `EVFILT_PROC` on macOS), else a look every millisecond.
/// Only meaningful before [`Child::reap`].
pub use imp::process::ExitWatch;

/// What may be left of a child's tree once its leader was reaped: `end(self)` ends it (on
/// POSIX: the group's live members get SIGTERM, then SIGKILL after 500 ms; zombies that
/// nobody reaps are not waited for).
pub use imp::process::Leftovers;

/// Our write end of a child's stdin: `write_all(&self, buf, tail, deadline, give_up)` writes
/// `buf` then `tail`, waiting at most until `deadline` while the pipe is full and not at all
/// once `give_up` is set (TimedOut past the deadline, BrokenPipe once given up). Dropping it
/// is the child's end of file.
pub use imp::pipe::StdinWriter;

/// A read end of a child's stdin that we keep: while it exists the pipe always has a reader,
/// so no write to it raises SIGPIPE (or fails with EPIPE) whatever the child does.
/// `unread_bytes(&self) -> io::Result<u64>`: what the child has not read yet.
pub use imp::pipe::StdinProbe;

/// Our read end of a child's stdout or stderr: `read_appending(&self, &mut Vec<u8>)` reads
/// once into the vector's spare capacity (never zeroed first), `read(&self, &mut [u8])`,
/// `set_nonblocking(&self)`.
pub use imp::pipe::OutputPipe;

/// A level-triggered poller over [`OutputPipe`]s (the stderr drain's one wait for every
/// child): `new()`, `add(&self, &OutputPipe, token: usize)`, `remove(&self, &OutputPipe)`
/// (before the pipe is closed), `wait(&self, &mut Vec<usize>)` (no timeout; appends the tokens
/// of pipes that are readable or hung up).
pub use imp::poller::Poller;

/// Blocks SIGPIPE for the rest of the calling thread's life: only for threads the library
/// spawned itself (readers, stderr drains, the timer, the HTTP runtime), never for a host
/// thread. Belt and braces: stdin pipes always have a reader ([`StdinProbe`]) and the sockets
/// send without SIGPIPE ([`net::send`]). A no-op where there is no SIGPIPE.
pub use imp::block_sigpipe_on_this_thread;
