//! What one usable server entry holds (contract §2): how to reach it, its bounds and
//! options, its tool allowlist and protocol era policy; the parser builds these.

use super::log_level::LogLevel;
use super::restart::RestartPolicy;
use serde_json::Value;
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
        /// (90 s by default, as hyper and reqwest do).
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
    pub(super) fn parse(
        v: Option<&Value>,
        key: &str,
    ) -> std::result::Result<Option<Protocol>, String> {
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
    /// `restart` (docs/live-servers.md); None: `"restart": false`, a server that went away stays away.
    pub(crate) restart: Option<RestartPolicy>,
    /// `logLevel` (docs/live-servers.md): the least severe log message asked of the server; None: the
    /// server's own choice (legacy) or none at all (MCP 2026-07-28 sends none unless asked).
    pub(crate) log_level: Option<LogLevel>,
    /// When a tool call goes as a task (`tasks`).
    pub tasks: TasksMode,
    /// The largest result a call hands back (`maxResultBytes`), and what happens past it
    /// (`resultOverflow`).
    pub max_result_bytes: usize,
    pub result_overflow: Overflow,
    /// Whether `structuredContent` is checked against the tool's `outputSchema` (docs/tasks.md).
    pub output_validation: OutputValidation,
}

/// `"tasks"` (docs/tasks.md): a tool whose `execution.taskSupport` is `optional` is called as a task
/// `always`, `never`, or (`auto`) when the call is asynchronous or its timeout is long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TasksMode {
    #[default]
    Auto,
    Never,
    Always,
}

/// `"resultOverflow"` (docs/tasks.md): a result over `maxResultBytes` is an isError naming the limit
/// (`error`), or its output is cut to the limit with a note and `metadata.truncated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    #[default]
    Error,
    Truncate,
}

/// `"outputValidation"` (docs/tasks.md): a mismatch is noted in `metadata.outputSchemaErrors`
/// (`warn`), is an isError naming the schema (`strict`), or nothing is checked (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputValidation {
    #[default]
    Warn,
    Strict,
    Off,
}

/// The largest result by default (docs/tasks.md): 16 MiB.
pub(crate) const DEFAULT_MAX_RESULT_BYTES: usize = 16 * 1024 * 1024;

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
pub enum ServerEntry {
    Enabled(ServerSpec),
    Disabled,
    /// The entry is unusable; the message names the key.
    Invalid(String),
}
