//! Durable suspension (contract §6, c-api.md "Suspended calls"): a question the resolver
//! suspended (`TN_SUSPEND`) ends the call at once with `metadata.pending = {requests, resume}`;
//! the resume token (`tn1.` + base64url of JSON) lets any thread, or another process connected
//! with the same config, continue it. It holds no header, environment value or secret: the
//! server's name, the tool, the arguments, the era, the round count, the `requestState` and the
//! questions as the server sent them.

use super::Era;
use crate::error::{Error, Result};
use crate::mapping::elicitation;
use crate::responder::Finish;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The task a call became: its id and the server's latest `requestState` (SEP-2663).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct TaskRef {
    #[serde(rename = "taskId")]
    pub(crate) id: String,
    #[serde(
        rename = "requestState",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub(crate) request_state: Option<String>,
}

/// Where a call (re)starts: a fresh call, or a resumed one (§6).
#[derive(Default)]
pub(crate) struct Start {
    /// MRTR rounds already answered.
    pub(crate) rounds: u32,
    /// `inputResponses` (a JSON object's text) and `requestState` for the next request.
    pub(crate) input_responses: Option<String>,
    pub(crate) request_state: Option<String>,
    /// A -32042 was already answered: this is the retry.
    pub(crate) url_retry: bool,
    /// A resumed call: it advertises elicitation as its first attempt did, and on a client
    /// without a resolver a new question becomes a new pending (c-api.md "Suspended calls").
    pub(crate) resumed: bool,
    /// The task the call became (docs/tasks.md): a resumed one is polled again, nothing re-run.
    pub(crate) task: Option<TaskRef>,
}

/// One suspended question: its §10 Request, and what answering it needs.
pub(crate) struct SavedRequest {
    pub(crate) id: String,
    /// The `inputRequests` key (MRTR) or the `elicitationId` (-32042).
    pub(crate) key: String,
    pub(crate) params: Map<String, Value>,
    pub(crate) request_json: String,
}

/// What a suspended call needs to go on.
pub(crate) struct SuspendedCall<'a> {
    pub(crate) server: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) arguments: &'a str,
    pub(crate) era: Era,
    pub(crate) protocol_version: &'a str,
    pub(crate) rounds: u32,
    pub(crate) request_state: Option<&'a str>,
    /// A -32042 browser step rather than an MRTR round.
    pub(crate) url_step: bool,
    pub(crate) requests: &'a [SavedRequest],
}

#[derive(Serialize, Deserialize)]
struct ResumeToken {
    v: u32,
    server: String,
    tool: String,
    arguments: Box<serde_json::value::RawValue>,
    era: String,
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
    round: u32,
    #[serde(
        rename = "requestState",
        skip_serializing_if = "Option::is_none",
        default
    )]
    request_state: Option<String>,
    #[serde(default)]
    kind: String,
    requests: Vec<TokenRequest>,
    /// The task a call became (`kind` "task"): its id and `requestState`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    task: Option<TaskRef>,
}

#[derive(Serialize, Deserialize)]
struct TokenRequest {
    id: String,
    key: String,
    params: Map<String, Value>,
}

fn era_name(era: Era) -> &'static str {
    match era {
        Era::Legacy => "legacy",
        Era::Modern => "modern",
    }
}

/// The ToolResult of a suspended call (§6): isError false, the prompts, and `pending`.
pub(crate) fn pending_result(p: &SuspendedCall<'_>) -> String {
    let token = ResumeToken {
        v: 1,
        server: p.server.to_string(),
        tool: p.tool.to_string(),
        arguments: serde_json::value::RawValue::from_string(p.arguments.to_string())
            .unwrap_or_else(|_| {
                serde_json::value::RawValue::from_string("{}".into()).unwrap_or_default()
            }),
        era: era_name(p.era).into(),
        protocol_version: p.protocol_version.into(),
        round: p.rounds,
        request_state: p.request_state.map(str::to_string),
        kind: if p.url_step { "url" } else { "mrtr" }.into(),
        task: None,
        requests: token_requests(p.requests),
    };
    let output = String::from("The server asked for input; the call is suspended.");
    suspended_result(output, p.requests, None, encode(&token))
}

