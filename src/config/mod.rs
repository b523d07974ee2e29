//! Config parsing (contract §2, shared §0.3): the server map, local vs remote entries, timeouts,
//! the tool allowlist and `${ENV}` header expansion. A bad entry fails that server alone.

pub(crate) mod auth;
mod expand;

use crate::error::{Error, ErrorKind, Result};
use crate::json::type_name;
pub use expand::expand_env;
use serde_json::{Map, Value};
use std::time::Duration;

/// Default per-phase timeout (§2).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Default bound on one resolver answer (§4).
pub(crate) const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_millis(600_000);
/// Default bound on the era probe (§6).
pub(crate) const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_millis(3_000);
/// Default bound on one call in all, however often it reports progress (§7).
pub(crate) const DEFAULT_MAX_TOTAL_TIMEOUT: Duration = Duration::from_millis(3_600_000);
/// Default cap on one inbound message (§5).
pub(crate) const DEFAULT_MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;
/// How long the direct HTTP path keeps an idle kept-alive connection (`poolIdleTimeoutMs`).
pub(crate) const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_millis(90_000);
/// `restart` (issue 28): attempts in a row before the server is `failed`, the first delay
/// (doubling to [`RESTART_BACKOFF_CAP`]), and the uptime after which the count starts again.
pub(crate) const DEFAULT_RESTART_ATTEMPTS: u32 = 5;
pub(crate) const DEFAULT_RESTART_BACKOFF: Duration = Duration::from_millis(500);
pub(crate) const DEFAULT_RESTART_RESET: Duration = Duration::from_millis(60_000);
/// The longest delay before a restart attempt, however many came before.
pub(crate) const RESTART_BACKOFF_CAP: Duration = Duration::from_millis(30_000);

/// How a server that went away is brought back (issue 28): a stdio child that exited is
/// started again after a backoff; a remote server is reconnected on the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RestartPolicy {
    /// Failed attempts in a row (within `reset_after` of each other) before `failed`.
    pub(crate) max_attempts: u32,
    /// The delay before the first attempt; each next one doubles it, to 30 s, plus jitter.
    pub(crate) backoff: Duration,
    /// Uptime after which a server counts as healthy again: its next crash is attempt 1.
    pub(crate) reset_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            max_attempts: DEFAULT_RESTART_ATTEMPTS,
            backoff: DEFAULT_RESTART_BACKOFF,
            reset_after: DEFAULT_RESTART_RESET,
        }
    }
}

impl RestartPolicy {
    /// The delay before attempt `attempt` (from 1), without jitter.
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        let doubled = self
            .backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        doubled.min(RESTART_BACKOFF_CAP.max(self.backoff))
    }
}

/// A log level of MCP's `notifications/message` (RFC 5424 severities), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    pub(crate) const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named `name`, if it is one.
    pub(crate) fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Local {
        /// Program then arguments.
        command: Vec<String>,
        /// Added to the inherited environment.
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    /// Streamable HTTP (or legacy HTTP+SSE) at `url`.
    Remote {
        url: String,
        /// Header values after `${NAME}` expansion: secrets, never shown anywhere.
        headers: Vec<(String, String)>,
        /// TLS files and proxy (§5 "TLS and networks").
        net: NetSpec,
        /// `auth` (§8): how to log in when the server answers 401.
        auth: Box<crate::config::auth::AuthSpec>,
        /// `type: "sse"`: legacy HTTP+SSE (2024-11-05) from the start, no streamable-HTTP
        /// attempt and no 2026-07-28 probe (§2).
        sse: bool,
        /// `poolIdleTimeoutMs`: how long the direct path keeps an idle kept-alive connection
        /// (issue 22; 90 s by default, as hyper and reqwest do).
        pool_idle_timeout: Duration,
    },
}

/// A remote server's TLS and proxy settings (§5): servers with equal settings share one HTTP
/// client.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct NetSpec {
    /// `tls.caFile`: PEM certificates trusted in addition to the platform's store.
    pub ca_file: Option<String>,
    /// `tls.certFile` + `tls.keyFile`: a client certificate and its key (PEM).
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    /// `proxy`: None follows the proxy variables; `Some("")` goes direct.
    pub proxy: Option<String>,
}

