//! HTTP mode: sessions, the standalone GET stream, SSE framing and the
//! request log.

use crate::net::Stream;
use crate::out::{request_line, Pending};
use crate::proto::State;
use crate::wire::{event_chunk, trim_nl, LAST_CHUNK};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------

pub struct Session {
    pub id: String,
    pub state: State,
    /// Server->client requests; ids count from 0 per session.
    pub pending: Pending,
    next_event: AtomicU64,
    /// The standalone GET stream, while one is open.
    get: Mutex<Option<Arc<EventStream>>>,
}

static SESSIONS: LazyLock<Mutex<HashMap<String, Arc<Session>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// A new session with a fresh random id.
pub fn create() -> Arc<Session> {
    let s = Arc::new(Session {
        id: new_session_id(),
        state: State::default(),
        pending: Pending::new(),
        next_event: AtomicU64::new(1),
        get: Mutex::new(None),
    });
    lock(&SESSIONS).insert(s.id.clone(), s.clone());
    s
}

/// A session of no one (the modern era's stateless requests): never registered.
pub fn ephemeral() -> Session {
    Session {
        id: String::new(),
        state: State::default(),
        pending: Pending::new(),
        next_event: AtomicU64::new(1),
        get: Mutex::new(None),
    }
}

pub fn find(id: &str) -> Option<Arc<Session>> {
    lock(&SESSIONS).get(id).cloned()
}

/// Delete a session: its GET stream ends, its waiting tools get no answer.
pub fn remove(id: &str) -> bool {
    let Some(s) = lock(&SESSIONS).remove(id) else {
        return false;
    };
    if let Some(get) = lock(&s.get).take() {
        get.end();
    }
    s.pending.clear();
    true
}

/// A uuid-shaped random hex id (from /dev/urandom; time and a counter if that fails).
fn new_session_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut b = [0u8; 16];
    let random = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if random.is_err() {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let c = COUNTER.fetch_add(1, Ordering::Relaxed);
        b[..8].copy_from_slice(&(t as u64).to_le_bytes());
        b[8..].copy_from_slice(&(c ^ u64::from(std::process::id())).to_le_bytes());
    }
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

impl Session {
    pub fn next_event_id(&self) -> u64 {
        self.next_event.fetch_add(1, Ordering::Relaxed)
    }

    /// Make `stream` the standalone GET stream, writing `head` (the response
    /// head and priming event) first, under the lock, so no event can
    /// overtake it. False when one is already open.
    pub fn attach_get(&self, stream: &Arc<EventStream>, head: &[u8]) -> bool {
        let mut get = lock(&self.get);
        if get.as_ref().is_some_and(|g| g.is_open()) {
            return false;
        }
        stream.write_raw(head);
        *get = Some(stream.clone());
        true
    }

    /// Forget `stream` as the standalone GET stream (if it still is).
    pub fn detach_get(&self, stream: &Arc<EventStream>) {
        let mut get = lock(&self.get);
        if get.as_ref().is_some_and(|g| Arc::ptr_eq(g, stream)) {
            *get = None;
        }
    }

    /// A server request tied to no client request: only on the standalone GET
    /// stream; dropped (and logged) when none is open.
    pub fn unrelated_request(
        &self,
        method: &str,
        params: Option<&Value>,
    ) -> Option<Receiver<Value>> {
        let (id, rx) = self.pending.register();
        let mut line = Vec::with_capacity(256);
        request_line(&mut line, id, method, params);
        let get = lock(&self.get).clone();
        let sent = get.is_some_and(|g| g.send(trim_nl(&line), self.next_event_id()));
        if sent {
            Some(rx)
        } else {
            self.pending.forget(id);
            log_dropped(method);
            None
        }
    }
}

/// Every session.
pub fn sessions() -> Vec<Arc<Session>> {
    lock(&SESSIONS).values().cloned().collect()
}

impl Session {
    /// `data` (a notification) as an event on the standalone GET stream; false when none is
    /// open (the notification is lost, as in the TypeScript SDK's transport).
    pub fn notify_get(&self, data: &[u8]) -> bool {
        let get = lock(&self.get).clone();
        get.is_some_and(|g| g.send(data, self.next_event_id()))
    }
}

