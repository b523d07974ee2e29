//! A server's question (a §10 Request) asked on the terminal: a form built from the requested
//! schema, one prompt per property in the schema's order. Text, number and integer fields,
//! booleans, enums (a list to pick from) and arrays of enums (a multi-select); a default is
//! shown and Enter takes it. Esc declines, Ctrl-C cancels. With stdin not a terminal the
//! question is declined, with a message on stderr that says no terminal was available.

use inquire::validator::Validation;
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};
use serde_json::{Map, Value};
use std::io::IsTerminal;
use std::sync::Mutex;
use toolnexus::{answer_responder, Resolver, ResolverReturn, ResponderToken};

/// The `toolnexus` command's resolver.
pub struct TerminalResolver {
    interactive: bool,
    /// One form at a time: several servers (or one server's parallel calls) may ask at once.
    asking: Mutex<()>,
}

impl TerminalResolver {
    pub fn new() -> Self {
        TerminalResolver {
            interactive: std::io::stdin().is_terminal(),
            asking: Mutex::new(()),
        }
    }
}

const DECLINED: &str = r#"{"ok":false,"reason":"declined"}"#;
const CANCELLED: &str = r#"{"ok":false,"reason":"cancelled"}"#;

impl Resolver for TerminalResolver {
    fn call(&self, request_json: &str, token: ResponderToken) -> ResolverReturn {
        let request: Value = serde_json::from_str(request_json).unwrap_or(Value::Null);
        let prompt = request.get("prompt").and_then(Value::as_str).unwrap_or("");
        let answer = if !self.interactive {
            eprintln!(
                "toolnexus: a server asked {prompt:?}: declined, no terminal was available to ask \
                 on (stdin is not a terminal)"
            );
            DECLINED.to_string()
        } else {
            let _one = self.asking.lock().unwrap_or_else(|p| p.into_inner());
            match ask(&request) {
                Ok(answer) => answer,
                Err(InquireError::OperationCanceled) => {
                    eprintln!("toolnexus: declined");
                    DECLINED.to_string()
                }
                Err(InquireError::OperationInterrupted) => {
                    eprintln!("toolnexus: cancelled");
                    CANCELLED.to_string()
                }
                Err(e) => {
                    eprintln!("toolnexus: could not ask on the terminal ({e}): declined");
                    DECLINED.to_string()
                }
            }
        };
        if let Err(e) = answer_responder(token, &answer) {
            eprintln!("toolnexus: the answer was not taken: {}", e.message);
        }
        ResolverReturn::Resolved
    }
}