/// The tool allowlist (§2): all tools, only the listed ones, or all but the listed ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ToolFilter {
    #[default]
    All,
    Only(Vec<String>),
    AllBut(Vec<String>),
}

impl ToolFilter {
    /// Whether the tool with this original (server-side) name is kept.
    pub fn allows(&self, remote_name: &str) -> bool {
        match self {
            ToolFilter::All => true,
            ToolFilter::Only(names) => names.iter().any(|n| n == remote_name),
            ToolFilter::AllBut(names) => !names.iter().any(|n| n == remote_name),
        }
    }
}

/// The `protocol` config key (§6; the era policy is in docs/protocol-eras.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// The era that lets every question through: with a resolver and a connection that carries
    /// server requests (stdio; HTTP with a session), the `initialize` handshake, which carries
    /// push-style questions; else MCP 2026-07-28 when the server speaks it.
    #[default]
    Auto,
    /// MCP 2026-07-28 whenever the server speaks it (the probe first), else the handshake:
    /// every question an MRTR or -32042 one, so every question can be suspended durably.
    ModernFirst,
    /// Only the `initialize` handshake (2024-11-05 … 2025-11-25).
    Legacy,
    /// Only MCP 2026-07-28; never falls back.
    Modern,
}

impl Protocol {
    fn parse(v: Option<&Value>, key: &str) -> std::result::Result<Option<Protocol>, String> {
        Ok(Some(match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(p)) if p == "auto" => Protocol::Auto,
            Some(Value::String(p)) if p == "modern-first" => Protocol::ModernFirst,
            Some(Value::String(p)) if p == "legacy" => Protocol::Legacy,
            Some(Value::String(p)) if p == "modern" => Protocol::Modern,
            Some(other) => {
                return Err(format!(
                    "`{key}` must be \"auto\", \"modern-first\", \"legacy\" or \"modern\", got {}",
                    crate::json::to_text(other)
                ))
            }
        }))
    }
}

/// Options for every server of a config, from its top-level `toolnexus` object (read only
/// when the servers sit under `mcpServers`, `servers` or `mcp`, so it is never a server).
#[derive(Debug, Clone, Copy, Default)]
struct Defaults {
    protocol: Protocol,
}

fn parse_defaults(root: &Map<String, Value>) -> Result<Defaults> {
    let mut d = Defaults::default();
    match root.get("toolnexus") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            if let Some(p) = Protocol::parse(o.get("protocol"), "toolnexus.protocol")
                .map_err(|e| Error::new(ErrorKind::Config, e))?
            {
                d.protocol = p;
            }
        }
        Some(other) => {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "`toolnexus` must be a JSON object, got {}",
                    type_name(other)
                ),
            ))
        }
    }
    Ok(d)
}

/// One usable server entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub endpoint: Endpoint,
    /// Bounds each phase separately: connect, initialize, each tools/list page, each call.
    pub timeout: Duration,
    /// Bounds one resolver answer.
    pub elicitation_timeout: Duration,
    /// Bounds one call in all: progress restarts `timeout`, never this (§7).
    pub max_total_timeout: Duration,
    /// Which protocol era to speak (§6); `auto` probes.
    pub protocol: Protocol,
    /// Bounds the era probe (`probeTimeoutMs`, §6).
    pub probe_timeout: Duration,
    pub tools: ToolFilter,
    pub max_message_bytes: usize,
    /// `restart` (issue 28); None: `"restart": false`, a server that went away stays away.
    pub(crate) restart: Option<RestartPolicy>,
    /// `logLevel` (issue 28): the least severe log message asked of the server; None: the
    /// server's own choice (legacy) or none at all (MCP 2026-07-28 sends none unless asked).
    pub(crate) log_level: Option<LogLevel>,
    /// When a tool call goes as a task (`tasks`, issue 29).
    pub tasks: TasksMode,
    /// The largest result a call hands back (`maxResultBytes`, issue 29), and what happens past it
    /// (`resultOverflow`).
    pub max_result_bytes: usize,
    pub result_overflow: Overflow,
    /// Whether `structuredContent` is checked against the tool's `outputSchema` (issue 29).
    pub output_validation: OutputValidation,
}

