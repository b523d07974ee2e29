//! Many servers from one config (contract §2–§3): started in parallel, reported in code-point
//! order of their names, isolated from each other; tool names, collisions and the allowlist;
//! calls routed by tool name; a bounded, idempotent disconnect.

use crate::config::{self, Entry};
use crate::conn::RequestError;
use crate::error::{Error, ErrorKind, Result};
use crate::host::LiveBridge;
use crate::mapping::listing::ListedTool;
use crate::responder::Resolver;
use crate::session::{self, Session};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

mod async_calls;
mod calling;
mod skills;
mod tasks;

pub use calling::{Done, Progress};

static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);

/// How long disconnect waits for host resolver calls that are still running.
const RESOLVER_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

enum State {
    Connected(Arc<Session>),
    Disabled,
    Failed(String),
}

struct Server {
    name: String,
    state: State,
    warnings: Vec<String>,
    tool_count: usize,
}

struct Tool {
    server: usize,
    remote: String,
}

/// A connected set of servers.
pub struct Client {
    /// Owner key for this client's responders.
    pub id: u64,
    servers: Vec<Server>,
    tools: HashMap<String, Tool>,
    tools_json: String,
    closed: AtomicBool,
    /// Host resolver calls in progress (shared with every connection's bridge).
    resolving: Arc<AtomicUsize>,
    /// Asynchronous calls (§7).
    calls: Arc<async_calls::Calls>,
}

