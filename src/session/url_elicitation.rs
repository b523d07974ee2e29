//! The handshake era's URL elicitation error, -32042 URLElicitationRequired (contract §6): each
//! browser step the server names becomes a `kind:"authorization"` Request to the resolver;
//! when every one is accepted, the call is retried once ([`super::call`]).

use super::mrtr::{AskEnd, Round};
use super::suspend::SavedRequest;
use super::{CallCtl, Session};
use crate::host::server_requests::ASKED_WITHOUT_RESOLVER;
use crate::mapping::elicitation::{self, ElicitResult};
use serde_json::{Map, Value};

impl Session {
    /// A -32042 (§6): each `data.elicitations[]` becomes a `kind:"authorization"` Request;
    /// when every one is accepted the call is retried once.
    pub(super) fn url_round(&self, error: &Value, ctl: &CallCtl<'_>) -> Round {
        let elicitations: Vec<Map<String, Value>> = error
            .get("data")
            .and_then(|d| d.get("elicitations"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|e| e.as_object().cloned()).collect())
            .unwrap_or_default();
        if elicitations.is_empty() {
            return Round::Fails(
                "the server requires a browser step (-32042) but names none".into(),
            );
        }
        let questions: Vec<(String, Map<String, Value>)> = elicitations
            .into_iter()
            .map(|mut p| {
                p.insert("mode".into(), Value::String("url".into()));
                let key = p
                    .get("elicitationId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                (key, p)
            })
            .collect();
        let requests: Vec<elicitation::Request> = questions
            .iter()
            .map(|(_, p)| self.request_for(p, true))
            .collect();
        match self.ask_all(&questions, &requests, ctl) {
            Ok(answers) => {
                for ((_, p), a) in questions.iter().zip(answers) {
                    if !matches!(
                        a,
                        ElicitResult::AcceptWithoutContent | ElicitResult::Accept(_)
                    ) {
                        let step = p.get("message").and_then(Value::as_str).unwrap_or("");
                        let url = p.get("url").and_then(Value::as_str).unwrap_or("");
                        let how = if matches!(a, ElicitResult::Decline) {
                            "declined"
                        } else {
                            "cancelled"
                        };
                        return Round::Fails(format!(
                            "the browser step the server requires was {how}: {step} {url}"
                        ));
                    }
                }
                Round::Answered(String::new())
            }
            Err(AskEnd::Suspended) => Round::Suspended(
                questions
                    .iter()
                    .zip(&requests)
                    .map(|((key, params), r)| SavedRequest {
                        id: r.id.clone(),
                        key: key.clone(),
                        params: params.clone(),
                        request_json: r.json.clone(),
                    })
                    .collect(),
            ),
            Err(AskEnd::NoResolver) => Round::Fails(format!(
                "the server requires a browser step (-32042) and {ASKED_WITHOUT_RESOLVER}"
            )),
            Err(AskEnd::Cancelled) => Round::Cancelled,
        }
    }
}