/// `"tasks"` (issue 29): a tool whose `execution.taskSupport` is `optional` is called as a task
/// `always`, `never`, or (`auto`) when the call is asynchronous or its timeout is long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TasksMode {
    #[default]
    Auto,
    Never,
    Always,
}

/// `"resultOverflow"` (issue 29): a result over `maxResultBytes` is an isError naming the limit
/// (`error`), or its output is cut to the limit with a note and `metadata.truncated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    #[default]
    Error,
    Truncate,
}

/// `"outputValidation"` (issue 29): a mismatch is noted in `metadata.outputSchemaErrors`
/// (`warn`), is an isError naming the schema (`strict`), or nothing is checked (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputValidation {
    #[default]
    Warn,
    Strict,
    Off,
}

/// The largest result by default (issue 29): 16 MiB.
pub(crate) const DEFAULT_MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;

/// One of `choices` for key `key` (absent or null: the first).
fn choice(
    o: &Map<String, Value>,
    key: &str,
    choices: &[&str],
) -> std::result::Result<usize, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(s)) if choices.contains(&s.as_str()) => {
            Ok(choices.iter().position(|c| c == s).unwrap_or(0))
        }
        Some(v) => Err(format!(
            "`{key}` must be one of {}, got {}",
            choices
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", "),
            crate::json::to_text(v)
        )),
    }
}

impl ServerSpec {
    /// The values to mask in any server text quoted in an error or status (§9).
    pub fn secrets(&self) -> crate::util::secrets::Secrets {
        match &self.endpoint {
            Endpoint::Remote { headers, auth, .. } => {
                let mut all = headers.clone();
                all.extend(auth.secrets().into_iter().map(|s| (String::new(), s)));
                crate::util::secrets::Secrets::of_headers(&all)
            }
            Endpoint::Local { .. } => crate::util::secrets::Secrets::default(),
        }
    }
}

/// One entry of the server map, after parsing (short-lived: its size does not matter).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Enabled(ServerSpec),
    Disabled,
    /// The entry is unusable; the message names the key.
    Invalid(String),
}

const RESERVED_SIBLINGS: [&str; 4] = ["builtins", "agents", "a2a", "mcpServer"];