impl Client {
    /// Parses `config_json` and connects every enabled server in parallel. Fails only when the
    /// config text itself is unusable (§2); bad servers become `failed` statuses.
    pub fn connect(config_json: &str, resolver: Option<Arc<dyn Resolver>>) -> Result<Client> {
        let entries = config::parse(config_json)?;
        let id = NEXT_CLIENT.fetch_add(1, Ordering::Relaxed);
        let active = Arc::new(AtomicUsize::new(0));
        let open_one = |spec: &config::ServerSpec| {
            let live = resolver.clone().map(|resolver| LiveBridge {
                resolver,
                elicitation_timeout: spec.elicitation_timeout,
                owner: id,
                active: active.clone(),
            });
            session::open(spec, live)
        };
        // One server connects on the caller's thread (no thread to start and join, §3); more
        // connect in parallel, one thread each.
        let alone = entries
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Enabled(_)))
            .count()
            == 1
            && no_runtime_here();
        let results: Vec<(State, Vec<ListedTool>)> = std::thread::scope(|scope| {
            let open_one = &open_one;
            let handles: Vec<_> = entries
                .iter()
                .map(|(_, entry)| match entry {
                    Entry::Enabled(spec) if alone => Some(Opening::Done(std::panic::catch_unwind(
                        std::panic::AssertUnwindSafe(|| open_one(spec)),
                    ))),
                    Entry::Enabled(spec) => {
                        Some(Opening::Thread(scope.spawn(move || open_one(spec))))
                    }
                    _ => None,
                })
                .collect();
            entries
                .iter()
                .zip(handles)
                .map(|((name, entry), h)| match (entry, h) {
                    (Entry::Disabled, _) => (State::Disabled, Vec::new()),
                    (Entry::Invalid(why), _) => (
                        State::Failed(format!("server `{name}` failed during `config`: {why}")),
                        Vec::new(),
                    ),
                    (Entry::Enabled(_), Some(h)) => match h.join() {
                        Ok(Ok((s, tools))) => (State::Connected(Arc::new(s)), tools),
                        Ok(Err(f)) => (State::Failed(f.message), Vec::new()),
                        Err(_) => (
                            State::Failed(format!(
                                "server `{name}` failed during `connect`: internal error (panic)"
                            )),
                            Vec::new(),
                        ),
                    },
                    (Entry::Enabled(_), None) => (
                        State::Failed(format!(
                            "server `{name}` failed during `connect`: internal error"
                        )),
                        Vec::new(),
                    ),
                })
                .collect()
        });
        let mut servers = Vec::new();
        let mut listed: Vec<Vec<ListedTool>> = Vec::new();
        for ((name, _), (state, tools)) in entries.into_iter().zip(results) {
            let warnings = match &state {
                State::Connected(s) => s.warnings.clone(),
                _ => Vec::new(),
            };
            servers.push(Server {
                name,
                state,
                warnings,
                tool_count: 0,
            });
            listed.push(tools);
        }
        let mut client = Client {
            id,
            servers,
            tools: HashMap::new(),
            tools_json: String::new(),
            closed: AtomicBool::new(false),
            resolving: active,
            calls: Arc::default(),
        };
        client.index_tools(listed);
        Ok(client)
    }

    /// Names every allowed tool (§0.1), first server in name order wins a collision (§3), and
    /// renders the sorted tool list once.
    fn index_tools(&mut self, listed: Vec<Vec<ListedTool>>) {
        let total = listed.iter().map(Vec::len).sum();
        // (host name, server index, remote name, the tool as listed)
        let mut rendered: Vec<(String, usize, String, ListedTool)> = Vec::with_capacity(total);
        self.tools.reserve(total);
        for (idx, tools) in listed.into_iter().enumerate() {
            let State::Connected(session) = &self.servers[idx].state else {
                continue;
            };
            let filter = session.spec.tools.clone();
            let server_name = self.servers[idx].name.clone();
            let mut listed_here = std::collections::HashSet::with_capacity(tools.len());
            for t in tools {
                let Some(remote) = t.name().map(Cow::into_owned) else {
                    self.servers[idx]
                        .warnings
                        .push("a listed tool has no string `name`; skipped".into());
                    continue;
                };
                // A server that lists a tool twice (a repeated page) means it once.
                if !filter.allows(&remote) || !listed_here.insert(remote.clone()) {
                    continue;
                }
                let host = crate::mapping::naming::tool_name(&server_name, &remote);
                // The first server in name order owns a name (§3); `self.tools` knows whose it is.
                if let Some(other) = self.tools.get(&host) {
                    let msg = format!(
                        "tool `{remote}` is not listed: its name `{host}` collides with tool `{}` of server `{}`",
                        other.remote, self.servers[other.server].name
                    );
                    self.servers[idx].warnings.push(msg);
                    continue;
                }
                self.tools.insert(
                    host.clone(),
                    Tool {
                        server: idx,
                        remote: remote.clone(),
                    },
                );
                rendered.push((host, idx, remote, t));
                self.servers[idx].tool_count += 1;
            }
        }
        rendered.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::with_capacity(64 + 256 * rendered.len());
        out.push(b'[');
        for (i, (host, idx, remote, t)) in rendered.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            t.write(&mut out, host, &self.servers[*idx].name, remote);
        }
        out.push(b']');
        // Only serde_json's output and ASCII punctuation went in.
        self.tools_json = String::from_utf8(out).unwrap_or_default();
    }

    /// The tool list JSON, sorted by name (c-api.md `tn_list_tools`).
    pub fn tools_json(&self) -> &str {
        &self.tools_json
    }

    /// `{"servers":{"<name>":{"status":…,"error"?,…}}}` in name order.
    pub fn statuses_json(&self) -> String {
        let mut servers = Map::new();
        for s in &self.servers {
            let mut m = Map::new();
            match &s.state {
                State::Connected(session) => {
                    match session.conn.death() {
                        Some(f) if !self.closed.load(Ordering::Acquire) => {
                            m.insert("status".into(), "failed".into());
                            m.insert(
                                "error".into(),
                                Value::String(format!(
                                    "server `{}` failed after connecting: {}",
                                    s.name,
                                    session.explain(&f)
                                )),
                            );
                        }
                        _ => {
                            m.insert("status".into(), "connected".into());
                        }
                    }
                    m.insert(
                        "era".into(),
                        Value::String(
                            match session.era {
                                crate::session::Era::Legacy => "legacy",
                                crate::session::Era::Modern => "modern",
                            }
                            .into(),
                        ),
                    );
                    m.insert(
                        "protocolVersion".into(),
                        Value::String(session.protocol_version.clone()),
                    );
                    m.insert(
                        "eraReason".into(),
                        Value::String(session.era_reason.clone()),
                    );
                    m.insert("tools".into(), Value::from(s.tool_count));
                    let skipped = session.conn.skipped_lines();
                    if skipped > 0 {
                        m.insert("skippedLines".into(), Value::from(skipped));
                    }
                    let dropped = session.conn.dropped_messages();
                    if dropped > 0 {
                        m.insert("droppedMessages".into(), Value::from(dropped));
                    }
                    if let Some(e) = session.conn.last_elicitation_error() {
                        m.insert("lastElicitationError".into(), Value::String(e));
                    }
                }
                State::Disabled => {
                    m.insert("status".into(), "disabled".into());
                }
                State::Failed(e) => {
                    m.insert("status".into(), "failed".into());
                    m.insert("error".into(), Value::String(e.clone()));
                }
            }
            if !s.warnings.is_empty() {
                m.insert(
                    "warnings".into(),
                    Value::Array(s.warnings.iter().cloned().map(Value::String).collect()),
                );
            }
            servers.insert(s.name.clone(), Value::Object(m));
        }
        let mut root = Map::new();
        root.insert("servers".into(), Value::Object(servers));
        crate::json::to_text(&Value::Object(root))
    }

    /// Whether the calling thread is inside an inline resolver of one of these servers.
    pub fn in_own_resolver(&self) -> bool {
        self.sessions()
            .any(|s| crate::host::in_own_resolver(&s.conn))
    }

    fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.servers.iter().filter_map(|s| match &s.state {
            State::Connected(session) => Some(session.as_ref()),
            _ => None,
        })
    }

    /// First half of disconnect (contract §3, architecture "Shutdown order"): mark closed, fail
    /// pending calls so their callers wake, and cancel open responders. Idempotent.
    pub fn close_begin(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        for s in self.sessions() {
            s.transport.begin_close();
            s.conn.fail(RequestError::Closed);
        }
        crate::responder::cancel_owner(self.id, "the client was disconnected");
    }

    /// Second half: shut every transport down, in parallel, each bounded; then wait (bounded)
    /// for resolver calls still running, so that the host's resolver is not running once
    /// `tn_disconnect` returns unless it is blocked past that bound.
    pub fn close_finish(&self) {
        if self.sessions().count() == 1 && no_runtime_here() {
            // One server: shut it down on this thread (no thread to start and join).
            for s in self.sessions() {
                s.transport.shutdown(crate::transport::DISCONNECT_GRACE);
            }
        } else {
            std::thread::scope(|scope| {
                for s in self.sessions() {
                    scope.spawn(move || s.transport.shutdown(crate::transport::DISCONNECT_GRACE));
                }
            });
        }
        // Every asynchronous call woke with the connections' failure: its done fires now.
        self.calls.close_and_drain();
        let deadline = std::time::Instant::now() + RESOLVER_DRAIN;
        while self.resolving.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// Whether this thread is outside any tokio runtime: the HTTP transport blocks on its own
/// runtime, which panics inside another one, so work is done on this thread only then.
fn no_runtime_here() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}

/// A server being opened by `Client::connect`: on a thread of its own, or already done on the
/// caller's thread (the only server).
enum Opening<'scope, T> {
    Thread(std::thread::ScopedJoinHandle<'scope, T>),
    Done(std::thread::Result<T>),
}

impl<T> Opening<'_, T> {
    fn join(self) -> std::thread::Result<T> {
        match self {
            Opening::Thread(h) => h.join(),
            Opening::Done(r) => r,
        }
    }
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the client is disconnected")
}
