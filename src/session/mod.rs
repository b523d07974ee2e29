//! One server and its MCP lifecycle, written once above every transport (contract §2–§3): start
//! the transport, the handshake ([`legacy`]), `tools/list` with pagination, `tools/call` with
//! its timeout and cancellation, and failures told in words with secrets masked (§9).

mod call;
mod call_state;
#[cfg(test)]
mod call_tests;
mod capabilities;
mod completion;
mod era;
mod failure;
mod legacy;
mod list;
mod listen;
mod modern;
mod mrtr;
mod probe;
mod prompts;
mod resources;
mod skills;
mod suspend;
mod tasks;
mod trust;
mod url_elicitation;

pub(crate) use list::WalkError;
pub(crate) use suspend::Start;
pub(crate) use suspend::{decode as decode_resume, Continue, Resume};

use crate::config::{Endpoint, ServerSpec};
use crate::conn::{Conn, ProgressSink, Req, RequestError};
use crate::host::Host;
use crate::mapping::listing::{self, ListedTool};
use crate::transport::http::HttpTransport;
use crate::transport::Transport;
use crate::util::lock;
pub(crate) use call_state::CallState;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

/// Progress tokens, unique per call in the process (§7: every `tools/call` carries one).
pub(super) static NEXT_PROGRESS_TOKEN: AtomicU64 = AtomicU64::new(1);

/// What the caller controls of one `tools/call` (§7).
pub(crate) struct CallCtl<'a> {
    /// The per-call `timeoutMs`, else the server's `timeout`: an idle timeout.
    pub(crate) timeout: Option<Duration>,
    /// Where the call's progress notifications go (on the calling thread).
    pub(crate) progress: ProgressSink<'a>,
    /// Set for a call the host may cancel.
    pub(crate) state: Option<&'a CallState>,
}

impl CallCtl<'_> {
    /// A plain `tn_call_tool`: the server's timeout, no progress callback, no cancel.
    pub(crate) const PLAIN: CallCtl<'static> = CallCtl {
        timeout: None,
        progress: None,
        state: None,
    };
}

/// The protocol era a server is spoken to in (§6).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Era {
    /// The `initialize` handshake (2024-11-05 … 2025-11-25).
    Legacy,
    /// MCP 2026-07-28.
    Modern,
}

/// A connected server.
pub(crate) struct Session {
    pub(crate) spec: ServerSpec,
    pub(crate) conn: Arc<Conn>,
    pub(crate) transport: Arc<dyn Transport>,
    /// The same transport when it is HTTP: the session tells it the MCP facts only HTTP puts
    /// on the wire (era, negotiated version) and asks it which session it is on (§5, §6).
    pub(crate) http: Option<Arc<HttpTransport>>,
    /// The protocol era the server speaks (§6).
    pub(crate) era: Era,
    pub(crate) protocol_version: String,
    /// Things the status should say about a connected server (e.g. no standalone stream).
    pub(crate) warnings: Vec<String>,
    /// How the era was reached (`eraReason` in the status).
    pub(crate) era_reason: String,
    /// The host's resolver, when one is registered (MRTR and -32042 questions ask it, §6).
    pub(crate) live: Option<Host>,
    with_resolver: bool,
    /// Modern HTTP: each tool's `x-mcp-header` arguments (argument, header), §6; replaced
    /// whole by each listing (a refresh may change them).
    header_params: RwLock<HashMap<String, Vec<(String, String)>>>,
    /// Each tool's `execution.taskSupport` where it is not `forbidden` (docs/tasks.md); replaced
    /// whole by each listing.
    task_support: RwLock<HashMap<String, tasks::TaskSupport>>,
    /// Each tool's `outputSchema`, compiled at its first result (docs/tasks.md; docs/performance.md); replaced whole
    /// by each listing.
    output_schemas: RwLock<HashMap<String, std::sync::Arc<trust::OutputSchema>>>,
    /// MCP 2026-07-28: the listen held now ([`listen`]).
    listening: Mutex<listen::Listening>,
    /// Who learns of this server's notifications and end, and what ends an opening early.
    hooks: Hooks,
    /// The transport was shut down ([`Session::shutdown`]).
    shut: AtomicBool,
    /// Serialises renewing an expired HTTP session (§5).
    renewing: Mutex<()>,
    /// Closed while a session is renewed: new requests wait, bounded by the timeout.
    hold: Gate,
    /// The server's capabilities, from its `initialize` result or DiscoverResult (the
    /// Skills extension is declared there); None while unknown.
    capabilities: Mutex<Option<serde_json::Value>>,
    /// The Skills entries held: the last listing's, and the skills loaded from them (SEP-2640).
    skills: Mutex<skills::Held>,
    /// What ended this server's first child when the opening started it again (a refused
    /// handshake, §6): a failure after that names it too.
    before: Option<String>,
}

