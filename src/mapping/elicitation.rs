//! The elicitation bridge (contract §4, shared §2/§10): MCP `elicitation/create` params → §10
//! Request, §10 Answer → MCP ElicitResult, and one inbound server message → the reply. Pure
//! functions; the byte-parity vectors in `shared/parity/` pin every choice here.

use crate::error::{Error, Result};
use crate::json::rpc::{self, Classified};
use crate::json::type_name;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static REQUEST_COUNTER: AtomicU64 = AtomicU64::new(1);

/// A fresh §10 Request id: `elc-` + base-36 milliseconds since the epoch + `-` + a per-process
/// counter from 1. The counter, not the clock, is what makes ids unique.
pub fn next_request_id() -> String {
    let n = REQUEST_COUNTER.fetch_add(1, Ordering::Relaxed);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    // What `format!("elc-{}-{n}", base36(ms))` writes, in one allocation (one per question).
    let mut id = String::with_capacity(40);
    id.push_str("elc-");
    push_base36(&mut id, ms);
    id.push('-');
    crate::json::rpc::push_u64(&mut id, n);
    id
}

fn push_base36(out: &mut String, mut n: u64) {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut buf = [0u8; 13];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = DIGITS[(n % 36) as usize];
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.extend(buf[i..].iter().map(|&d| char::from(d)));
}

/// Whether `elicitation/create` params ask for URL mode (exactly `"url"`; §4 table).
pub fn is_url_mode(params: &Map<String, Value>) -> bool {
    matches!(params.get("mode"), Some(Value::String(m)) if m == "url")
}

/// A §10 Request: its id, and its JSON text `{id, kind, prompt, url?, data?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: String,
    pub json: String,
}

/// MCP `elicitation/create` params → a §10 Request (§4 table). Serialised straight from the
/// params, by reference: the schema is not copied.
pub fn elicitation_to_request(params: &Map<String, Value>) -> Request {
    #[derive(Serialize)]
    struct Data<'a> {
        schema: &'a Value,
    }
    #[derive(Serialize)]
    struct Req<'a> {
        id: &'a str,
        kind: &'static str,
        prompt: std::borrow::Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        url: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<Data<'a>>,
    }
    let url_mode = is_url_mode(params);
    let id = next_request_id();
    let prompt = match params.get("message") {
        None | Some(Value::Null) => std::borrow::Cow::Borrowed(""),
        Some(Value::String(s)) => std::borrow::Cow::Borrowed(s.as_str()),
        Some(other) => std::borrow::Cow::Owned(crate::json::to_text(other)),
    };
    let url = match params.get("url") {
        Some(Value::String(u)) if url_mode && !u.is_empty() => Some(u.as_str()),
        _ => None,
    };
    let data = match params.get("requestedSchema") {
        Some(schema) if !url_mode && !schema.is_null() => Some(Data { schema }),
        _ => None,
    };
    let req = Req {
        id: &id,
        kind: if url_mode { "authorization" } else { "input" },
        prompt,
        url,
        data,
    };
    // Serialising borrowed strings and a Value into a String cannot fail.
    let json = serde_json::to_string(&req).unwrap_or_default();
    Request { id, json }
}

/// A validated §10 Answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub ok: bool,
    /// `data` when `ok` (absent or null → None).
    pub data: Option<Map<String, Value>>,
    /// `reason` when it is a string.
    pub reason: Option<String>,
}

/// What the server is sent back for one elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitResult {
    Accept(Map<String, Value>),
    /// URL-mode accept: the MCP spec allows `content` only in form mode (§4 live bridge).
    AcceptWithoutContent,
    Decline,
    Cancel,
}

impl ElicitResult {
    /// The MCP ElicitResult JSON: `{"action":"accept","content":{…}}` etc.
    pub fn into_value(self) -> Value {
        let mut m = Map::new();
        match self {
            ElicitResult::Accept(content) => {
                m.insert("action".into(), Value::String("accept".into()));
                m.insert("content".into(), Value::Object(content));
            }
            ElicitResult::AcceptWithoutContent => {
                m.insert("action".into(), Value::String("accept".into()));
            }
            ElicitResult::Decline => {
                m.insert("action".into(), Value::String("decline".into()));
            }
            ElicitResult::Cancel => {
                m.insert("action".into(), Value::String("cancel".into()));
            }
        }
        Value::Object(m)
    }

