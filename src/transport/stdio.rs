//! stdio transport (contract §5): a child in its own process group, newline-delimited JSON-RPC
//! on stdin/stdout, one reader thread that files every line through [`Inbound`], stderr drained
//! continuously into a bounded tail (by the process-wide drain, [`super::stderr`]), and a
//! bounded shutdown that leaves no zombie or orphan.

use super::stderr::{self, Drained, StderrTail};
use super::Transport;
use crate::request::RequestError;
use crate::sys as os;
use crate::transport::Inbound;
use crate::transport::Outgoing;
use crate::util::lock;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio as Pipe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running stdio server.
pub struct StdioTransport {
    /// Our write end of the child's stdin; None once closed.
    stdin: Mutex<Option<OwnedFd>>,
    /// A read end of that pipe we keep open, so writes never raise SIGPIPE ([`os::stdin_pipe`]).
    keep_reader: Mutex<Option<OwnedFd>>,
    child: Mutex<Option<Child>>,
    /// The leader's exit as recorded by whoever reaped it (shutdown), set in the same critical
    /// section of `child` that takes the child: `child` None means this is final. The reader's
    /// EOF can come after the reap (another process held stdout, or it just lost the race), and
    /// a reaped pid can no longer be peeked (§3: the failure still carries the exit status).
    reaped: Mutex<Option<os::Exit>>,
    pid: i32,
    /// A pidfd for the leader, opened while it was unreaped: disconnect waits for the exit on
    /// it instead of on a timer (None on kernels without pidfds: then it polls every ms).
    pidfd: Option<OwnedFd>,
    stderr: Arc<StderrTail>,
    /// The child's stderr in the drain (None once shutdown has let it go).
    stderr_drain: Mutex<Option<Drained>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// How many of `threads` and of the stderr drain have ended, and a wake-up when one does
    /// (shutdown waits on it).
    finished: Arc<(Mutex<usize>, Condvar)>,
    /// Bounds one write: a child that stops reading its stdin cannot hang a caller.
    write_timeout: Duration,
    /// Set when the connection starts closing: writers stop waiting for a full pipe.
    closing: AtomicBool,
}

impl StdioTransport {
    /// Writes one line, bounded by the server's timeout (a child that stops reading its stdin
    /// cannot hang a caller).
    fn write_line(&self, message: &str) -> Result<(), String> {
        let guard = lock(&self.stdin);
        let Some(stdin) = guard.as_ref() else {
            return Err("stdin is closed".into());
        };
        let deadline = Instant::now() + self.write_timeout;
        match os::write_all(
            stdin.as_raw_fd(),
            message.as_bytes(),
            b"\n",
            deadline,
            &self.closing,
        ) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                // Part of a line may be in the pipe: nothing more can be framed on it.
                drop(guard);
                lock(&self.stdin).take();
                Err(format!(
                    "the server has not read its stdin for {} ms",
                    self.write_timeout.as_millis()
                ))
            }
            Err(e) => Err(format!("writing to the server failed: {e}")),
        }
    }
}

/// Starts `command` with `env` added and `cwd`, wired to `conn`. The reader fails `conn` when
/// stdout ends, with the exit status and stderr tail.
pub fn spawn(
    server: &str,
    command: &[String],
    env: &[(String, String)],
    cwd: Option<&str>,
    max_message_bytes: usize,
    write_timeout: Duration,
    conn: &Arc<dyn Inbound>,
) -> Result<Arc<StdioTransport>, String> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| "empty `command`".to_string())?;
    let (child_stdin, stdin, keep_reader) =
        os::stdin_pipe().map_err(|e| format!("cannot create the stdin pipe: {e}"))?;
    // Best effort: without it a write to a child that stops reading is not bounded.
    let _ = os::set_nonblocking(stdin.as_raw_fd());
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Pipe::from(child_stdin))
        .stdout(Pipe::piped())
        .stderr(Pipe::piped())
        .process_group(0);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let spawned = cmd.spawn();
    drop(cmd); // closes our copy of the child's read end
    let mut child = spawned.map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let pid = child.id() as i32;
    let pidfd = os::pidfd_open(pid);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let t = Arc::new(StdioTransport {
        stdin: Mutex::new(Some(stdin)),
        keep_reader: Mutex::new(Some(keep_reader)),
        child: Mutex::new(Some(child)),
        reaped: Mutex::new(None),
        pid,
        pidfd,
        stderr: Arc::new(StderrTail::default()),
        stderr_drain: Mutex::new(None),
        threads: Mutex::new(Vec::new()),
        finished: Arc::default(),
        write_timeout,
        closing: AtomicBool::new(false),
    });
    if let Err(e) = t.start_threads(server, stdout, stderr, max_message_bytes, conn) {
        // A child nobody reads would linger: end it now.
        t.shutdown(Duration::ZERO);
        return Err(e);
    }
    Ok(t)
}