/// Parses config text into entries sorted by server name (code-point order, §3). Only text
/// that is not JSON, or JSON whose top level or server map is not an object, is an error.
pub fn parse(text: &str) -> Result<Vec<(String, Entry)>> {
    let root = crate::json::parse(text, "config_json")?;
    let Value::Object(root) = root else {
        return Err(Error::new(
            ErrorKind::Config,
            format!("the config must be a JSON object, got {}", type_name(&root)),
        ));
    };
    let mut defaults = Defaults::default();
    let servers: Map<String, Value> = match ["mcpServers", "servers", "mcp"]
        .iter()
        .find_map(|k| root.get(*k).map(|v| (*k, v)))
    {
        Some((_, Value::Object(m))) => {
            defaults = parse_defaults(&root)?;
            m.clone()
        }
        Some((key, other)) => {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "the server map `{key}` must be a JSON object, got {}",
                    type_name(other)
                ),
            ))
        }
        None => root
            .into_iter()
            .filter(|(k, _)| !RESERVED_SIBLINGS.contains(&k.as_str()))
            .collect(),
    };
    let mut out: Vec<(String, Entry)> = servers
        .iter()
        .map(|(name, v)| (name.clone(), parse_entry(name, v, defaults)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn parse_entry(name: &str, v: &Value, defaults: Defaults) -> Entry {
    match parse_entry_inner(name, v, defaults) {
        Ok(e) => e,
        Err(msg) => Entry::Invalid(msg),
    }
}

fn parse_entry_inner(
    name: &str,
    v: &Value,
    defaults: Defaults,
) -> std::result::Result<Entry, String> {
    let Value::Object(o) = v else {
        return Err(format!(
            "server entry must be a JSON object, got {}",
            type_name(v)
        ));
    };
    if o.get("disabled") == Some(&Value::Bool(true))
        || o.get("enabled") == Some(&Value::Bool(false))
    {
        return Ok(Entry::Disabled);
    }
    let kind = match o.get("type") {
        None | Some(Value::Null) => {
            if o.contains_key("url") {
                "remote"
            } else if o.contains_key("command") {
                "local"
            } else {
                return Err("neither `command` (local) nor `url` (remote) is set".into());
            }
        }
        Some(Value::String(t)) if t == "remote" || t == "local" => t.as_str(),
        // Other ports' configs say "stdio" / "http" / "streamable-http" / "sse" too.
        Some(Value::String(t)) if t == "stdio" => "local",
        Some(Value::String(t)) if t == "http" || t == "streamable-http" => "remote",
        Some(Value::String(t)) if t == "sse" => "sse",
        Some(other) => {
            return Err(format!(
                "`type` must be \"local\" or \"remote\", got {}",
                crate::json::to_text(other)
            ))
        }
    };
    let endpoint = if kind == "local" {
        parse_local(o)?
    } else {
        parse_remote(o, kind == "sse")?
    };
    let own = Protocol::parse(o.get("protocol"), "protocol")?;
    // HTTP+SSE has one era: a client-wide default does not apply to it, and asking for
    // 2026-07-28 on the entry itself is a contradiction.
    let protocol = match (kind, own) {
        ("sse", Some(Protocol::Modern | Protocol::ModernFirst)) => {
            return Err(format!(
                "`type` \"sse\" is legacy HTTP+SSE (2024-11-05), which has no 2026-07-28 era: `protocol` {} cannot be used with it",
                crate::json::to_text(o.get("protocol").unwrap_or(&Value::Null))
            ))
        }
        ("sse", _) => Protocol::Legacy,
        (_, p) => p.unwrap_or(defaults.protocol),
    };
    Ok(Entry::Enabled(ServerSpec {
        name: name.to_string(),
        endpoint,
        timeout: millis(o, "timeout")?.unwrap_or(DEFAULT_TIMEOUT),
        elicitation_timeout: millis(o, "elicitationTimeout")?
            .unwrap_or(DEFAULT_ELICITATION_TIMEOUT),
        max_total_timeout: millis(o, "maxTotalTimeout")?.unwrap_or(DEFAULT_MAX_TOTAL_TIMEOUT),
        protocol,
        probe_timeout: millis(o, "probeTimeoutMs")?.unwrap_or(DEFAULT_PROBE_TIMEOUT),
        tools: parse_tools(o)?,
        max_message_bytes: match o.get("maxMessageBytes") {
            None | Some(Value::Null) => DEFAULT_MAX_MESSAGE_BYTES,
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => n.min(usize::MAX as u64) as usize,
                _ => {
                    return Err(format!(
                        "`maxMessageBytes` must be a positive integer, got {}",
                        crate::json::to_text(v)
                    ))
                }
            },
        },
        restart: parse_restart(o.get("restart"))?,
        log_level: match o.get("logLevel") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_str().and_then(LogLevel::parse).ok_or_else(|| {
                format!(
                    "`logLevel` must be one of {}, got {}",
                    LogLevel::ALL
                        .map(|l| format!("\"{}\"", l.name()))
                        .join(", "),
                    crate::json::to_text(v)
                )
            })?),
        },
        tasks: match choice(o, "tasks", &["auto", "never", "always"])? {
            1 => TasksMode::Never,
            2 => TasksMode::Always,
            _ => TasksMode::Auto,
        },
        max_result_bytes: match o.get("maxResultBytes") {
            None | Some(Value::Null) => DEFAULT_MAX_RESULT_BYTES,
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => n.min(usize::MAX as u64) as usize,
                _ => {
                    return Err(format!(
                        "`maxResultBytes` must be a positive integer, got {}",
                        crate::json::to_text(v)
                    ))
                }
            },
        },
        result_overflow: match choice(o, "resultOverflow", &["error", "truncate"])? {
            1 => Overflow::Truncate,
            _ => Overflow::Error,
        },
        output_validation: match choice(o, "outputValidation", &["warn", "strict", "off"])? {
            1 => OutputValidation::Strict,
            2 => OutputValidation::Off,
            _ => OutputValidation::Warn,
        },
    }))
}