/// Why a server could not be brought up: the message names server, phase and cause.
pub(crate) struct StartError {
    pub(crate) message: String,
}

/// What the layers above hand a session being opened (docs/live-servers.md): who watches its connection
/// (list changes, log messages, its end), and what ends the opening early (disconnect during
/// a restart).
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub(crate) watcher: Option<Arc<dyn crate::conn::Watcher>>,
    pub(crate) abort: Option<Arc<Abort>>,
    /// The resources the host subscribed to: subscribed again once the server is up.
    pub(crate) subscriptions: std::collections::BTreeSet<String>,
}

/// Ends an opening that is under way (disconnect while a server restarts): the
/// connections it started fail as closed, so its handshake returns at once and the opening
/// shuts its transport down; one started after that is ended as soon as it is.
#[derive(Default)]
pub(crate) struct Abort {
    state: Mutex<AbortState>,
}

/// Whether the opening was ended, and the connections it started until then.
type AbortState = (bool, Vec<(Arc<Conn>, Arc<dyn Transport>)>);

impl Abort {
    /// Ends the opening (idempotent, quick: the opening itself shuts its transport down).
    pub(crate) fn abort(&self) {
        let started = {
            let mut st = lock(&self.state);
            st.0 = true;
            std::mem::take(&mut st.1)
        };
        for (conn, transport) in started {
            transport.begin_close();
            conn.fail(RequestError::Closed);
        }
    }

    /// Notes a connection the opening started; false when the opening was already ended.
    fn started(&self, conn: &Arc<Conn>, transport: &Arc<dyn Transport>) -> bool {
        let mut st = lock(&self.state);
        if st.0 {
            return false;
        }
        st.1.push((conn.clone(), transport.clone()));
        true
    }
}

/// The tools one `tools/list` (every page) gave (§3), with what the status should say of it
/// and, in MCP 2026-07-28, how long it may be taken as fresh (`ttlMs`).
pub(crate) struct ToolListing {
    pub(crate) tools: Vec<ListedTool>,
    pub(crate) warnings: Vec<String>,
    /// The smallest positive `ttlMs` of its pages; None: no time given (0, absent, legacy).
    pub(crate) ttl: Option<Duration>,
}

/// A gate requests pass through; closed while the session is being renewed.
#[derive(Default)]
struct Gate {
    closed: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    fn close(&self) {
        *lock(&self.closed) = true;
    }

    fn open(&self) {
        *lock(&self.closed) = false;
        self.changed.notify_all();
    }

    /// Waits while the gate is closed, at most `bound`.
    fn pass(&self, bound: Duration) {
        let closed = lock(&self.closed);
        if *closed {
            let _ = self
                .changed
                .wait_timeout_while(closed, bound, |c| *c)
                .map(drop);
        }
    }
}

/// Starts the server, finds its protocol era (§6), runs the handshake where there is one, and
/// lists its tools. On failure the transport is already shut down.
pub(crate) fn open(
    spec: &ServerSpec,
    live: Option<Host>,
    hooks: Hooks,
) -> Result<(Session, ToolListing), StartError> {
    let mut session = start(spec, live.clone(), &hooks)?;
    match establish(&mut session, &live) {
        Ok(tools) => Ok((session, tools)),
        Err(f) => {
            session.stop();
            Err(f)
        }
    }
}

