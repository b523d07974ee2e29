//! Results a host can trust (docs/tasks.md): `maxResultBytes` (past it an isError naming the limit,
//! or with `"resultOverflow":"truncate"` the output cut with a note and `metadata.truncated`)
//! and `structuredContent` checked against the tool's `outputSchema` (JSON Schema 2020-12, the
//! `jsonschema` crate; `outputValidation` `warn` notes `metadata.outputSchemaErrors`, `strict`
//! is an isError naming the schema, `off` checks nothing).

use super::tasks::TaskSupport;
use super::Session;
use crate::config::{OutputValidation, Overflow};
use crate::conn::Response;
use crate::mapping::listing::ListedTool;
use crate::util::{read, write};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A tool's `outputSchema`, compiled at its first result rather than at the listing (cold start:
/// compiling, with the 2020-12 meta-schema the crate builds once per process to check it, cost
/// every connect to a server with such a tool ~1.5 ms of a cold start, called or not).
pub(crate) struct OutputSchema {
    schema: Value,
    compiled: OnceLock<Result<jsonschema::Validator, String>>,
}

impl OutputSchema {
    /// The validator, or why the schema does not compile (the tool's results are not checked).
    fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.compiled
            .get_or_init(|| jsonschema::validator_for(&self.schema).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }
}

/// The most schema errors one result lists.
const MAX_SCHEMA_ERRORS: usize = 10;

impl Session {
    /// Notes each listed tool's `execution.taskSupport` and keeps its `outputSchema`, compiled
    /// at the tool's first result ([`OutputSchema`]).
    pub(super) fn learn_tools(&self, tools: &[ListedTool]) {
        let mut supports = HashMap::new();
        let mut schemas = HashMap::new();
        for t in tools {
            let m = t.to_map();
            let Some(name) = m.get("name").and_then(Value::as_str) else {
                continue;
            };
            let support = TaskSupport::of(&m);
            if support != TaskSupport::Forbidden {
                supports.insert(name.to_string(), support);
            }
            if self.spec.output_validation == OutputValidation::Off {
                continue;
            }
            if let Some(schema) = m.get("outputSchema").filter(|s| s.is_object()) {
                schemas.insert(
                    name.to_string(),
                    Arc::new(OutputSchema {
                        schema: schema.clone(),
                        compiled: OnceLock::new(),
                    }),
                );
            }
        }
        // Swapped whole (a refresh may change them while calls read them).
        *write(&self.task_support) = supports;
        *write(&self.output_schemas) = schemas;
    }

    /// A `tools/call` response line as a ToolResult (§1) under the size limit and the output
    /// schema; Err is the JSON-RPC error the server answered.
    pub(super) fn shape_result(&self, remote: &str, reply: &Response) -> Result<String, Value> {
        let line = &reply.line;
        let max = self.spec.max_result_bytes;
        let over = line.len() > max;
        if over && self.spec.result_overflow == Overflow::Error {
            // The error is still the server's when it answered one.
            crate::json::rpc::result_value(line)?;
            return Ok(crate::mapping::shape::failure(&format!(
                "server `{}`: tools/call `{remote}`: the result is {} bytes, over maxResultBytes ({max}); it was dropped",
                self.spec.name,
                line.len()
            )));
        }
        let shaped = crate::mapping::shape::from_members(line, &reply.members)?;
        let schema = read(&self.output_schemas).get(remote).cloned();
        let shaped = match schema.as_deref().map(OutputSchema::validator) {
            Some(Ok(v)) => self.check_output(remote, line, &shaped, v)?,
            // Not checked, and the result says why (the listing no longer compiles schemas).
            Some(Err(why)) => with_metadata(
                &shaped,
                "outputSchemaErrors",
                Value::Array(vec![Value::String(format!(
                    "the tool's outputSchema is not a valid JSON Schema ({why}); the result was not checked"
                ))]),
            ),
            None => shaped,
        };
        Ok(if over {
            truncated(&shaped, max, line.len())
        } else {
            shaped
        })
    }

