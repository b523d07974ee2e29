//! Config parsing (contract §2, shared §0.3): the server map and each entry's keys, here; what
//! an entry becomes and its defaults ([`spec`]), its way in ([`endpoint`]: a local command or a
//! remote url), `restart` ([`restart`]), `logLevel` ([`log_level`]), `auth` ([`auth`]),
//! `${NAME}` expansion ([`expand`]), the value shapes read in several places ([`values`]). A bad
//! entry fails that server alone.

pub(crate) mod auth;
mod endpoint;
mod expand;
mod log_level;
mod restart;
mod spec;
#[cfg(test)]
mod tests;
mod values;

use crate::error::{Error, ErrorKind, Result};
use crate::json::type_name;
use endpoint::{parse_local, parse_remote};
pub(crate) use log_level::LogLevel;
pub(crate) use restart::*;
use serde_json::{Map, Value};
pub use spec::*;
use values::{choice, millis};

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

const RESERVED_SIBLINGS: [&str; 4] = ["builtins", "agents", "a2a", "mcpServer"];

/// Parses config text into entries sorted by server name (code-point order, §3). Only text
/// that is not JSON, or JSON whose top level or server map is not an object, is an error.
pub fn parse(text: &str) -> Result<Vec<(String, ServerEntry)>> {
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
    let mut out: Vec<(String, ServerEntry)> = servers
        .iter()
        .map(|(name, v)| (name.clone(), parse_entry(name, v, defaults)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn parse_entry(name: &str, v: &Value, defaults: Defaults) -> ServerEntry {
    match parse_entry_inner(name, v, defaults) {
        Ok(e) => e,
        Err(msg) => ServerEntry::Invalid(msg),
    }
}

fn parse_entry_inner(
    name: &str,
    v: &Value,
    defaults: Defaults,
) -> std::result::Result<ServerEntry, String> {
    let Value::Object(o) = v else {
        return Err(format!(
            "server entry must be a JSON object, got {}",
            type_name(v)
        ));
    };
    if o.get("disabled") == Some(&Value::Bool(true))
        || o.get("enabled") == Some(&Value::Bool(false))
    {
        return Ok(ServerEntry::Disabled);
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
    Ok(ServerEntry::Enabled(ServerSpec {
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
/// `backoffMs` and `resetAfterMs` (docs/live-servers.md).
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