impl StdioTransport {
    fn start_threads(
        self: &Arc<Self>,
        server: &str,
        stdout: Option<std::process::ChildStdout>,
        stderr: Option<std::process::ChildStderr>,
        max_message_bytes: usize,
        conn: &Arc<dyn Inbound>,
    ) -> Result<(), String> {
        let t = self;
        let mut threads = Vec::new();
        if let Some(err) = stderr {
            let on_end = Box::new(Finished(t.finished.clone()));
            let drained = stderr::drain(OwnedFd::from(err), t.stderr.clone(), on_end)?;
            *lock(&t.stderr_drain) = Some(drained);
        }
        if let Some(out) = stdout {
            let conn = conn.clone();
            let me = t.clone();
            let finished = Finished(t.finished.clone());
            let h = crate::util::spawn(format!("tn-reader-{server}"), move || {
                let _finished = finished;
                let c = conn.clone();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    me.read_loop(out, conn, max_message_bytes)
                }));
                if r.is_err() {
                    c.fail_all(RequestError::Lost(
                        "internal error: the reader thread panicked (a bug in toolnexus)".into(),
                    ));
                }
            })
            .map_err(|e| format!("cannot start the reader thread: {e}"))?;
            threads.push(h);
        }
        *lock(&t.threads) = threads;
        Ok(())
    }

    fn read_loop(&self, out: std::process::ChildStdout, conn: Arc<dyn Inbound>, max: usize) {
        let fd = out.as_raw_fd(); // `out` stays open until this function returns
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        let mut line: Vec<u8> = Vec::new();
        let handle = |l: &[u8]| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            if !l.iter().all(u8::is_ascii_whitespace) {
                conn.message(l, None);
            }
        };
        loop {
            buf.clear();
            let n = match os::read_appending(fd, &mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let mut chunk = &buf[..n];
            while let Some(pos) = chunk.iter().position(|&b| b == b'\n') {
                if line.is_empty() {
                    if pos > max {
                        return self.too_long(&*conn, max);
                    }
                    handle(&chunk[..pos]);
                } else {
                    if line.len() + pos > max {
                        return self.too_long(&*conn, max);
                    }
                    line.extend_from_slice(&chunk[..pos]);
                    handle(&line);
                    line.clear();
                    line.shrink_to(1 << 20);
                }
                chunk = &chunk[pos + 1..];
            }
            if line.len() + chunk.len() > max {
                return self.too_long(&*conn, max);
            }
            line.extend_from_slice(chunk);
        }
        conn.fail_all(RequestError::Lost(self.eof_message()));
    }

    fn too_long(&self, conn: &dyn Inbound, max: usize) {
        conn.fail_all(RequestError::Lost(format!(
            "the server sent a message longer than maxMessageBytes ({max} bytes); the connection was closed"
        )));
        // Stop the child from blocking on a pipe nobody reads; shutdown reaps it later. Signal
        // only while the leader is unreaped (the child lock held), so its pgid is still ours.
        if lock(&self.child).is_some() {
            os::signal_group(self.pid, os::SIGKILL);
        }
        self.closing.store(true, Ordering::Release);
        lock(&self.stdin).take();
    }

    /// The leader's exit as far as known now, and whether it has been reaped (then that is all
    /// there will ever be). Peeks only while the leader is unreaped (its child lock held): a
    /// reaped pid may be reused.
    fn exit_now(&self) -> (Option<os::Exit>, bool) {
        let child = lock(&self.child);
        if child.is_some() {
            (os::peek_exit(self.pid), false)
        } else {
            (*lock(&self.reaped), true)
        }
    }

    /// Why stdout ended: waits briefly for the exit status and the last stderr lines. Once
    /// the connection is closing or shutdown has reaped the child it waits no more: nobody
    /// waits for this text then, and shutdown waits for this thread (§3: disconnect is bounded
    /// and prompt).
    fn eof_message(&self) -> String {
        let deadline = Instant::now() + Duration::from_millis(500);
        let mut exit = None;
        loop {
            let (now, reaped) = self.exit_now();
            exit = exit.or(now);
            let stderr_done = self.stderr.done.load(Ordering::Acquire);
            if reaped
                || self.closing.load(Ordering::Acquire)
                || (exit.is_some() && stderr_done)
                || Instant::now() >= deadline
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut msg = match exit {
            Some(e) => format!("the server process {e}"),
            None => "the server closed its stdout".to_string(),
        };
        let tail = self.stderr.tail();
        if !tail.is_empty() {
            msg.push_str("; stderr: ");
            msg.push_str(&tail);
        }
        msg
    }

    /// Waits for the leader's exit (unreaped), at most `within`: on its pidfd, so a child that
    /// exits on stdin EOF is seen as soon as it is gone.
    fn wait_exit(&self, within: Duration) -> bool {
        os::wait_exit(self.pid, self.pidfd.as_ref(), within)
    }
}