/// `restart`: absent or `true` (the defaults), `false`, or an object of `maxAttempts`,
/// `backoffMs` and `resetAfterMs` (issue 28).
fn parse_restart(v: Option<&Value>) -> std::result::Result<Option<RestartPolicy>, String> {
    let o = match v {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {
            return Ok(Some(RestartPolicy::default()))
        }
        Some(Value::Bool(false)) => return Ok(None),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(format!(
                "`restart` must be false, true or an object {{\"maxAttempts\",\"backoffMs\",\"resetAfterMs\"}}, got {}",
                type_name(other)
            ))
        }
    };
    for k in o.keys() {
        if !["maxAttempts", "backoffMs", "resetAfterMs"].contains(&k.as_str()) {
            return Err(format!(
                "`restart.{k}` is not a restart option (maxAttempts, backoffMs, resetAfterMs)"
            ));
        }
    }
    let mut p = RestartPolicy::default();
    match o.get("maxAttempts") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => p.max_attempts = n.min(u32::MAX as u64) as u32,
            _ => {
                return Err(format!(
                    "`restart.maxAttempts` must be a positive integer, got {}",
                    crate::json::to_text(v)
                ))
            }
        },
    }
    let key = |k: &str| {
        millis(o, k).map_err(|e| e.replacen(&format!("`{k}`"), &format!("`restart.{k}`"), 1))
    };
    if let Some(d) = key("backoffMs")? {
        p.backoff = d;
    }
    if let Some(d) = key("resetAfterMs")? {
        p.reset_after = d;
    }
    Ok(Some(p))
}

fn parse_local(o: &Map<String, Value>) -> std::result::Result<Endpoint, String> {
    let mut command: Vec<String> = match o.get("command") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("`command` must be an array of strings")?,
        // The Claude-desktop form: "command": "npx", "args": [...].
        Some(Value::String(program)) => vec![program.clone()],
        Some(other) => {
            return Err(format!(
                "`command` must be an array of strings, got {}",
                type_name(other)
            ))
        }
        None => return Err("a local server needs `command`".into()),
    };
    match o.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for i in items {
                command.push(
                    i.as_str()
                        .ok_or("`args` must be an array of strings")?
                        .to_string(),
                );
            }
        }
        Some(other) => {
            return Err(format!(
                "`args` must be an array of strings, got {}",
                type_name(other)
            ))
        }
    }
    if command.first().is_none_or(|p| p.is_empty()) {
        return Err("`command` must name a program".into());
    }
    let env_key = if o.contains_key("environment") {
        "environment"
    } else {
        "env"
    };
    let env = string_map(o, env_key)?;
    let cwd = match o.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(format!("`cwd` must be a string, got {}", type_name(other))),
    };
    Ok(Endpoint::Local { command, env, cwd })
}