    /// The JSON-RPC result line for `id` (§4 live bridge), written straight as text: the same
    /// bytes as `to_text(&result_frame(id, self.into_value()))` without building the frame map.
    pub fn frame_text(&self, id: &Value) -> String {
        let mut s = String::with_capacity(64);
        s.push_str(r#"{"jsonrpc":"2.0","id":"#);
        s.push_str(&crate::json::to_text(id));
        s.push_str(match self {
            ElicitResult::Accept(_) => r#","result":{"action":"accept","content":"#,
            ElicitResult::AcceptWithoutContent => r#","result":{"action":"accept"}}"#,
            ElicitResult::Decline => r#","result":{"action":"decline"}}"#,
            ElicitResult::Cancel => r#","result":{"action":"cancel"}}"#,
        });
        if let ElicitResult::Accept(content) = self {
            // Serialising a Map into a String cannot fail.
            s.push_str(&serde_json::to_string(content).unwrap_or_default());
            s.push_str("}}");
        }
        s
    }
}

/// Validates a §10 Answer (§4): `ok` must be a boolean; when true, `data` if present and not
/// null must be an object. When `expected_id` is given, an `id` that is present (and not null)
/// must equal it.
pub fn parse_answer(v: Value, expected_id: Option<&str>) -> Result<Answer> {
    let mut obj = match v {
        Value::Object(m) => m,
        other => {
            return Err(Error::invalid_argument(format!(
                "an Answer must be a JSON object, got {}",
                type_name(&other)
            )))
        }
    };
    let ok = match obj.get("ok") {
        Some(Value::Bool(b)) => *b,
        None => return Err(Error::invalid_argument("an Answer needs `ok` (a boolean)")),
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "Answer `ok` must be a boolean, got {}",
                type_name(other)
            )))
        }
    };
    if let (Some(want), Some(got)) = (expected_id, obj.get("id")) {
        if !got.is_null() && got.as_str() != Some(want) {
            return Err(Error::invalid_argument(format!(
                "Answer `id` {} does not match the Request id \"{want}\"",
                crate::json::to_text(got)
            )));
        }
    }
    let data = if ok {
        match obj.swap_remove("data") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "Answer `data` must be a JSON object when `ok` is true, got {}",
                    type_name(&other)
                )))
            }
        }
    } else {
        None
    };
    let reason = match obj.swap_remove("reason") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Ok(Answer { ok, data, reason })
}

/// §10 Answer → ElicitResult (§4 table): ok → accept (content = data or `{}`), reason
/// `"declined"` → decline, anything else → cancel.
pub fn answer_to_result(a: Answer) -> ElicitResult {
    if a.ok {
        ElicitResult::Accept(a.data.unwrap_or_default())
    } else if a.reason.as_deref() == Some("declined") {
        ElicitResult::Decline
    } else {
        ElicitResult::Cancel
    }
}

/// What a resolver made of one Request: an Answer, or nothing (failed, no answer, deferred in
/// the pure function) which the bridge sends as cancel.
pub type ResolverOutcome = Option<Answer>;

/// A synchronous resolver for [`server_request_response`]: §10 Request in, outcome out.
pub type SyncResolver<'a> = &'a mut dyn FnMut(&Request) -> ResolverOutcome;

/// How to answer one server request (§4): the policy shared by the pure function and the
/// live reader.
#[derive(Debug)]
pub enum Route<'a> {
    /// Reply with this frame now.
    Reply(Value),
    /// Ask the host: an `elicitation/create` with these params (absent/null → `{}`).
    Elicit(std::borrow::Cow<'a, Map<String, Value>>),
}

/// Routes a server request: `ping` → `{}`; `elicitation/create` → the resolver (or -32601
/// without one; -32602 when params is not an object); anything else → -32601.
pub fn route<'a>(
    id: &Value,
    method: &str,
    params: Option<&'a Value>,
    has_resolver: bool,
) -> Route<'a> {
    match method {
        "ping" => Route::Reply(rpc::result_frame(id, Value::Object(Map::new()))),
        "elicitation/create" if has_resolver => match elicitation_params(params) {
            Some(p) => Route::Elicit(p),
            None => Route::Reply(rpc::error_frame(id, -32602, "Invalid params")),
        },
        _ => Route::Reply(rpc::error_frame(id, -32601, "Method not found")),
    }
}