    fn check_output(
        &self,
        remote: &str,
        line: &str,
        shaped: &str,
        v: &jsonschema::Validator,
    ) -> Result<String, Value> {
        let result = crate::json::rpc::result_value(line)?;
        if result.get("isError") == Some(&Value::Bool(true)) {
            return Ok(shaped.to_string());
        }
        let errors: Vec<String> = match result.get("structuredContent") {
            None | Some(Value::Null) => {
                vec![
                    "the tool declares an outputSchema but its result has no structuredContent"
                        .into(),
                ]
            }
            Some(sc) => v
                .iter_errors(sc)
                .take(MAX_SCHEMA_ERRORS)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("{at}: {e}")
                    }
                })
                .collect(),
        };
        if errors.is_empty() {
            return Ok(shaped.to_string());
        }
        Ok(match self.spec.output_validation {
            OutputValidation::Strict => crate::mapping::shape::failure(&format!(
                "server `{}`: tools/call `{remote}`: the structuredContent does not match the tool's outputSchema: {}",
                self.spec.name,
                errors.join("; ")
            )),
            _ => with_metadata(
                shaped,
                "outputSchemaErrors",
                Value::Array(errors.into_iter().map(Value::String).collect()),
            ),
        })
    }
}

/// `result` with `metadata[key] = value` (other members kept).
fn with_metadata(result: &str, key: &str, value: Value) -> String {
    let Ok(Value::Object(mut r)) = serde_json::from_str::<Value>(result) else {
        return result.to_string();
    };
    let meta = r
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = meta {
        m.insert(key.into(), value);
    }
    crate::json::to_text(&Value::Object(r))
}

/// The output cut to `max` bytes (at a character boundary) with a note, and
/// `metadata.truncated = {"bytes": <the result's size>, "limit": max}`.
fn truncated(result: &str, max: usize, bytes: usize) -> String {
    let Ok(Value::Object(mut r)) = serde_json::from_str::<Value>(result) else {
        return result.to_string();
    };
    if let Some(Value::String(o)) = r.get_mut("output") {
        let mut end = max.min(o.len());
        while !o.is_char_boundary(end) {
            end -= 1;
        }
        o.truncate(end);
        o.push_str(&format!(
            "\n[cut: the result was {bytes} bytes, over maxResultBytes ({max})]"
        ));
    }
    let r = crate::json::to_text(&Value::Object(r));
    with_metadata(
        &r,
        "truncated",
        serde_json::json!({"bytes": bytes, "limit": max}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_a_char_boundary_and_says_so() {
        let r = crate::mapping::shape::failure("");
        let r = r.replace(r#""output":"""#, r#""output":"ééé""#);
        let c: Value = serde_json::from_str(&truncated(&r, 3, 99)).unwrap();
        let out = c["output"].as_str().unwrap();
        assert!(
            out.starts_with("é\n[cut: the result was 99 bytes, over maxResultBytes (3)]"),
            "{out}"
        );
        assert_eq!(
            c["metadata"]["truncated"],
            serde_json::json!({"bytes": 99, "limit": 3})
        );
    }

    #[test]
    fn an_output_schema_compiles_at_its_first_use_and_once() {
        let good = OutputSchema {
            schema: serde_json::json!({"type": "object", "required": ["n"]}),
            compiled: OnceLock::new(),
        };
        assert!(
            good.compiled.get().is_none(),
            "nothing compiled before a result needs it"
        );
        let v = good.validator().unwrap();
        assert!(v.is_valid(&serde_json::json!({"n": 1})));
        assert!(!v.is_valid(&serde_json::json!({})));
        assert!(std::ptr::eq(v, good.validator().unwrap()), "compiled once");
        let bad = OutputSchema {
            schema: serde_json::json!({"type": "no-such-type"}),
            compiled: OnceLock::new(),
        };
        assert!(!bad.validator().unwrap_err().is_empty());
    }

    #[test]
    fn with_metadata_keeps_what_is_there() {
        let r = r#"{"output":"x","isError":false,"metadata":{"parts":[1]}}"#;
        let v: Value = serde_json::from_str(&with_metadata(r, "k", Value::Bool(true))).unwrap();
        assert_eq!(v["metadata"], serde_json::json!({"parts": [1], "k": true}));
    }
}