/// Opens a server again in the era it had (a restarted child, a remote server whose
/// connection ended): the same config, no probe, and the era's reason kept.
pub(crate) fn reopen(
    spec: &ServerSpec,
    live: Option<Host>,
    hooks: Hooks,
    was: &Session,
) -> Result<(Session, ToolListing), StartError> {
    let mut same_era = spec.clone();
    same_era.protocol = match was.era {
        Era::Legacy => crate::config::Protocol::Legacy,
        Era::Modern => crate::config::Protocol::Modern,
    };
    let (mut s, listing) = open(&same_era, live, hooks)?;
    s.spec.protocol = spec.protocol;
    s.era_reason = was.era_reason.clone();
    Ok((s, listing))
}

/// Starts the transport for `spec` (a child process, or an HTTP connection): the connection
/// first (its server requests answered by the host side), then for a remote server the HTTP
/// client and the authorizer (§8, built here and handed down), then the transport, attached.
fn start(spec: &ServerSpec, live: Option<Host>, hooks: &Hooks) -> Result<Session, StartError> {
    let answering = Arc::new(crate::host::server_requests::Answering { live: live.clone() });
    let conn = Conn::new(answering);
    if let Some(w) = &hooks.watcher {
        conn.watch(w.clone());
    }
    let inbound: Arc<dyn crate::transport::Inbound> = conn.clone();
    let failed = |e: String| phase_error(spec, "connect", &e);
    let mut http_transport = None;
    let transport: Arc<dyn Transport> = match &spec.endpoint {
        Endpoint::Local { command, env, cwd } => crate::transport::stdio::spawn(
            &spec.name,
            command,
            env,
            cwd.as_deref(),
            spec.max_message_bytes,
            spec.timeout,
            &inbound,
        )
        .map_err(failed)?,
        Endpoint::Remote {
            url,
            headers,
            net,
            auth,
            sse,
            pool_idle_timeout,
        } => {
            let url = crate::transport::http::parse_url(url).map_err(failed)?;
            let http = crate::net::shared(net).map_err(failed)?;
            let desk = Arc::new(crate::host::login::LoginDesk {
                conn: Arc::downgrade(&conn),
                live: live.clone(),
            });
            let auth = crate::auth::Auth::new(
                &spec.name,
                &url,
                auth,
                http.clone(),
                spec.timeout,
                desk,
                headers,
            );
            let remote = crate::transport::http::Remote {
                sse: *sse,
                server: &spec.name,
                url,
                headers,
                net,
                http,
                auth,
            };
            let bounds = crate::transport::http::Bounds {
                timeout: spec.timeout,
                max_bytes: spec.max_message_bytes,
                pool_idle: *pool_idle_timeout,
            };
            let t = crate::transport::http::connect(remote, bounds, &inbound).map_err(failed)?;
            http_transport = Some(t.clone());
            t
        }
    };
    conn.attach(transport.clone());
    if let Some(abort) = &hooks.abort {
        if !abort.started(&conn, &transport) {
            conn.fail(RequestError::Closed);
            transport.shutdown(crate::transport::FAILED_START_GRACE);
            return Err(phase_error(spec, "connect", "the client was disconnected"));
        }
    }
    Ok(assemble(spec, live, hooks, conn, transport, http_transport))
}

/// A session on a connection just attached to its transport, before its era is chosen.
fn assemble(
    spec: &ServerSpec,
    live: Option<Host>,
    hooks: &Hooks,
    conn: Arc<Conn>,
    transport: Arc<dyn Transport>,
    http_transport: Option<Arc<HttpTransport>>,
) -> Session {
    let with_resolver = live.is_some();
    Session {
        spec: spec.clone(),
        conn,
        transport,
        http: http_transport,
        live,
        era: Era::Legacy,
        protocol_version: String::new(),
        warnings: Vec::new(),
        era_reason: String::new(),
        with_resolver,
        header_params: RwLock::default(),
        task_support: RwLock::default(),
        output_schemas: RwLock::default(),
        listening: Mutex::default(),
        hooks: hooks.clone(),
        shut: AtomicBool::new(false),
        renewing: Mutex::new(()),
        hold: Gate::default(),
        capabilities: Mutex::new(None),
        skills: Mutex::default(),
        before: None,
    }
}

