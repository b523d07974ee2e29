//! Many servers from one config (contract §2–§3): started in parallel, reported in code-point
//! order of their names, isolated from each other; tool names, collisions and the allowlist;
//! calls routed by tool name; a bounded, idempotent disconnect.

use crate::config::{self, Entry};
use crate::conn::RequestError;
use crate::error::{Error, ErrorKind, Result};
use crate::live_bridge::LiveBridge;
use crate::responder::Resolver;
use crate::session::{self, Session};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

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
    calls: Arc<crate::calls::Calls>,
}

/// How a resumed call goes on.
enum Resumed {
    From(crate::session::Start),
    /// It ends with this result, nothing sent.
    Done(String),
}

/// What `done` is handed: the ToolResult JSON (§1).
pub type Done = Box<dyn FnOnce(String) + Send>;
/// What `progress` is handed: `{"progress":n,"total":n?,"message":"…"?}` (§7).
pub type Progress = Box<dyn Fn(&str) + Send + Sync>;

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
        let results: Vec<(State, Vec<Map<String, Value>>)> = std::thread::scope(|scope| {
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
        let mut listed: Vec<Vec<Map<String, Value>>> = Vec::new();
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
    fn index_tools(&mut self, listed: Vec<Vec<Map<String, Value>>>) {
        let mut rendered: Vec<(String, Value)> = Vec::new();
        let mut owner_of: HashMap<String, (usize, String)> = HashMap::new();
        for (idx, tools) in listed.into_iter().enumerate() {
            let State::Connected(session) = &self.servers[idx].state else {
                continue;
            };
            let filter = session.spec.tools.clone();
            let server_name = self.servers[idx].name.clone();
            let mut listed_here = std::collections::HashSet::new();
            for t in tools {
                let Some(remote) = t.get("name").and_then(Value::as_str).map(str::to_string) else {
                    self.servers[idx]
                        .warnings
                        .push("a listed tool has no string `name`; skipped".into());
                    continue;
                };
                // A server that lists a tool twice (a repeated page) means it once.
                if !filter.allows(&remote) || !listed_here.insert(remote.clone()) {
                    continue;
                }
                let host = crate::naming::tool_name(&server_name, &remote);
                if let Some((other, other_remote)) = owner_of.get(&host) {
                    let msg = format!(
                        "tool `{remote}` is not listed: its name `{host}` collides with tool `{other_remote}` of server `{}`",
                        self.servers[*other].name
                    );
                    self.servers[idx].warnings.push(msg);
                    continue;
                }
                owner_of.insert(host.clone(), (idx, remote.clone()));
                rendered.push((host.clone(), tool_json(&host, &server_name, &remote, &t)));
                self.tools.insert(
                    host,
                    Tool {
                        server: idx,
                        remote,
                    },
                );
                self.servers[idx].tool_count += 1;
            }
        }
        rendered.sort_by(|a, b| a.0.cmp(&b.0));
        self.tools_json = crate::json::to_text(&Value::Array(
            rendered.into_iter().map(|(_, v)| v).collect(),
        ));
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
                                crate::transport::Era::Legacy => "legacy",
                                crate::transport::Era::Modern => "modern",
                            }
                            .into(),
                        ),
                    );
                    m.insert(
                        "protocolVersion".into(),
                        Value::String(session.protocol_version.clone()),
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

    /// Calls the tool `name` (§1); `args_json` None means `{}`.
    pub fn call_tool(&self, name: &str, args_json: Option<&str>) -> Result<String> {
        let (session, remote, args) = self.target(name, args_json)?;
        if crate::live_bridge::in_own_resolver(&session.conn) {
            return Err(Error::new(
                ErrorKind::Reentrant,
                format!(
                    "tn_call_tool on server `{}` from inside its own inline resolver would deadlock; return TN_DEFERRED and answer from another thread",
                    session.spec.name
                ),
            ));
        }
        session
            .call(remote, &args, &crate::session::CallCtl::PLAIN)
            .ok_or_else(closed)
    }

    /// Starts a call and returns its id at once (§7); `done` fires exactly once, on a library
    /// thread, with the ToolResult; `progress` gets each progress notification before it.
    /// `timeout` is the per-call `timeoutMs`. `on_id` learns the id before `done` can fire.
    /// When this fails, `done` never fires.
    pub fn call_tool_async(
        &self,
        name: &str,
        args_json: Option<&str>,
        timeout: Option<std::time::Duration>,
        done: Done,
        progress: Option<Progress>,
        on_id: impl FnOnce(u64),
    ) -> Result<u64> {
        let (session, remote, args) = self.target(name, args_json)?;
        self.spawn_call(
            session.clone(),
            remote.to_string(),
            args.into_owned(),
            Resumed::From(crate::session::Start::default()),
            timeout,
            done,
            progress,
            on_id,
        )
    }

    /// Runs a call on a pool thread (§7): `done` exactly once with its result.
    #[allow(clippy::too_many_arguments)]
    fn spawn_call(
        &self,
        session: Arc<Session>,
        remote: String,
        args: String,
        next: Resumed,
        timeout: Option<std::time::Duration>,
        done: Done,
        progress: Option<Progress>,
        on_id: impl FnOnce(u64),
    ) -> Result<u64> {
        let (id, state) = self.calls.register().ok_or_else(closed)?;
        on_id(id);
        let calls = self.calls.clone();
        let client = self.id;
        let job = Box::new(move || {
            let sink = |p: &str| {
                if let Some(f) = &progress {
                    crate::calls::as_callback(client, || f(p));
                }
            };
            let ctl = crate::session::CallCtl {
                timeout,
                progress: Some(&sink),
                state: Some(&state),
            };
            let result = match next {
                Resumed::Done(r) => Some(r),
                Resumed::From(start) => session.call_from(&remote, &args, &ctl, start),
            }
            .unwrap_or_else(|| {
                crate::shape::failure(&format!("{}: disconnected", session.spec.name))
            });
            crate::calls::as_callback(client, || done(result));
            calls.finished(id);
        });
        if let Err(e) = self.calls.spawn(job) {
            self.calls.finished(id);
            return Err(Error::new(
                ErrorKind::Internal,
                format!("cannot start a thread for the call: {e}"),
            ));
        }
        Ok(id)
    }

    /// Continues a suspended call (§6, c-api.md "Suspended calls") from its resume token and
    /// the host's answers, on this thread.
    pub fn resume(&self, resume_token: &str, answers_json: &str) -> Result<String> {
        let (session, resume, next) = self.resume_target(resume_token, answers_json)?;
        let start = match next {
            Resumed::From(start) => start,
            Resumed::Done(result) => return Ok(result),
        };
        if crate::live_bridge::in_own_resolver(&session.conn) {
            return Err(Error::new(
                ErrorKind::Reentrant,
                format!(
                    "tn_call_tool_resume on server `{}` from inside its own inline resolver would deadlock",
                    session.spec.name
                ),
            ));
        }
        session
            .call_from(
                &resume.tool,
                &resume.arguments,
                &crate::session::CallCtl::PLAIN,
                start,
            )
            .ok_or_else(closed)
    }

    /// [`Client::resume`], asynchronously: the rules of [`Client::call_tool_async`].
    pub fn resume_async(
        &self,
        resume_token: &str,
        answers_json: &str,
        timeout: Option<std::time::Duration>,
        done: Done,
        progress: Option<Progress>,
        on_id: impl FnOnce(u64),
    ) -> Result<u64> {
        let (session, resume, next) = self.resume_target(resume_token, answers_json)?;
        self.spawn_call(
            session,
            resume.tool,
            resume.arguments,
            next,
            timeout,
            done,
            progress,
            on_id,
        )
    }

    /// The session a resume token names, the token, and how the call goes on (c-api.md
    /// "Suspended calls": a foreign server or filtered tool is NotFound; an era that changed
    /// ends the call with nothing sent).
    fn resume_target(
        &self,
        resume_token: &str,
        answers_json: &str,
    ) -> Result<(Arc<Session>, crate::session::Resume, Resumed)> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let resume = crate::session::decode_resume(resume_token)?;
        let Some(server) = self.servers.iter().find(|s| s.name == resume.server) else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the resume token names server `{}`, which this client does not have",
                    resume.server
                ),
            ));
        };
        let session = match &server.state {
            State::Connected(s) => s.clone(),
            State::Disabled => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("the resume token's server `{}` is disabled", server.name),
                ))
            }
            State::Failed(why) => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("the resume token's server `{}` failed: {why}", server.name),
                ))
            }
        };
        if !session.spec.tools.allows(&resume.tool) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the resume token's tool `{}` of server `{}` is filtered out by the config",
                    resume.tool, server.name
                ),
            ));
        }
        let next = if session.era != resume.era
            || session.protocol_version != resume.protocol_version
        {
            Resumed::Done(crate::shape::failure(&format!(
                "server `{}`: tools/call `{}` cannot be resumed: the server now speaks protocol {} ({}), the call was suspended under {}; nothing was sent",
                server.name,
                resume.tool,
                session.protocol_version,
                if session.era == crate::transport::Era::Modern { "modern" } else { "legacy" },
                resume.protocol_version
            )))
        } else {
            match resume.answers(answers_json)? {
                crate::session::Continue::From(start) => Resumed::From(start),
                crate::session::Continue::Fails(why) => {
                    Resumed::Done(crate::shape::failure(&format!(
                        "server `{}`: tools/call `{}` failed: {why}",
                        server.name, resume.tool
                    )))
                }
            }
        };
        Ok((session, resume, next))
    }

    /// Cancels call `id` (§7): Ok when this is what ends it (its done then carries the
    /// cancelled result); NotFound when it is unknown or already finished.
    pub fn cancel_call(&self, id: u64) -> Result<()> {
        if self.calls.cancel(id) {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::NotFound,
                format!("no call {id} in flight (unknown, finished or already cancelled)"),
            ))
        }
    }

    /// Whether this thread is inside one of this client's call callbacks.
    pub fn in_own_callback(&self) -> bool {
        crate::calls::in_callback_of(self.id)
    }

    /// The session, remote name and one-line arguments for tool `name`.
    fn target<'a>(
        &'a self,
        name: &str,
        args_json: Option<&'a str>,
    ) -> Result<(&'a Arc<Session>, &'a str, std::borrow::Cow<'a, str>)> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let args: std::borrow::Cow<'_, str> = match args_json {
            None => "{}".into(),
            Some(a) => {
                crate::jsonrpc::check_object_text(a, "args_json")?;
                crate::jsonrpc::one_line(a.trim())
            }
        };
        let tool = self.tools.get(name).ok_or_else(|| self.not_found(name))?;
        let State::Connected(session) = &self.servers[tool.server].state else {
            return Err(Error::new(
                ErrorKind::Internal,
                "tool of a server that is not connected",
            ));
        };
        Ok((session, &tool.remote, args))
    }

    /// The NOT_FOUND error for `name`. When its prefix is a failed or disabled server's
    /// (`sanitize(server) + "_"`, §0.1), it says which server and why, so that a call to a
    /// server that did not start does not read as a typo (§3: a failure names its server).
    fn not_found(&self, name: &str) -> Error {
        let mut msg = format!("no tool named `{name}`");
        // The longest matching prefix wins (`a_b_x` belongs to `a_b` rather than `a`); on a tie
        // the first server in name order, as for tool-name collisions (§3).
        let mut best: Option<(usize, &Server)> = None;
        for s in &self.servers {
            if matches!(s.state, State::Connected(_)) {
                continue;
            }
            let prefix = crate::naming::sanitize(&s.name) + "_";
            if name.starts_with(&prefix) && best.is_none_or(|(len, _)| prefix.len() > len) {
                best = Some((prefix.len(), s));
            }
        }
        if let Some((_, s)) = best {
            match &s.state {
                // `why` already reads "server `x` failed during `phase`: cause".
                State::Failed(why) => msg.push_str(&format!(": {why}")),
                State::Disabled => msg.push_str(&format!(": server `{}` is disabled", s.name)),
                State::Connected(_) => {}
            }
        }
        Error::new(ErrorKind::NotFound, msg)
    }

    /// Whether the calling thread is inside an inline resolver of one of these servers.
    pub fn in_own_resolver(&self) -> bool {
        self.sessions()
            .any(|s| crate::live_bridge::in_own_resolver(&s.conn))
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

/// §0.1 tool object: the fixed keys first, then whatever else the server sent, in its order.
fn tool_json(host: &str, server: &str, remote: &str, t: &Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(host.to_string()));
    m.insert(
        "description".into(),
        t.get("description")
            .filter(|d| d.is_string())
            .cloned()
            .unwrap_or_else(|| Value::String(String::new())),
    );
    m.insert(
        "inputSchema".into(),
        t.get("inputSchema")
            .filter(|s| s.is_object())
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"})),
    );
    m.insert("source".into(), Value::String("mcp".into()));
    m.insert("server".into(), Value::String(server.to_string()));
    m.insert("remoteName".into(), Value::String(remote.to_string()));
    for (k, v) in t {
        if !m.contains_key(k) && k != "name" {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(m)
}
