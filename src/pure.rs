//! The pure functions, JSON text in and out (c-api.md "Pure functions"; contract §4, §0.1):
//! the pinned mapping exactly, byte-identical to the vectors in `shared/parity`. The C ABI and
//! the `toolnexus` command both call these.

use crate::error::{Error, Result};
use crate::json::{parse, to_text, type_name};
use crate::responder::Resolver;
use crate::{mapping::elicitation, mapping::naming, responder};
use serde_json::Value;

/// MCP `elicitation/create` params (a JSON object) → a §10 Request. Anything but an object,
/// `null` included, is invalid input here; only the live bridge and
/// [`server_request_response`] read absent or `null` params as `{}` (§4).
pub fn elicitation_to_request(params_json: &str) -> Result<String> {
    let params = match parse(params_json, "params_json")? {
        Value::Object(m) => m,
        other => {
            return Err(Error::invalid_argument(format!(
                "params_json must be a JSON object, got {}",
                type_name(&other)
            )))
        }
    };
    Ok(elicitation::elicitation_to_request(&params).json)
}

/// A §10 Answer → an MCP ElicitResult (§4).
pub fn answer_to_result(answer_json: &str) -> Result<String> {
    let answer = elicitation::parse_answer(parse(answer_json, "answer_json")?, None)?;
    Ok(to_text(&elicitation::answer_to_result(answer).into_value()))
}

/// One inbound JSON-RPC message → the reply to write back, or None when it is not a server
/// request (§4). The resolver runs synchronously: only an answer given before it returns
/// counts; a deferral counts as cancel here.
pub fn server_request_response(
    message_json: &str,
    resolver: Option<&dyn Resolver>,
) -> Result<Option<String>> {
    let msg = parse(message_json, "message_json")?;
    let mut call =
        |req: &elicitation::Request| resolver.and_then(|r| responder::resolve_now(r, req));
    let resolve: Option<&mut dyn FnMut(&_) -> _> = match resolver {
        Some(_) => Some(&mut call),
        None => None,
    };
    Ok(elicitation::server_request_response(&msg, resolve)?.map(|reply| to_text(&reply)))
}

/// A name as a JSON string literal → its sanitized form, a JSON string literal (§0.1): every
/// code point outside `[a-zA-Z0-9_-]` becomes one `_`.
pub fn sanitize_name(name_json: &str) -> Result<String> {
    match parse(name_json, "name_json")? {
        Value::String(s) => Ok(to_text(&Value::String(naming::sanitize(&s)))),
        other => Err(Error::invalid_argument(format!(
            "name_json must be a JSON string, got {}",
            type_name(&other)
        ))),
    }
}

/// A JSON array of tools → the provider's function-calling shape (`openai`, `anthropic`,
/// `gemini`; c-api.md "Tools for a model").
pub fn tools_to_provider(tools_json: &str, style: &str) -> Result<String> {
    crate::mapping::adapters::tools_to_provider(
        tools_json,
        crate::mapping::adapters::Style::parse(style)?,
    )
}

/// An RFC 6570 URI template's variables, and its expansion when values are given (a resource
/// template picker; c-api.md "Resources"): `{"template":"…","values"?:{…}}` →
/// `{"variables":[…],"uri"?:"…"}`.
pub fn uri_template(request_json: &str) -> Result<String> {
    let v = parse(request_json, "request_json")?;
    if !v.is_object() {
        return Err(Error::invalid_argument(format!(
            "request_json must be a JSON object, got {}",
            type_name(&v)
        )));
    }
    crate::mapping::uri_template::template(&v)
        .map(|out| to_text(&out))
        .map_err(|why| Error::invalid_argument(format!("request_json: {why}")))
}
