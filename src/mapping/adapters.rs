//! Tools in a model provider's function-calling shape (c-api.md "Tools for a model"), the same
//! wrappers as the other toolnexus ports' adapters. The server's input schema passes through
//! verbatim (key order and number text kept, §4 "Values pass through untouched").

use crate::error::{Error, Result};
use crate::json::{parse, to_text, type_name};
use serde_json::{Map, Value};

/// The provider shapes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Style {
    /// `[{"type":"function","function":{"name","description","parameters"}}]`
    OpenAi,
    /// `[{"name","description","input_schema"}]`
    Anthropic,
    /// `[{"functionDeclarations":[{"name","description","parameters"}]}]`
    Gemini,
}

impl Style {
    pub fn parse(style: &str) -> Result<Style> {
        match style {
            "openai" => Ok(Style::OpenAi),
            "anthropic" => Ok(Style::Anthropic),
            "gemini" => Ok(Style::Gemini),
            other => Err(Error::invalid_argument(format!(
                "unknown style `{other}`: expected openai, anthropic or gemini"
            ))),
        }
    }
}

/// Maps a JSON array of §0.1 tools (as `tn_list_tools` gives them) to `style`. A missing or
/// null description is `""`; a missing schema is `{"type":"object"}`. Gemini wraps every
/// declaration in one object, with no tools too (`[{"functionDeclarations":[]}]`, as every
/// other port gives it); the other styles give `[]`.
pub fn tools_to_provider(tools_json: &str, style: Style) -> Result<String> {
    let tools = match parse(tools_json, "tools_json")? {
        Value::Array(items) => items,
        other => {
            return Err(Error::invalid_argument(format!(
                "tools_json must be a JSON array of tools, got {}",
                type_name(&other)
            )))
        }
    };
    let mut out = Vec::with_capacity(tools.len());
    for (i, t) in tools.into_iter().enumerate() {
        let Value::Object(mut t) = t else {
            return Err(Error::invalid_argument(format!(
                "tools_json[{i}] must be a tool object, got {}",
                type_name(&t)
            )));
        };
        let name = match t.swap_remove("name") {
            Some(Value::String(n)) => n,
            other => {
                return Err(Error::invalid_argument(format!(
                    "tools_json[{i}].name must be a string, got {}",
                    other.as_ref().map_or("nothing", type_name)
                )))
            }
        };
        let description = match t.swap_remove("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(d)) => d,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "tools_json[{i}].description must be a string, got {}",
                    type_name(&other)
                )))
            }
        };
        let schema = match t.swap_remove("inputSchema") {
            None | Some(Value::Null) => serde_json::json!({"type": "object"}),
            Some(s @ Value::Object(_)) => s,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "tools_json[{i}].inputSchema must be an object, got {}",
                    type_name(&other)
                )))
            }
        };
        out.push(shape(style, name, description, schema));
    }
    let out = match style {
        Style::Gemini => {
            let mut wrapper = Map::new();
            wrapper.insert("functionDeclarations".into(), Value::Array(out));
            vec![Value::Object(wrapper)]
        }
        _ => out,
    };
    Ok(to_text(&Value::Array(out)))
}

fn shape(style: Style, name: String, description: String, schema: Value) -> Value {
    let mut f = Map::new();
    f.insert("name".into(), Value::String(name));
    f.insert("description".into(), Value::String(description));
    match style {
        Style::Anthropic => {
            f.insert("input_schema".into(), schema);
            Value::Object(f)
        }
        Style::Gemini => {
            f.insert("parameters".into(), schema);
            Value::Object(f)
        }
        Style::OpenAi => {
            f.insert("parameters".into(), schema);
            let mut w = Map::new();
            w.insert("type".into(), Value::String("function".into()));
            w.insert("function".into(), Value::Object(f));
            Value::Object(w)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tests/vectors/providers.jsonl: `{"style","input","output"}` or `{"style","input","error"}`
    /// (the error's status name), one per line.
    #[test]
    fn provider_vectors() {
        let text = include_str!("../../tests/vectors/providers.jsonl");
        let mut n = 0;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line).unwrap();
            let input = v["input"].as_str().unwrap();
            let got = Style::parse(v["style"].as_str().unwrap())
                .and_then(|s| tools_to_provider(input, s));
            match (&v["output"], &v["error"], got) {
                (Value::String(want), _, Ok(got)) => assert_eq!(&got, want, "line {}", i + 1),
                (_, Value::String(kind), Err(e)) => {
                    assert_eq!(e.kind.status_name(), kind, "line {}: {e:?}", i + 1)
                }
                (_, _, got) => panic!("line {}: unexpected {got:?}", i + 1),
            }
            n += 1;
        }
        assert!(n >= 12, "only {n} vectors");
    }
}