/// One inbound JSON-RPC message → the reply frame to write back, or None when it is not a
/// server request (§4 "One inbound server message → reply"). `resolver` is None when the host
/// registered none; it receives the §10 Request.
pub fn server_request_response(
    msg: &Value,
    resolver: Option<SyncResolver<'_>>,
) -> Result<Option<Value>> {
    let (id, method, params) = match rpc::classify(msg)? {
        Classified::Request { id, method, params } => (id, method, params),
        _ => return Ok(None),
    };
    let reply = match (route(id, method, params, resolver.is_some()), resolver) {
        (Route::Reply(frame), _) => frame,
        (Route::Elicit(p), Some(resolve)) => {
            let request = elicitation_to_request(p.as_ref());
            let result = match resolve(&request) {
                Some(answer) => answer_to_result(answer),
                None => ElicitResult::Cancel,
            };
            rpc::result_frame(id, result.into_value())
        }
        (Route::Elicit(_), None) => rpc::error_frame(id, -32601, "Method not found"),
    };
    Ok(Some(reply))
}

/// `elicitation/create` params: absent or null count as `{}`; anything but an object is None
/// (→ -32602).
pub fn elicitation_params(
    params: Option<&Value>,
) -> Option<std::borrow::Cow<'_, Map<String, Value>>> {
    match params {
        None | Some(Value::Null) => Some(std::borrow::Cow::Owned(Map::new())),
        Some(Value::Object(m)) => Some(std::borrow::Cow::Borrowed(m)),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn req(params: &str) -> String {
        let p = parse(params, "p").unwrap();
        let r = elicitation_to_request(p.as_object().unwrap());
        r.json.replace(&r.id, "<ID>")
    }

    #[test]
    fn request_mapping() {
        assert_eq!(
            req(r#"{"mode":"url","url":"https://x","message":"m","requestedSchema":{}}"#),
            r#"{"id":"<ID>","kind":"authorization","prompt":"m","url":"https://x"}"#
        );
        assert_eq!(
            req(r#"{"message":1E2,"requestedSchema":{}}"#),
            r#"{"id":"<ID>","kind":"input","prompt":"1e+2","data":{"schema":{}}}"#
        );
    }

    #[test]
    fn ids_are_unique_and_counted() {
        let a = next_request_id();
        let b = next_request_id();
        assert!(a.starts_with("elc-") && a != b);
        let n = |s: &str| s.rsplit('-').next().unwrap().parse::<u64>().unwrap();
        assert!(n(&b) > n(&a));
        let base36 = |n| {
            let mut s = String::new();
            push_base36(&mut s, n);
            s
        };
        assert_eq!(base36(0), "0");
        assert_eq!(base36(36 * 36 + 35), "10z");
        assert_eq!(base36(u64::MAX), "3w5e11264sgsf");
    }

    #[test]
    fn answers() {
        let a = |t: &str| parse_answer(parse(t, "a").unwrap(), Some("elc-1-1"));
        assert_eq!(
            answer_to_result(a(r#"{"ok":false,"reason":"declined"}"#).unwrap()),
            ElicitResult::Decline
        );
        assert!(a(r#"{"ok":"yes"}"#).is_err());
        assert!(a(r#"{"ok":true,"data":[]}"#).is_err());
        assert!(a(r#"{"ok":true,"id":"other"}"#).is_err());
        assert!(a(r#"{"ok":false,"data":[]}"#).is_ok());
    }

    #[test]
    fn frame_text_is_the_frame_value_as_text() {
        let content = parse(
            r#"{"b":1.50,"a":"é\n","n":[1e2,null],"big":12345678901234567890123}"#,
            "c",
        )
        .unwrap();
        let results = [
            ElicitResult::Accept(content.as_object().unwrap().clone()),
            ElicitResult::Accept(Map::new()),
            ElicitResult::AcceptWithoutContent,
            ElicitResult::Decline,
            ElicitResult::Cancel,
        ];
        for id in [r#"7"#, r#""s-\"1""#, r#"1.0e3"#, r#"null"#] {
            let id = parse(id, "id").unwrap();
            for r in &results {
                let want = crate::json::to_text(&rpc::result_frame(&id, r.clone().into_value()));
                assert_eq!(r.frame_text(&id), want);
            }
        }
    }
}