/// `data` as an event on every session's standalone GET stream that is open (a notification
/// to every legacy HTTP client: `--live`'s list changes).
pub fn broadcast_get(data: &[u8]) {
    let sessions: Vec<Arc<Session>> = lock(&SESSIONS).values().cloned().collect();
    for s in sessions {
        if let Some(get) = lock(&s.get).clone() {
            get.send(data, s.next_event_id());
        }
    }
}

/// A response stream other threads write events to (the standalone GET).
pub struct EventStream {
    sock: Mutex<Option<Stream>>,
}

impl EventStream {
    pub fn new(sock: Stream) -> Self {
        EventStream {
            sock: Mutex::new(Some(sock)),
        }
    }

    pub fn is_open(&self) -> bool {
        lock(&self.sock).is_some()
    }

    pub fn write_raw(&self, bytes: &[u8]) -> bool {
        let mut sock = lock(&self.sock);
        let ok = match sock.as_mut() {
            Some(s) => s.write_all(bytes).is_ok(),
            None => false,
        };
        if !ok {
            *sock = None;
        }
        ok
    }

    /// One `event: message`; false if the stream is closed or broken.
    pub fn send(&self, data: &[u8], event_id: u64) -> bool {
        let mut chunk = Vec::with_capacity(data.len() + 64);
        event_chunk(&mut chunk, event_id, data);
        self.write_raw(&chunk)
    }

    /// End the stream cleanly (the last chunk), once.
    pub fn end(&self) {
        if let Some(mut s) = lock(&self.sock).take() {
            let _ = s.write_all(LAST_CHUNK);
        }
    }

    /// The peer went away: forget the socket without writing.
    pub fn abandon(&self) {
        lock(&self.sock).take();
    }
}

// ---------------------------------------------------------------------------
// Request log
// ---------------------------------------------------------------------------

static LOG: OnceLock<Mutex<File>> = OnceLock::new();

pub fn open_log(path: &str) -> io::Result<()> {
    let f = File::options().create(true).append(true).open(path)?;
    let _ = LOG.set(Mutex::new(f));
    Ok(())
}

pub fn logging() -> bool {
    LOG.get().is_some()
}

fn log_value(v: &Value) {
    if let Some(f) = LOG.get() {
        let mut line = v.to_string();
        line.push('\n');
        let mut f = lock(f);
        if let Err(e) = f.write_all(line.as_bytes()).and_then(|()| f.flush()) {
            eprintln!("fixture: cannot write the log: {e}");
        }
    }
}

/// What one HTTP request carried, as logged.
pub struct LogEntry<'a> {
    pub http: &'a str,
    pub rpc: Option<&'a str>,
    pub id: Option<&'a Value>,
    pub kind: Option<&'a str>,
    pub session: Option<&'a str>,
    pub protocol_version: Option<&'a str>,
    pub last_event_id: Option<&'a str>,
    /// With `--modern`/`--dual`/`--resources` also logged: the params, `Mcp-Method` and
    /// `Mcp-Name`.
    pub params: Option<&'a Value>,
    pub mcp_method: Option<&'a str>,
    pub mcp_name: Option<&'a str>,
}

pub fn log_request(e: &LogEntry) {
    if !logging() {
        return;
    }
    let mut v = json!({
        "http": e.http,
        "rpc": e.rpc,
        "id": e.id,
        "kind": e.kind,
        "session": e.session,
        "protocolVersion": e.protocol_version,
        "lastEventId": e.last_event_id,
    });
    if crate::modern::enabled() || crate::opts().resources {
        v["params"] = json!(e.params);
        v["mcpMethod"] = json!(e.mcp_method);
        v["mcpName"] = json!(e.mcp_name);
    }
    log_value(&v);
}

/// stdio: one line per message received (`rpc` is empty for a response).
pub fn log_message(rpc: &str, id: Option<&Value>, kind: &str, params: Option<&Value>) {
    if !logging() {
        return;
    }
    log_value(&json!({
        "rpc": (!rpc.is_empty()).then_some(rpc),
        "id": id,
        "kind": kind,
        "params": params,
    }));
}

pub fn log_dropped(method: &str) {
    eprintln!("fixture: dropped {method}: no stream to send it on");
    log_value(&json!({"event": "dropped", "rpc": method}));
}