/// Counts the reader thread or the child's stderr as ended when dropped (a panic included)
/// and wakes shutdown.
struct Finished(Arc<(Mutex<usize>, Condvar)>);

impl Drop for Finished {
    fn drop(&mut self) {
        *lock(&self.0 .0) += 1;
        self.0 .1.notify_all();
    }
}

/// A reaped child's exit in the words of [`os::peek_exit`].
fn exit_of(status: std::process::ExitStatus) -> Option<os::Exit> {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .map(os::Exit::Code)
        .or_else(|| status.signal().map(os::Exit::Signal))
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

impl Transport for StdioTransport {
    fn send(&self, msg: &Outgoing<'_>) -> Result<(), String> {
        self.write_line(msg.text)
    }

    fn peer_read_all(&self) -> Option<bool> {
        let keep = lock(&self.keep_reader);
        Some(os::unread_bytes(keep.as_ref()?).ok()? == 0)
    }

    fn begin_close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    fn shutdown(&self, grace: Duration) {
        self.closing.store(true, Ordering::Release);
        // A writer blocked on a full pipe holds the lock; then the signals below unblock it.
        if let Ok(mut g) = self.stdin.try_lock() {
            g.take();
        }
        if !self.wait_exit(grace) {
            os::signal_group(self.pid, os::SIGTERM);
            if !self.wait_exit(Duration::from_secs(1)) {
                os::signal_group(self.pid, os::SIGKILL);
                self.wait_exit(Duration::from_secs(2));
            }
        }
        {
            // Reap and record in one critical section of `child`, so that a reader that finds
            // no child finds the exit recorded ([`Self::exit_now`]).
            let mut child = lock(&self.child);
            if let Some(mut c) = child.take() {
                *lock(&self.reaped) = c.wait().ok().and_then(exit_of);
            }
        }
        // Stragglers (§3: no orphans). The group outlives its reaped leader only while it has
        // members (zombies included), and while it has any the kernel keeps the number
        // allocated, so it cannot have been recycled: a group found alive now is the child's.
        // One `kill(-pgid, 0)` says there is none, the common case, instead of reading every
        // process's /proc stat file; only when there is one does the scan tell live members from
        // zombies that nobody reaps (a container's pid 1 may not). (Only if every member died
        // between two checks *and* the pid space wrapped around in that instant could the
        // number name someone else's group.)
        if os::group_alive(self.pid) && group_members(self.pid) > 0 {
            os::signal_group(self.pid, os::SIGTERM);
            let deadline = Instant::now() + Duration::from_millis(500);
            while os::group_alive(self.pid)
                && group_members(self.pid) > 0
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            if os::group_alive(self.pid) {
                os::signal_group(self.pid, os::SIGKILL);
            }
        }
        lock(&self.stdin).take();
        lock(&self.keep_reader).take();
        // Readers end when the pipes close; one stuck in an inline resolver is left to finish.
        let threads: Vec<JoinHandle<()>> = lock(&self.threads).drain(..).collect();
        let ending = threads.len() + usize::from(lock(&self.stderr_drain).is_some());
        let deadline = Instant::now() + Duration::from_secs(1);
        let (count, wake) = &*self.finished;
        let mut done = lock(count);
        while *done < ending {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            done = wake
                .wait_timeout(done, left)
                .map_or_else(|e| e.into_inner().0, |r| r.0);
        }
        // All ended: each is past its last statement, so joining is immediate.
        let all = *done >= ending;
        drop(done);
        // Stderr that has not ended (a process outside the group holds it) is no longer read.
        lock(&self.stderr_drain).take();
        for h in threads {
            if all || h.is_finished() {
                let _ = h.join();
            }
        }
    }

    fn diagnostics(&self) -> String {
        self.stderr.tail()
    }

    fn exit(&self) -> Option<String> {
        self.exit_now().0.map(|e| e.to_string())
    }
}