fn token_requests(requests: &[SavedRequest]) -> Vec<TokenRequest> {
    requests
        .iter()
        .map(|r| TokenRequest {
            id: r.id.clone(),
            key: r.key.clone(),
            params: r.params.clone(),
        })
        .collect()
}

/// `tn1.` + base64url (no padding) of the token's JSON (c-api.md "Suspended calls").
fn encode(token: &ResumeToken) -> String {
    let json = serde_json::to_string(token).unwrap_or_default();
    format!(
        "tn1.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    )
}

/// The ToolResult of a suspended call: isError false, `output` then one prompt per Request (a
/// URL after a space), `metadata.pending = {requests, task?, resume}`.
fn suspended_result(
    mut output: String,
    saved: &[SavedRequest],
    task: Option<Value>,
    resume: String,
) -> String {
    let mut requests = Vec::new();
    for r in saved {
        let req: Value = serde_json::from_str(&r.request_json).unwrap_or(Value::Null);
        output.push('\n');
        output.push_str(req.get("prompt").and_then(Value::as_str).unwrap_or(""));
        if let Some(url) = req.get("url").and_then(Value::as_str) {
            output.push(' ');
            output.push_str(url);
        }
        requests.push(req);
    }
    let mut pending = Map::new();
    pending.insert("requests".into(), Value::Array(requests));
    if let Some(t) = task {
        pending.insert("task".into(), t);
    }
    pending.insert("resume".into(), Value::String(resume));
    let mut metadata = Map::new();
    metadata.insert("pending".into(), Value::Object(pending));
    let mut result = Map::new();
    result.insert("output".into(), Value::String(output));
    result.insert("isError".into(), Value::Bool(false));
    result.insert("metadata".into(), Value::Object(metadata));
    crate::json::to_text(&Value::Object(result))
}

/// A decoded resume token.
pub(crate) struct Resume {
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) arguments: String,
    pub(crate) era: Era,
    pub(crate) protocol_version: String,
    rounds: u32,
    request_state: Option<String>,
    url_step: bool,
    requests: Vec<TokenRequest>,
    task: Option<TaskRef>,
}

/// Decodes `token`; anything malformed or foreign is invalid input (c-api.md).
pub(crate) fn decode(token: &str) -> Result<Resume> {
    let bad = |why: &str| {
        Error::invalid_argument(format!(
            "resume_token is not a toolnexus resume token: {why}"
        ))
    };
    let body = token
        .strip_prefix("tn1.")
        .ok_or_else(|| bad("it does not start with `tn1.`"))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| bad("not base64url"))?;
    let t: ResumeToken = serde_json::from_slice(&bytes).map_err(|e| bad(&e.to_string()))?;
    if t.v != 1 {
        return Err(bad("unknown version"));
    }
    let era = match t.era.as_str() {
        "legacy" => Era::Legacy,
        "modern" => Era::Modern,
        _ => return Err(bad("unknown era")),
    };
    if t.requests.is_empty() && t.task.is_none() {
        return Err(bad("it names no question"));
    }
    Ok(Resume {
        server: t.server,
        tool: t.tool,
        arguments: t.arguments.get().to_string(),
        era,
        protocol_version: t.protocol_version,
        rounds: t.round,
        request_state: t.request_state,
        url_step: t.kind == "url",
        requests: t.requests,
        task: t.task,
    })
}

/// How a resumed call goes on: where to start, or (a declined browser step) its failure text.
pub(crate) enum Continue {
    From(Start),
    Fails(String),
}

