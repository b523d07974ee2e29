//! The shapes of config values the parser reads in more than one place: a map of strings,
//! milliseconds, one of a few choices.

use crate::json::type_name;
use serde_json::{Map, Value};
use std::time::Duration;

pub(super) fn string_map(
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

pub(super) fn millis(
    o: &Map<String, Value>,
    key: &str,
) -> std::result::Result<Option<Duration>, String> {
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

/// One of `choices` for key `key` (absent or null: the first).
pub(super) fn choice(
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
