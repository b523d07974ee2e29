//! MRTR, the multi-round requests of MCP 2026-07-28 (contract §6): one round of a server's
//! `inputRequests`, each question handed to the host's resolver as a §10 Request (inline or
//! deferred, in key order), the answers gathered as `inputResponses`, or the round suspended
//! (`TN_SUSPEND`) or cancelled. Shared by `tools/call` ([`super::call`]), tasks and the other
//! requests that may ask (`prompts/get`, `resources/read`).

use super::suspend::SavedRequest;
use super::{CallCtl, Session};
use crate::host::question::{Asked, Question};
use crate::host::server_requests::ASKED_WITHOUT_RESOLVER;
use crate::mapping::elicitation::{self as bridge, ElicitResult};
use serde_json::{Map, Value};

/// The most MRTR retries of one request, across resumes (§6): the 11th `input_required` ends it.
pub(crate) const MAX_ROUNDS: u32 = 10;

/// How one round of questions ended.
pub(super) enum Round {
    /// Every question answered: `inputResponses` as JSON text.
    Answered(String),
    /// A question was suspended (§6): the Requests of the round and what resuming needs.
    Suspended(Vec<SavedRequest>),
    /// The request ends with this isError text.
    Fails(String),
    Cancelled,
}

impl Session {
    /// One MRTR round (§6): each `inputRequests` entry, in key order, handed to the resolver
    /// as a §10 Request; a round with only `requestState` is retried at once.
    pub(super) fn mrtr_round(&self, result: &Value, ctl: &CallCtl<'_>, resumed: bool) -> Round {
        let questions: Vec<(String, Map<String, Value>)> = match result.get("inputRequests") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(m)) => {
                let mut qs = Vec::new();
                for (key, ask) in m {
                    let method = ask.get("method").and_then(Value::as_str).unwrap_or("");
                    if method != "elicitation/create" {
                        return Round::Fails(format!(
                            "the server asked for `{method}` (input request `{key}`), which this client does not answer"
                        ));
                    }
                    let params = match ask.get("params") {
                        Some(Value::Object(p)) => p.clone(),
                        _ => Map::new(),
                    };
                    qs.push((key.clone(), params));
                }
                qs
            }
            Some(_) => return Round::Fails("the server's inputRequests is not an object".into()),
        };
        if questions.is_empty() {
            return Round::Answered("{}".into());
        }
        let saved = |qs: &[(String, Map<String, Value>)], requests: &[bridge::Request]| {
            qs.iter()
                .zip(requests)
                .map(|((key, params), r)| SavedRequest {
                    id: r.id.clone(),
                    key: key.clone(),
                    params: params.clone(),
                    request_json: r.json.clone(),
                })
                .collect::<Vec<_>>()
        };
        let requests: Vec<bridge::Request> = questions
            .iter()
            .map(|(_, p)| self.request_for(p, false))
            .collect();
        match self.ask_all(&questions, &requests, ctl) {
            Ok(answers) => {
                let mut m = Map::new();
                for ((key, _), a) in questions.iter().zip(answers) {
                    m.insert(key.clone(), a.into_value());
                }
                Round::Answered(crate::json::to_text(&Value::Object(m)))
            }
            Err(AskEnd::Suspended) => Round::Suspended(saved(&questions, &requests)),
            Err(AskEnd::NoResolver) if resumed => Round::Suspended(saved(&questions, &requests)),
            Err(AskEnd::NoResolver) => Round::Fails(ASKED_WITHOUT_RESOLVER.into()),
            Err(AskEnd::Cancelled) => Round::Cancelled,
        }
    }

    /// The §10 Request for one question: the §4 mapping; a URL-mode question the library
    /// asks itself also carries `data.server` and `data.source:"retry"` (§6).
    pub(super) fn request_for(
        &self,
        params: &Map<String, Value>,
        force_url: bool,
    ) -> bridge::Request {
        let mut req = bridge::elicitation_to_request(params);
        if force_url || bridge::is_url_mode(params) {
            if let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(&req.json) {
                let mut data = Map::new();
                data.insert("server".into(), Value::String(self.spec.name.clone()));
                data.insert("source".into(), Value::String("retry".into()));
                m.insert("data".into(), Value::Object(data));
                req.json = crate::json::to_text(&Value::Object(m));
            }
        }
        req
    }

    /// Hands each question to the resolver, one at a time in order (a deferred one does not
    /// hold back the next), then waits for every answer. A suspension closes the round.
    pub(super) fn ask_all(
        &self,
        questions: &[(String, Map<String, Value>)],
        requests: &[bridge::Request],
        ctl: &CallCtl<'_>,
    ) -> Result<Vec<ElicitResult>, AskEnd> {
        let Some(live) = self.live.as_ref() else {
            self.conn.set_elicitation_error(ASKED_WITHOUT_RESOLVER);
            return Err(AskEnd::NoResolver);
        };
        let mut open: Vec<Question> = Vec::new();
        let close_all = |open: &[Question], why: &str| {
            for q in open {
                q.close(why);
            }
        };
        for ((_, params), request) in questions.iter().zip(requests) {
            let url_mode = bridge::is_url_mode(params);
            let schema = params
                .get("requestedSchema")
                .filter(|s| !s.is_null())
                .cloned();
            let q = Question::open(&self.conn, live, request, url_mode, schema);
            if let Some(st) = ctl.state {
                st.add_question(q.token);
            }
            let asked = q.ask(&self.conn, live, request);
            if asked == Asked::Suspended {
                close_all(&open, "another question of the round was suspended");
                return Err(AskEnd::Suspended);
            }
            open.push(q);
            if ctl.state.is_some_and(|st| st.is_cancelled()) {
                close_all(&open, "the call was cancelled");
                return Err(AskEnd::Cancelled);
            }
        }
        let answers: Vec<ElicitResult> = open.iter().map(Question::wait).collect();
        if let Some(st) = ctl.state {
            st.clear_questions();
            if st.is_cancelled() {
                return Err(AskEnd::Cancelled);
            }
        }
        Ok(answers)
    }
}

/// Why a round's questions did not all get answers.
pub(super) enum AskEnd {
    Suspended,
    NoResolver,
    Cancelled,
}