impl Resume {
    /// `answers_json` (`{"<Request id>": <§10 Answer>, …}`) → the next round's start. A key
    /// that is no Request id of the token is invalid input; a Request with no answer, or an
    /// invalid Answer, is cancel (c-api.md).
    pub(crate) fn answers(&self, answers_json: &str) -> Result<Continue> {
        let answers = crate::json::parse_object(answers_json, "answers_json")?;
        for k in answers.keys() {
            if !self.requests.iter().any(|r| &r.id == k) {
                return Err(Error::invalid_argument(format!(
                    "answers_json: `{k}` is not the id of a Request of this resume token"
                )));
            }
        }
        let mut responses = Map::new();
        for r in &self.requests {
            let url_mode = self.url_step || elicitation::is_url_mode(&r.params);
            let finish = match answers.get(&r.id) {
                Some(a) => match elicitation::parse_answer(a.clone(), Some(&r.id)) {
                    Ok(a) => Finish::Answer(a),
                    Err(e) => Finish::Cancel(e.message),
                },
                None => Finish::Cancel("no answer in answers_json".into()),
            };
            let (result, _) = crate::host::defaults::live_result(
                finish,
                url_mode,
                r.params.get("requestedSchema"),
            );
            if self.url_step
                && !matches!(
                    result,
                    elicitation::ElicitResult::Accept(_)
                        | elicitation::ElicitResult::AcceptWithoutContent
                )
            {
                let how = if matches!(result, elicitation::ElicitResult::Decline) {
                    "declined"
                } else {
                    "cancelled"
                };
                let step = r
                    .params
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let url = r.params.get("url").and_then(Value::as_str).unwrap_or("");
                return Ok(Continue::Fails(format!(
                    "the browser step the server requires was {how}: {step} {url}"
                )));
            }
            responses.insert(r.key.clone(), result.into_value());
        }
        Ok(Continue::From(if self.url_step {
            Start {
                rounds: self.rounds,
                url_retry: true,
                resumed: true,
                task: self.task.clone(),
                ..Start::default()
            }
        } else {
            Start {
                rounds: self.rounds,
                input_responses: Some(crate::json::to_text(&Value::Object(responses))),
                request_state: self.request_state.clone(),
                url_retry: false,
                resumed: true,
                task: self.task.clone(),
            }
        }))
    }
}

/// The resume token of a call that became a task (docs/tasks.md): the server, the tool, the era, the
/// task's id and `requestState`, and the Requests of a suspended question. No arguments (the
/// task is never run again) and no secret.
pub(crate) fn task_token(
    s: &super::Session,
    tool: &str,
    task: &TaskRef,
    requests: &[SavedRequest],
) -> String {
    let token = ResumeToken {
        v: 1,
        server: s.spec.name.clone(),
        tool: tool.to_string(),
        arguments: serde_json::value::RawValue::from_string("{}".into()).unwrap_or_default(),
        era: era_name(s.era).into(),
        protocol_version: s.protocol_version.clone(),
        round: 0,
        request_state: None,
        kind: "task".into(),
        requests: token_requests(requests),
        task: Some(task.clone()),
    };
    encode(&token)
}

/// The ToolResult of a wait that ended while the task works, or with its question suspended
/// (docs/tasks.md): isError false, `metadata.pending = {task, requests, resume}`.
pub(crate) fn task_pending_result(
    s: &super::Session,
    tool: &str,
    task: &TaskRef,
    status: &str,
    requests: &[SavedRequest],
) -> String {
    let output = if requests.is_empty() {
        format!(
            "The task `{}` is still {status} on the server; the call is suspended (resume it to collect the result).",
            task.id
        )
    } else {
        String::from("The server asked for input; the call is suspended.")
    };
    let mut t = Map::new();
    t.insert("taskId".into(), Value::String(task.id.clone()));
    t.insert("status".into(), Value::String(status.to_string()));
    suspended_result(
        output,
        requests,
        Some(Value::Object(t)),
        task_token(s, tool, task, requests),
    )
}
