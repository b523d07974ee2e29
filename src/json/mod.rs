//! JSON in and out, untouched (contract §4 "Values pass through untouched"): serde_json with
//! `preserve_order` (key order) and `arbitrary_precision` (number text; its parser writes every
//! exponent as a lower-case `e` with an explicit sign, which is the pinned normalisation).

pub(crate) mod canon;
pub(crate) mod rpc;
pub(crate) mod scan;
#[cfg(test)]
mod scan_tests;
use crate::error::{Error, ErrorKind, Result};
use serde_json::{Map, Value};

/// Parses strict JSON; `what` names the argument in the error ("`answer_json` is not JSON: …").
pub fn parse(text: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorKind::InvalidJson, format!("{what} is not JSON: {e}")))
}

/// Parses strict JSON that must be an object.
pub fn parse_object(text: &str, what: &str) -> Result<Map<String, Value>> {
    match parse(text, what)? {
        Value::Object(m) => Ok(m),
        other => Err(Error::invalid_argument(format!(
            "{what} must be a JSON object, got {}",
            type_name(&other)
        ))),
    }
}

/// Compact JSON text; strings keep raw UTF-8 (only `"`, `\` and control characters escaped).
pub fn to_text(v: &Value) -> String {
    // Serialising a Value into a String cannot fail.
    serde_json::to_string(v).unwrap_or_default()
}

/// A short name of a value's JSON type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_order_survive() {
        let t = r#"{"z":1.50,"a":123456789012345678901234567890,"e":1E2,"s":"é😀"}"#;
        let v = parse(t, "x").unwrap();
        assert_eq!(
            to_text(&v),
            r#"{"z":1.50,"a":123456789012345678901234567890,"e":1e+2,"s":"é😀"}"#
        );
    }

    #[test]
    fn strictness() {
        assert_eq!(
            parse(r#""\ud800""#, "x").unwrap_err().kind,
            ErrorKind::InvalidJson
        );
        assert_eq!(parse("{} x", "x").unwrap_err().kind, ErrorKind::InvalidJson);
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(parse(&deep, "x").unwrap_err().kind, ErrorKind::InvalidJson);
        assert!(parse_object("[]", "x")
            .unwrap_err()
            .message
            .contains("an array"));
    }
}