fn parse_remote(o: &Map<String, Value>, sse: bool) -> std::result::Result<Endpoint, String> {
    let url = match o.get("url") {
        Some(Value::String(u)) if !u.is_empty() => u.clone(),
        Some(other) => {
            return Err(format!(
                "`url` must be a non-empty string, got {}",
                type_name(other)
            ))
        }
        None => return Err("a remote server needs `url`".into()),
    };
    let headers = string_map(o, "headers")?
        .into_iter()
        .map(|(k, v)| (k, expand_env(&v)))
        .collect();
    let mut net = NetSpec::default();
    match o.get("tls") {
        None | Some(Value::Null) => {}
        Some(Value::Object(t)) => {
            for (k, v) in t {
                let slot = match k.as_str() {
                    "caFile" => &mut net.ca_file,
                    "certFile" => &mut net.cert_file,
                    "keyFile" => &mut net.key_file,
                    other => {
                        return Err(format!(
                            "`tls.{other}` is not a TLS option (caFile, certFile, keyFile; verification cannot be turned off)"
                        ))
                    }
                };
                match v {
                    Value::String(p) if !p.is_empty() => *slot = Some(p.clone()),
                    Value::Null => {}
                    other => {
                        return Err(format!(
                            "`tls.{k}` must be a non-empty string (a file path), got {}",
                            type_name(other)
                        ))
                    }
                }
            }
            if net.cert_file.is_some() != net.key_file.is_some() {
                return Err(
                    "`tls.certFile` and `tls.keyFile` go together: set both or neither".into(),
                );
            }
        }
        Some(other) => return Err(format!("`tls` must be an object, got {}", type_name(other))),
    }
    match o.get("proxy") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) => net.proxy = Some(p.clone()),
        Some(other) => {
            return Err(format!(
                "`proxy` must be a URL string (\"\" for direct), got {}",
                type_name(other)
            ))
        }
    }
    let auth = Box::new(auth::parse(o.get("auth"))?);
    Ok(Endpoint::Remote {
        url,
        headers,
        net,
        auth,
        sse,
        pool_idle_timeout: millis(o, "poolIdleTimeoutMs")?.unwrap_or(DEFAULT_POOL_IDLE_TIMEOUT),
    })
}

fn string_map(
    o: &Map<String, Value>,
    key: &str,
) -> std::result::Result<Vec<(String, String)>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                // Never echo the value: it may be a secret.
                other => Err(format!(
                    "`{key}.{k}` must be a string, got {}",
                    type_name(other)
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "`{key}` must be an object of strings, got {}",
            type_name(other)
        )),
    }
}

fn millis(o: &Map<String, Value>, key: &str) -> std::result::Result<Option<Duration>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(ms) if ms > 0.0 && ms.is_finite() => {
                Ok(Some(Duration::from_micros((ms * 1000.0).min(1e15) as u64)))
            }
            _ => Err(format!(
                "`{key}` must be a positive number of milliseconds, got {}",
                crate::json::to_text(v)
            )),
        },
    }
}

