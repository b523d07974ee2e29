//! Every stdio child's stderr, drained continuously into a bounded tail (contract §3: a
//! server's last stderr lines go into its failure messages, and a chatty server must never
//! block on a full pipe) by one process-wide thread waiting on one poller, rather than by a
//! thread of each server's own: a connect then starts one thread (the reader), not two, and a
//! server costs no second stack (measured pinned against the bench fixture: a thread per
//! child's stderr was ~2% of a 1-server connect and of a cold start).

use crate::sys as os;
use crate::util::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How much of stderr is kept for failure messages.
const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// How many stderr lines a failure message quotes.
const STDERR_TAIL_LINES: usize = 8;
/// Reads of one child per wake-up, so a child that writes without pause cannot keep the
/// drain from the others (the poller is level-triggered: the rest comes next round).
const READS_PER_WAKE: usize = 8;

/// The last bytes a child wrote to stderr.
#[derive(Default)]
pub(super) struct StderrTail {
    bytes: Mutex<VecDeque<u8>>,
    /// Set once stderr has ended (or stopped being drained): the tail is complete.
    pub(super) done: AtomicBool,
}

impl StderrTail {
    fn push(&self, chunk: &[u8]) {
        let mut b = lock(&self.bytes);
        if chunk.len() >= STDERR_TAIL_BYTES {
            b.clear();
            b.extend(&chunk[chunk.len() - STDERR_TAIL_BYTES..]);
        } else {
            let overflow = (b.len() + chunk.len()).saturating_sub(STDERR_TAIL_BYTES);
            b.drain(..overflow);
            b.extend(chunk);
        }
    }

    /// The last few non-blank lines, joined with " | ".
    pub(super) fn tail(&self) -> String {
        let bytes: Vec<u8> = lock(&self.bytes).iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect();
        let start = lines.len().saturating_sub(STDERR_TAIL_LINES);
        let mut s = lines[start..].join(" | ");
        if s.len() > 2000 {
            let cut = s.len() - 2000;
            let cut = (cut..s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(0);
            s = format!("…{}", &s[cut..]);
        }
        s
    }
}

/// One child's stderr being drained; dropped, it stops being drained and our end closes.
pub(super) struct Drained {
    drain: Arc<Drain>,
    token: usize,
}

impl Drop for Drained {
    fn drop(&mut self) {
        self.drain.remove(self.token);
    }
}

/// A child's stderr in the drain: our read end (non-blocking), where its bytes go, and what
/// is dropped when it ends (it wakes a shutdown waiting for it).
struct Watched {
    pipe: os::OutputPipe,
    tail: Arc<StderrTail>,
    _on_end: Box<dyn Send>,
}

struct Drain {
    /// The process that made it (its poller is shared with any child forked since).
    pid: u32,
    poller: os::Poller,
    entries: Mutex<HashMap<usize, Watched>>,
    next: AtomicUsize,
}

/// The drain of this process, and the process it was made in: a child forked from a host that
/// had one has neither its thread nor a poller of its own, so it makes a new drain.
static DRAIN: Mutex<Option<Arc<Drain>>> = Mutex::new(None);

/// Drains `stderr` into `tail` from now on; `on_end` is dropped once it has ended (or when the
/// returned handle is dropped).
pub(super) fn drain(
    stderr: os::OutputPipe,
    tail: Arc<StderrTail>,
    on_end: Box<dyn Send>,
) -> Result<Drained, String> {
    let why = |e: std::io::Error| format!("cannot drain stderr: {e}");
    let drain = {
        let mut current = lock(&DRAIN);
        let pid = std::process::id();
        match &*current {
            Some(d) if d.pid == pid => d.clone(),
            _ => {
                let d = Arc::new(Drain {
                    pid,
                    poller: os::Poller::new().map_err(why)?,
                    entries: Mutex::default(),
                    next: AtomicUsize::new(1),
                });
                let run_on = d.clone();
                crate::util::spawn_sized("toolnexus-stderr", Some(64 * 1024), move || loop {
                    // A panic (a bug) must not end the draining of every child's stderr.
                    let _ = std::panic::catch_unwind(|| run(&run_on));
                })
                .map_err(|e| format!("cannot start the stderr thread: {e}"))?;
                *current = Some(d.clone());
                d
            }
        }
    };
    stderr.set_nonblocking().map_err(why)?;
    let token = drain.next.fetch_add(1, Ordering::Relaxed);
    {
        let mut entries = lock(&drain.entries);
        drain.poller.add(&stderr, token).map_err(why)?;
        entries.insert(
            token,
            Watched {
                pipe: stderr,
                tail,
                _on_end: on_end,
            },
        );
    }
    Ok(Drained { drain, token })
}

impl Drain {
    /// Stops draining `token`: out of the poller, our end closed, its tail complete.
    fn remove(&self, token: usize) {
        let gone = lock(&self.entries).remove(&token);
        if let Some(e) = gone {
            // In a forked child the set is the parent's: closing our copy is all it takes.
            if self.pid == std::process::id() {
                self.poller.remove(&e.pipe);
            }
            e.tail.done.store(true, Ordering::Release);
        }
    }
}

/// The drain thread: every child's stderr read as it comes; one that ends is removed. Reads
/// happen under the entries lock, so a descriptor is never read after its removal closed it.
fn run(d: &Drain) {
    let mut tokens = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        tokens.clear();
        if let Err(e) = d.poller.wait(&mut tokens) {
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            // Not expected with a valid set; retry rather than stop draining every child.
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        }
        for &token in &tokens {
            let ended = {
                let mut entries = lock(&d.entries);
                let Some(e) = entries.get_mut(&token) else {
                    continue;
                };
                let mut ended = false;
                for _ in 0..READS_PER_WAKE {
                    match e.pipe.read(&mut buf) {
                        Ok(0) => {
                            ended = true;
                            break;
                        }
                        Ok(n) => e.tail.push(&buf[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => {
                            ended = true;
                            break;
                        }
                    }
                }
                ended
            };
            if ended {
                d.remove(token);
            }
        }
    }
}
