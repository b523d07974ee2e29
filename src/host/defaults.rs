//! What the live bridge sends for one answered elicitation (contract §4 "The live bridge does
//! more"): SEP-1034 defaults filled in on a form-mode accept, the content checked against the
//! requested schema (types, `required`, enum values), and URL-mode accepts without content.

use crate::mapping::elicitation::{answer_to_result, ElicitResult};
use crate::responder::Finish;
use serde_json::{Map, Value};

/// The ElicitResult for `finish`, and the reason to record when it became a cancel.
pub fn live_result(
    finish: Finish,
    url_mode: bool,
    schema: Option<&Value>,
) -> (ElicitResult, Option<String>) {
    let answer = match finish {
        Finish::Answer(a) => a,
        Finish::Cancel(reason) => return (ElicitResult::Cancel, Some(reason)),
    };
    match answer_to_result(answer) {
        ElicitResult::Accept(_) if url_mode => (ElicitResult::AcceptWithoutContent, None),
        ElicitResult::Accept(mut content) => {
            if let Some(Value::Object(schema)) = schema {
                fill_defaults(schema, &mut content);
                if let Err(why) = validate(schema, &content) {
                    return (
                        ElicitResult::Cancel,
                        Some(format!(
                            "accepted content does not match the requested schema: {why}"
                        )),
                    );
                }
            }
            (ElicitResult::Accept(content), None)
        }
        other => (other, None),
    }
}

fn properties(schema: &Map<String, Value>) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// Adds each property the answer left out that carries a `default` (SEP-1034).
pub fn fill_defaults(schema: &Map<String, Value>, content: &mut Map<String, Value>) {
    let Some(props) = properties(schema) else {
        return;
    };
    for (name, prop) in props {
        if content.contains_key(name) {
            continue;
        }
        if let Some(d) = prop.get("default") {
            content.insert(name.clone(), d.clone());
        }
    }
}

/// Checks `required`, each present property's `type`, and `enum` / `oneOf`/`anyOf` consts.
pub fn validate(schema: &Map<String, Value>, content: &Map<String, Value>) -> Result<(), String> {
    if let Some(Value::Array(required)) = schema.get("required") {
        for r in required.iter().filter_map(Value::as_str) {
            if !content.contains_key(r) {
                return Err(format!("required field `{r}` is missing"));
            }
        }
    }
    let Some(props) = properties(schema) else {
        return Ok(());
    };
    for (name, value) in content {
        let Some(prop) = props.get(name).and_then(Value::as_object) else {
            continue;
        };
        check_value(prop, value).map_err(|why| format!("field `{name}` {why}"))?;
    }
    Ok(())
}

fn check_value(prop: &Map<String, Value>, value: &Value) -> Result<(), String> {
    match prop.get("type") {
        Some(Value::String(t)) => check_type(t, value)?,
        Some(Value::Array(ts))
            if !ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| check_type(t, value).is_ok()) =>
        {
            return Err(format!(
                "has the wrong type ({})",
                crate::json::type_name(value)
            ));
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = prop.get("enum") {
        if !allowed.contains(value) {
            return Err(format!(
                "is not one of the allowed values: {}",
                crate::json::to_text(value)
            ));
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(options)) = prop.get(key) {
            let consts: Vec<&Value> = options.iter().filter_map(|o| o.get("const")).collect();
            if !consts.is_empty() && !consts.contains(&value) {
                return Err(format!(
                    "is not one of the allowed values: {}",
                    crate::json::to_text(value)
                ));
            }
        }
    }
    if let (Some(Value::Object(items)), Value::Array(values)) = (prop.get("items"), value) {
        for v in values {
            check_value(items, v)?;
        }
    }
    Ok(())
}

fn check_type(t: &str, v: &Value) -> Result<(), String> {
    let ok = match t {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("must be {t}, got {}", crate::json::type_name(v)))
    }
}

/// An integer in JSON Schema's sense: a number with no fractional part (`1.0` counts).
fn is_integer(v: &Value) -> bool {
    let Value::Number(n) = v else {
        return false;
    };
    if n.is_i64() || n.is_u64() {
        return true;
    }
    let text = n.to_string();
    if !text.contains(['.', 'e', 'E']) {
        return true; // a big integer beyond 64 bits
    }
    n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{parse, to_text};
    use crate::mapping::elicitation::Answer;

    fn run(schema: &str, data: &str) -> (String, Option<String>) {
        let schema = parse(schema, "s").unwrap();
        let data = parse(data, "d").unwrap().as_object().cloned();
        let (r, why) = live_result(
            Finish::Answer(Answer {
                ok: true,
                data,
                reason: None,
            }),
            false,
            Some(&schema),
        );
        (to_text(&r.into_value()), why)
    }

    const S: &str = r#"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","default":30},"c":{"type":"string","enum":["r","g"],"default":"g"}},"required":["name"]}"#;

    #[test]
    fn defaults_then_validation() {
        assert_eq!(
            run(S, r#"{"name":"Bo"}"#).0,
            r#"{"action":"accept","content":{"name":"Bo","age":30,"c":"g"}}"#
        );
        assert_eq!(run(S, r#"{"name":"Bo","age":3.0}"#).1, None);
        let (r, why) = run(S, r#"{"age":3}"#);
        assert_eq!(r, r#"{"action":"cancel"}"#);
        assert!(why.unwrap().contains("`name`"));
        assert!(run(S, r#"{"name":"Bo","age":"x"}"#)
            .1
            .unwrap()
            .contains("integer"));
        assert!(run(S, r#"{"name":"Bo","c":"blue"}"#)
            .1
            .unwrap()
            .contains("allowed"));
    }

    #[test]
    fn url_mode_accept_has_no_content() {
        let (r, _) = live_result(
            Finish::Answer(Answer {
                ok: true,
                data: None,
                reason: None,
            }),
            true,
            None,
        );
        assert_eq!(to_text(&r.into_value()), r#"{"action":"accept"}"#);
    }
}
