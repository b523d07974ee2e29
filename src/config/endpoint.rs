//! A server entry's way in (contract §2): a local `command` (with `args`, `env`, `cwd`) or a
//! remote `url` (with `headers`, TLS, proxy, `auth`).

use super::auth;
use super::expand::expand_env;
use super::spec::{Endpoint, NetSpec, DEFAULT_POOL_IDLE_TIMEOUT};
use super::values::{millis, string_map};
use crate::json::type_name;
use serde_json::{Map, Value};

pub(super) fn parse_local(o: &Map<String, Value>) -> std::result::Result<Endpoint, String> {
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

pub(super) fn parse_remote(
    o: &Map<String, Value>,
    sse: bool,
) -> std::result::Result<Endpoint, String> {
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
