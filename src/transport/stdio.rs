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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running stdio server.
pub struct StdioTransport {
    /// Our write end of the child's stdin; None once closed.
    stdin: Mutex<Option<os::StdinWriter>>,
    /// A read end of that pipe we keep open, so writes never raise SIGPIPE ([`os::StdinProbe`]).
    keep_reader: Mutex<Option<os::StdinProbe>>,
    /// The leader of the child's process tree, unreaped until shutdown takes it: while it is
    /// here its tree may be signalled and its exit peeked at.
    child: Mutex<Option<os::Child>>,
    /// The leader's exit as recorded by whoever reaped it (shutdown), set in the same critical
    /// section of `child` that takes the child: `child` None means this is final. The reader's
    /// EOF can come after the reap (another process held stdout, or it just lost the race), and
    /// a reaped pid can no longer be peeked (§3: the failure still carries the exit status).
    reaped: Mutex<Option<os::Exit>>,
    /// The leader's exit as an event (a pidfd on Linux, kqueue on macOS): disconnect waits for
    /// it instead of on a timer.
    exit: os::ExitWatch,
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
        match stdin.write_all(message.as_bytes(), b"\n", deadline, &self.closing) {
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
    let spawned = os::spawn(&os::Command {
        program,
        args,
        env,
        cwd,
    })
    .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let t = Arc::new(StdioTransport {
        stdin: Mutex::new(Some(spawned.stdin)),
        keep_reader: Mutex::new(Some(spawned.stdin_probe)),
        child: Mutex::new(Some(spawned.child)),
        reaped: Mutex::new(None),
        exit: spawned.exit,
        stderr: Arc::new(StderrTail::default()),
        stderr_drain: Mutex::new(None),
        threads: Mutex::new(Vec::new()),
        finished: Arc::default(),
        write_timeout,
        closing: AtomicBool::new(false),
    });
    let (stdout, stderr) = (spawned.stdout, spawned.stderr);
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
        stdout: os::OutputPipe,
        stderr: os::OutputPipe,
        max_message_bytes: usize,
        conn: &Arc<dyn Inbound>,
    ) -> Result<(), String> {
        let t = self;
        let on_end = Box::new(Finished(t.finished.clone()));
        let drained = stderr::drain(stderr, t.stderr.clone(), on_end)?;
        *lock(&t.stderr_drain) = Some(drained);
        let conn = conn.clone();
        let me = t.clone();
        let finished = Finished(t.finished.clone());
        let h = crate::util::spawn(format!("tn-reader-{server}"), move || {
            let _finished = finished;
            let c = conn.clone();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                me.read_loop(stdout, conn, max_message_bytes)
            }));
            if r.is_err() {
                c.fail_all(RequestError::Lost(
                    "internal error: the reader thread panicked (a bug in toolnexus)".into(),
                ));
            }
        })
        .map_err(|e| format!("cannot start the reader thread: {e}"))?;
        lock(&t.threads).push(h);
        Ok(())
    }

    fn read_loop(&self, out: os::OutputPipe, conn: Arc<dyn Inbound>, max: usize) {
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
            let n = match out.read_appending(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let mut chunk = &buf[..n];
            while let Some(pos) = memchr::memchr(b'\n', chunk) {
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
        if let Some(c) = &*lock(&self.child) {
            c.stop_tree(os::Stop::Kill);
        }
        self.closing.store(true, Ordering::Release);
        lock(&self.stdin).take();
    }

    /// The leader's exit as far as known now, and whether it has been reaped (then that is all
    /// there will ever be). Peeks only while the leader is unreaped (its child lock held): a
    /// reaped pid may be reused.
    fn exit_now(&self) -> (Option<os::Exit>, bool) {
        let child = lock(&self.child);
        if let Some(c) = &*child {
            (c.peek_exit(), false)
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

    /// Waits for the leader's exit (unreaped), at most `within`: on its exit event, so a child
    /// that exits on stdin EOF is seen as soon as it is gone.
    fn wait_exit(&self, within: Duration) -> bool {
        self.exit.wait(within)
    }

    /// Tells the child's whole tree to stop, while the leader is unreaped (so its group is
    /// still the child's).
    fn stop_tree(&self, how: os::Stop) {
        if let Some(c) = &*lock(&self.child) {
            c.stop_tree(how);
        }
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

impl Transport for StdioTransport {
    fn send(&self, msg: &Outgoing<'_>) -> Result<(), String> {
        self.write_line(msg.text)
    }

    fn peer_read_all(&self) -> Option<bool> {
        let keep = lock(&self.keep_reader);
        Some(keep.as_ref()?.unread_bytes().ok()? == 0)
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
            self.stop_tree(os::Stop::Ask);
            if !self.wait_exit(Duration::from_secs(1)) {
                self.stop_tree(os::Stop::Kill);
                self.wait_exit(Duration::from_secs(2));
            }
        }
        let leftovers: Option<os::Leftovers> = {
            // Reap and record in one critical section of `child`, so that a reader that finds
            // no child finds the exit recorded ([`Self::exit_now`]).
            let mut child = lock(&self.child);
            child.take().map(|c| {
                let (exit, leftovers) = c.reap();
                *lock(&self.reaped) = exit;
                leftovers
            })
        };
        // Stragglers (§3: no orphans): what of the tree outlived its leader is ended.
        if let Some(l) = leftovers {
            l.end();
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