/// Asks the Request on the terminal; returns the §10 Answer as JSON text.
fn ask(request: &Value) -> Result<String, InquireError> {
    let prompt = request.get("prompt").and_then(Value::as_str).unwrap_or("");
    let kind = request
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("input");
    eprintln!("The server asks: {prompt}");
    if kind == "authorization" {
        let url = request
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("(no URL given)");
        eprintln!("Open this URL to continue: {url}");
        let done = Confirm::new("Done, continue?")
            .with_default(true)
            .prompt()?;
        return Ok(if done { r#"{"ok":true}"# } else { DECLINED }.to_string());
    }
    let empty = Map::new();
    let schema = request.pointer("/data/schema").and_then(Value::as_object);
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut data = Map::new();
    for (key, prop) in props {
        let empty_prop = Map::new();
        let prop = prop.as_object().unwrap_or(&empty_prop);
        if let Some(v) = ask_field(key, prop, required.contains(&key.as_str()))? {
            data.insert(key.clone(), v);
        }
    }
    let mut answer = Map::new();
    answer.insert("ok".into(), Value::Bool(true));
    answer.insert("data".into(), Value::Object(data));
    Ok(Value::Object(answer).to_string())
}

/// The choices of an enum schema: `enum` (labelled by `enumNames` when given), or `oneOf` /
/// `anyOf` of `{const, title}`.
fn choices(prop: &Map<String, Value>) -> Option<Vec<(String, Value)>> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| label_of(v), str::to_string);
                    (label, v.clone())
                })
                .collect(),
        );
    }
    let alts = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))
        .and_then(Value::as_array)?;
    let out: Vec<(String, Value)> = alts
        .iter()
        .filter_map(|a| {
            let c = a.get("const")?;
            let label = a
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| label_of(c), str::to_string);
            Some((label, c.clone()))
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

fn label_of(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// One property: its value, or None when left out (optional, no default, nothing entered).
fn ask_field(
    key: &str,
    prop: &Map<String, Value>,
    required: bool,
) -> Result<Option<Value>, InquireError> {
    let title = prop.get("title").and_then(Value::as_str).unwrap_or(key);
    let label = if required {
        format!("{title}:")
    } else {
        format!("{title} (optional):")
    };
    let help = prop.get("description").and_then(Value::as_str);
    let default = prop.get("default");
    let ty = prop.get("type").and_then(Value::as_str).unwrap_or("string");

    if ty == "array" {
        let items = prop
            .get("items")
            .and_then(Value::as_object)
            .and_then(choices)
            .unwrap_or_default();
        let defaults: Vec<usize> = default
            .and_then(Value::as_array)
            .map(|d| {
                items
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, v))| d.contains(v))
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default();
        let labels: Vec<String> = items.iter().map(|(l, _)| l.clone()).collect();
        let mut p = MultiSelect::new(&label, labels)
            .with_default(&defaults)
            .with_help_message(help.unwrap_or("space to select, enter to confirm"));
        if required {
            p = p.with_validator(|picked: &[inquire::list_option::ListOption<&String>]| {
                Ok(if picked.is_empty() {
                    Validation::Invalid("pick at least one".into())
                } else {
                    Validation::Valid
                })
            });
        }
        let picked = p.raw_prompt()?;
        let values = picked.iter().map(|o| items[o.index].1.clone()).collect();
        return Ok(Some(Value::Array(values)));
    }

    if let Some(options) = choices(prop) {
        let mut labels: Vec<String> = options.iter().map(|(l, _)| l.clone()).collect();
        let skip = !required && default.is_none();
        if skip {
            labels.push("(none)".into());
        }
        let start = default
            .and_then(|d| options.iter().position(|(_, v)| v == d))
            .unwrap_or(0);
        let mut p = Select::new(&label, labels).with_starting_cursor(start);
        if let Some(h) = help {
            p = p.with_help_message(h);
        }
        let picked = p.raw_prompt()?;
        return Ok(options.get(picked.index).map(|(_, v)| v.clone()));
    }

    if ty == "boolean" {
        let mut p =
            Confirm::new(&label).with_default(default.and_then(Value::as_bool).unwrap_or(false));
        if let Some(h) = help {
            p = p.with_help_message(h);
        }
        return Ok(Some(Value::Bool(p.prompt()?)));
    }

    let numeric = ty == "number" || ty == "integer";
    let default_text = default.map(label_of);
    let integer = ty == "integer";
    let must_fill = required && default.is_none();
    let mut p = Text::new(&label).with_validator(move |s: &str| {
        let s = s.trim();
        if s.is_empty() {
            return Ok(if must_fill {
                Validation::Invalid("required".into())
            } else {
                Validation::Valid
            });
        }
        if numeric && parse_number(s, integer).is_none() {
            let what = if integer {
                "a whole number"
            } else {
                "a number"
            };
            return Ok(Validation::Invalid(format!("{s:?} is not {what}").into()));
        }
        Ok(Validation::Valid)
    });
    if let Some(d) = default_text.as_deref() {
        p = p.with_default(d);
    }
    if let Some(h) = help {
        p = p.with_help_message(h);
    }
    let text = p.prompt()?;
    let text = text.trim();
    if text.is_empty() {
        // Nothing typed: the default when there is one (inquire returns it), else left out.
        return Ok(default.cloned());
    }
    Ok(Some(if numeric {
        parse_number(text, integer).unwrap_or(Value::Null)
    } else {
        Value::String(text.to_string())
    }))
}

/// A JSON number from what was typed, its text kept (`1.50` stays `1.50`).
fn parse_number(s: &str, integer: bool) -> Option<Value> {
    let v: Value = serde_json::from_str(s).ok()?;
    let n = v.as_number()?;
    if integer && !(n.is_i64() || n.is_u64()) {
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_keep_their_text_and_integers_are_whole() {
        assert_eq!(parse_number("1.50", false).unwrap().to_string(), "1.50");
        assert_eq!(parse_number("42", true).unwrap(), json!(42));
        assert!(parse_number("4.2", true).is_none());
        assert!(parse_number("x", false).is_none());
    }

    #[test]
    fn enum_choices_from_enum_or_consts() {
        let p = json!({"enum": ["r", "g"], "enumNames": ["Red"]});
        let c = choices(p.as_object().unwrap()).unwrap();
        assert_eq!(
            c,
            vec![("Red".into(), json!("r")), ("g".into(), json!("g"))]
        );
        let p = json!({"oneOf": [{"const": 1, "title": "One"}, {"const": 2}]});
        let c = choices(p.as_object().unwrap()).unwrap();
        assert_eq!(c, vec![("One".into(), json!(1)), ("2".into(), json!(2))]);
        assert!(choices(json!({"type": "string"}).as_object().unwrap()).is_none());
    }
}