fn parse_tools(o: &Map<String, Value>) -> std::result::Result<ToolFilter, String> {
    let m = match o.get("tools") {
        None | Some(Value::Null) => return Ok(ToolFilter::All),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(format!(
                "`tools` must be an object of name → boolean, got {}",
                type_name(other)
            ))
        }
    };
    let mut on = Vec::new();
    let mut off = Vec::new();
    for (name, v) in m {
        match v {
            Value::Bool(true) => on.push(name.clone()),
            Value::Bool(false) => off.push(name.clone()),
            other => {
                return Err(format!(
                    "`tools.{name}` must be a boolean, got {}",
                    type_name(other)
                ))
            }
        }
    }
    Ok(if !on.is_empty() {
        ToolFilter::Only(on)
    } else if !off.is_empty() {
        ToolFilter::AllBut(off)
    } else {
        ToolFilter::All
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(t: &str) -> Vec<(String, Entry)> {
        parse(t).unwrap()
    }

    #[test]
    fn server_map_lookup_and_order() {
        let e = entries(r#"{"servers":{"b":{"command":["x"]},"a":{"url":"http://h"}}}"#);
        assert_eq!(e[0].0, "a");
        assert!(matches!(&e[0].1, Entry::Enabled(s) if matches!(s.endpoint, Endpoint::Remote{..})));
        let e = entries(r#"{"agents":{},"s":{"command":"npx","args":["-y","p"]}}"#);
        assert_eq!(e.len(), 1);
        match &e[0].1 {
            Entry::Enabled(s) => assert_eq!(
                s.endpoint,
                Endpoint::Local {
                    command: vec!["npx".into(), "-y".into(), "p".into()],
                    env: vec![],
                    cwd: None
                }
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors() {
        assert_eq!(parse("[]").unwrap_err().kind, ErrorKind::Config);
        assert_eq!(parse("nope").unwrap_err().kind, ErrorKind::InvalidJson);
        assert_eq!(
            parse(r#"{"mcpServers":[]}"#).unwrap_err().kind,
            ErrorKind::Config
        );
        let e = entries(
            r#"{"mcpServers":{"a":1,"b":{"command":["x"],"timeout":-1},"c":{"command":[1]},"d":{},"e":{"disabled":true,"command":5}}}"#,
        );
        let msg = |i: usize| match &e[i].1 {
            Entry::Invalid(m) => m.clone(),
            other => panic!("{other:?}"),
        };
        assert!(msg(0).contains("object"));
        assert!(msg(1).contains("`timeout`"));
        assert!(msg(2).contains("`command`"));
        assert!(msg(3).contains("neither"));
        assert_eq!(e[4].1, Entry::Disabled);
    }

    #[test]
    fn tools_filter() {
        let f = |t: &str| match &entries(t)[0].1 {
            Entry::Enabled(s) => s.tools.clone(),
            other => panic!("{other:?}"),
        };
        let only = f(r#"{"a":{"command":["x"],"tools":{"x":true,"y":false}}}"#);
        assert!(only.allows("x") && !only.allows("y") && !only.allows("z"));
        let but = f(r#"{"a":{"command":["x"],"tools":{"y":false}}}"#);
        assert!(but.allows("x") && !but.allows("y"));
        assert_eq!(f(r#"{"a":{"command":["x"],"tools":{}}}"#), ToolFilter::All);
    }

    #[test]
    fn restart_and_log_level() {
        let spec = |t: &str| match &entries(t)[0].1 {
            Entry::Enabled(s) => Ok(s.clone()),
            Entry::Invalid(m) => Err(m.clone()),
            Entry::Disabled => panic!("disabled"),
        };
        let d = spec(r#"{"a":{"command":["x"]}}"#).unwrap();
        assert_eq!(d.restart, Some(RestartPolicy::default()));
        assert_eq!(d.log_level, None);
        assert_eq!(
            spec(r#"{"a":{"command":["x"],"restart":false}}"#)
                .unwrap()
                .restart,
            None
        );
        let p = spec(r#"{"a":{"command":["x"],"restart":{"maxAttempts":2,"backoffMs":50},"logLevel":"warning"}}"#)
            .unwrap();
        assert_eq!(
            p.restart.map(|r| (r.max_attempts, r.backoff)),
            Some((2, Duration::from_millis(50)))
        );
        assert_eq!(p.log_level, Some(LogLevel::Warning));
        for (bad, says) in [
            (
                r#"{"a":{"command":["x"],"restart":3}}"#,
                "`restart` must be",
            ),
            (
                r#"{"a":{"command":["x"],"restart":{"maxAttempts":0}}}"#,
                "`restart.maxAttempts`",
            ),
            (
                r#"{"a":{"command":["x"],"restart":{"backoffMs":-1}}}"#,
                "`restart.backoffMs`",
            ),
            (
                r#"{"a":{"command":["x"],"restart":{"tries":1}}}"#,
                "`restart.tries`",
            ),
            (
                r#"{"a":{"command":["x"],"logLevel":"loud"}}"#,
                "`logLevel` must be one of",
            ),
        ] {
            let e = spec(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let p = RestartPolicy::default();
        assert_eq!(p.delay(1), Duration::from_millis(500));
        assert_eq!(p.delay(3), Duration::from_millis(2000));
        assert_eq!(p.delay(40), RESTART_BACKOFF_CAP);
        assert!(LogLevel::Warning > LogLevel::Info && LogLevel::Emergency > LogLevel::Alert);
    }

    #[test]
    fn env_expansion() {
        std::env::set_var("TN_TEST_SECRET", "s3cret");
        assert_eq!(expand_env("Bearer ${TN_TEST_SECRET}"), "Bearer s3cret");
        assert_eq!(expand_env("${TN_TEST_UNSET_X}x${"), "x${");
    }
}