/// A session of `era` over a fake transport answering with `script` (unit tests of the call
/// loop): `spec_json` is one server's config entry.
#[cfg(test)]
pub(super) fn on_fake(
    spec_json: &str,
    era: Era,
    live: Option<Host>,
    script: impl Fn(&str) -> Vec<String> + Send + Sync + 'static,
) -> (Session, Arc<crate::transport::fake::Fake>) {
    let entries = crate::config::parse(&format!(r#"{{"mcpServers":{{"fx":{spec_json}}}}}"#))
        .expect("a config");
    let Some((_, crate::config::ServerEntry::Enabled(spec))) = entries.into_iter().next() else {
        panic!("no enabled server in {spec_json}");
    };
    let answering = Arc::new(crate::host::server_requests::Answering { live: live.clone() });
    let conn = Conn::new(answering);
    let fake = crate::transport::fake::Fake::new(script);
    let inbound: Arc<dyn crate::transport::Inbound> = conn.clone();
    fake.file_into(&inbound);
    conn.attach(fake.clone());
    let mut s = assemble(&spec, live, &Hooks::default(), conn, fake.clone(), None);
    s.era = era;
    if era == Era::Modern {
        s.protocol_version = crate::versions::MODERN_VERSION.into();
    }
    (s, fake)
}

/// The era (§6: [`era`]), the handshake where there is one, the subscription to tool-list
/// changes in MCP 2026-07-28 (before the list, so no change between them is missed), the
/// tools.
fn establish(s: &mut Session, live: &Option<Host>) -> Result<ToolListing, StartError> {
    let named = |s: &Session, e: StartError| match &s.before {
        Some(b) => with_before(e, b),
        None => e,
    };
    era::choose(s, live).map_err(|e| named(s, e))?;
    if s.era == Era::Modern {
        let uris = s.hooks.subscriptions.clone();
        s.listen_at_start(&uris);
    }
    let listing = s.list_tools().map_err(|e| named(s, e))?;
    let uris = s.hooks.subscriptions.clone();
    s.subscribe_again(&uris);
    Ok(listing)
}

/// A start error of a server that was started again, naming what ended its first child.
fn with_before(mut e: StartError, before: &str) -> StartError {
    e.message.push_str(&format!(" (before: {before})"));
    e
}

fn phase_error(spec: &ServerSpec, phase: &str, cause: &str) -> StartError {
    StartError {
        message: format!(
            "server `{}` failed during `{phase}`: {}",
            spec.name,
            spec.secrets().mask(cause)
        ),
    }
}

impl Session {
    /// Fails the connection and shuts the transport down (a server that did not start, or a
    /// dead child before it is started again).
    pub(crate) fn stop(&self) {
        self.conn.fail(RequestError::Closed);
        self.shutdown(crate::transport::FAILED_START_GRACE);
    }

    /// Shuts the transport down, once (a restart and disconnect may both come to a
    /// dead session; a stdio child is reaped once, its pid never signalled after that).
    pub(crate) fn shutdown(&self, grace: Duration) {
        if !self.shut.swap(true, Ordering::AcqRel) {
            self.transport.shutdown(grace);
        }
    }

    /// Starts the server again (its child exited during the probe, §6).
    /// Tells an HTTP transport the era spoken from now on (§6: MCP 2026-07-28 has no session,
    /// its own headers, no resumption); stdio carries no era on the wire.
    fn wire_era(&self, era: Era) {
        if let Some(h) = &self.http {
            match era {
                Era::Modern => h.speak_modern(),
                Era::Legacy => h.speak_handshake(),
            }
        }
    }

    fn restart(&mut self, live: &Option<Host>) -> Result<(), StartError> {
        self.stop();
        *self = start(&self.spec, live.clone(), &self.hooks.clone())?;
        Ok(())
    }

    /// [`Session::restart`] after `what` happened to the first child: a failure of the new
    /// one (or of starting it) names both.
    fn restart_after(&mut self, live: &Option<Host>, what: &str) -> Result<(), StartError> {
        let before = self.spec.secrets().mask(what);
        self.restart(live).map_err(|e| with_before(e, &before))?;
        self.before = Some(before);
        Ok(())
    }

    fn phase_error(&self, phase: &str, cause: &str) -> StartError {
        phase_error(&self.spec, phase, cause)
    }

    /// A request of `phase` failed; an authorization failure is phase `auth` (§8).
    fn failed(&self, phase: &str, f: &RequestError) -> StartError {
        let phase = if matches!(f, RequestError::Auth(_)) {
            "auth"
        } else {
            phase
        };
        self.phase_error(phase, &self.explain(f))
    }

    /// A failure in words with configured secrets masked (§9), plus the child's last stderr
    /// lines when the server went silent (§3: a dead child's message already has them).
    pub(crate) fn explain(&self, f: &RequestError) -> String {
        let mut msg = f.explain(self.spec.timeout);
        if matches!(f, RequestError::Timeout(_)) {
            let tail = self.transport.diagnostics();
            if !tail.is_empty() {
                msg.push_str("; stderr: ");
                msg.push_str(&tail);
            }
        }
        self.spec.secrets().mask(&msg)
    }

    /// A request, sent again once on a renewed session when the server forgot ours (§5).
    fn request(&self, r: &Req<'_>) -> (crate::conn::Reply, bool) {
        self.hold.pass(self.spec.timeout);
        let (reply, asked) = self.conn.request(r);
        match reply {
            Err(RequestError::SessionExpired(generation)) => {
                if let Err(e) = legacy::reestablish(self, generation) {
                    return (Err(e), asked);
                }
                let (again, asked_again) = self.conn.request(r);
                (again, asked || asked_again)
            }
            other => (other, asked),
        }
    }

    /// Every `tools/list` page (§3); in the modern era with the `_meta` envelope, and over
    /// HTTP each tool's routing headers noted, tools with invalid ones dropped (§6). Callable
    /// again on a connected session (a refresh), its routing headers replaced whole.
    pub(crate) fn list_tools(&self) -> Result<ToolListing, StartError> {
        let mut tools = Vec::new();
        let mut warnings = Vec::new();
        let mut ttl: Option<Duration> = None;
        let mut pager = list::Pager::new(self.era);
        let mut cursor: Option<String> = None;
        let modern = self.era == Era::Modern;
        loop {
            let params = self.list_params(cursor.as_deref());
            let line = self
                .request(&Req::plain(
                    "tools/list",
                    params.as_deref(),
                    self.spec.timeout,
                ))
                .0
                .map_err(|f| self.failed("tools/list", &f))?;
            let page = match listing::page(&line) {
                Some(page) => page,
                None => listing::parsed_page(&line)
                    .map_err(|e| self.failed("tools/list", &RequestError::Rpc(e)))?,
            };
            tools.extend(page.tools);
            // Each page its own freshness (the caching rules): the list is as fresh as its
            // stalest page.
            if let Some(ms) = page.ttl_ms.filter(|ms| modern && *ms > 0.0) {
                let t = Duration::from_secs_f64((ms / 1000.0).min(1e9));
                ttl = Some(ttl.map_or(t, |old| old.min(t)));
            }
            match pager.after(page.cursor.as_deref()) {
                list::Step::Next(next) => cursor = Some(next),
                // §3: a repeated cursor or the page cap stops the loop; what was listed stays.
                _ => break,
            }
        }
        self.learn_tools(&tools);
        if modern && matches!(self.spec.endpoint, Endpoint::Remote { .. }) {
            let mut routed = HashMap::new();
            tools.retain(|t| {
                let name = t.name().unwrap_or_default();
                match modern::header_params(&t.to_map()) {
                    Ok(p) => {
                        if !p.is_empty() {
                            routed.insert(name.to_string(), p);
                        }
                        true
                    }
                    Err(why) => {
                        warnings.push(format!(
                            "tool `{name}` is not listed: its x-mcp-header declarations are invalid ({why})"
                        ));
                        false
                    }
                }
            });
            *crate::util::write(&self.header_params) = routed;
        }
        Ok(ToolListing {
            tools,
            warnings,
            ttl,
        })
    }
}
