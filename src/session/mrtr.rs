//! MRTR, the multi-round requests of MCP 2026-07-28 (contract §6): one round of a server's
//! `inputRequests`, each question handed to the host's resolver as a §10 Request (inline or
//! deferred, in key order), the answers gathered as `inputResponses`, or the round suspended
//! (`TN_SUSPEND`) or cancelled. Shared by `tools/call` ([`super::call`]), tasks and the other
//! requests that may ask (`prompts/get`, `resources/read`).

use super::suspend::SavedRequest;
use super::{CallCtl, Session};
use crate::host::question::{Asked, Question};
use crate::host::server_requests::ASKED_WITHOUT_RESOLVER;
use crate::mapping::elicitation::{self, ElicitResult};
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
        let saved = |qs: &[(String, Map<String, Value>)], requests: &[elicitation::Request]| {
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
        let requests: Vec<elicitation::Request> = questions
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
    ) -> elicitation::Request {
        let mut req = elicitation::elicitation_to_request(params);
        if force_url || elicitation::is_url_mode(params) {
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
        requests: &[elicitation::Request],
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
            let url_mode = elicitation::is_url_mode(params);
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

/// A request other than `tools/call` that may ask the host (MCP 2026-07-28 allows
/// `InputRequiredResult` on `prompts/get` and `resources/read` too, §6): what it is, and how
/// its failures name it.
pub(crate) struct Asking<'a> {
    pub(crate) method: &'a str,
    /// The request's own params members, without braces (`"uri":"…"`).
    pub(crate) members: &'a str,
    /// What `Mcp-Name` carries over MCP 2026-07-28's HTTP (the prompt's name, the uri).
    pub(crate) name: &'a str,
    /// How a failure names what was asked for (`` prompt `greet` ``).
    pub(crate) what: &'a str,
    /// A JSON-RPC error code that means the thing asked for does not exist.
    pub(crate) not_found: &'a [i64],
}

impl Session {
    /// Sends `a` until its result is complete: each `input_required` round's questions go to
    /// the resolver (inline or deferred, at most [`MAX_ROUNDS`] rounds), the request sent again
    /// with a new id, the answers and the exact `requestState`. A question the resolver
    /// suspends (`TN_SUSPEND`) is answered cancel: neither result can carry a resume token.
    /// The server's `timeout` (or `ctl.timeout`) is an idle bound that stands still while the
    /// host is asked (§4), `maxTotalTimeout` a bound on the whole; `ctl.state` makes it
    /// cancellable. A result over `maxResultBytes` is refused on its bytes, before it is parsed.
    pub(crate) fn ask_until_complete(
        &self,
        a: &Asking<'_>,
        ctl: &CallCtl<'_>,
    ) -> Result<Value, crate::error::Error> {
        use crate::conn::{Limits, Req, RequestError};
        use crate::error::ErrorKind;
        let modern = self.era == super::Era::Modern;
        let idle = ctl.timeout.unwrap_or(self.spec.timeout);
        let mut spent = std::time::Duration::ZERO;
        let mut rounds = 0u32;
        let mut responses: Option<String> = None;
        let mut request_state: Option<String> = None;
        let routing = modern.then(|| crate::request::Routing {
            name: Some(super::modern::encode(a.name)),
            params: Vec::new(),
        });
        let cancelled = || ctl.state.is_some_and(|st| st.is_cancelled());
        loop {
            if cancelled() {
                return Err(self.asked_failure(a, ErrorKind::Cancelled, "was cancelled"));
            }
            let mut params = String::with_capacity(a.members.len() + 256);
            params.push('{');
            params.push_str(a.members);
            if modern {
                params.push_str(r#","_meta":{"#);
                params.push_str(&super::modern::envelope(
                    self.with_resolver,
                    None,
                    self.spec.log_level,
                    &[],
                ));
                params.push('}');
                if let Some(r) = &responses {
                    params.push_str(r#","inputResponses":"#);
                    params.push_str(r);
                }
                if let Some(s) = &request_state {
                    params.push_str(r#","requestState":"#);
                    crate::json::rpc::push_json_string(&mut params, s);
                }
            }
            params.push('}');
            let limits = Limits {
                idle,
                total: self.spec.max_total_timeout.saturating_sub(spent),
            };
            let started = |id: u64| {
                if let Some(st) = ctl.state {
                    st.started(&self.conn, id);
                }
            };
            let t0 = std::time::Instant::now();
            let (reply, _) = self.request(&Req {
                method: a.method,
                params_json: Some(&params),
                limits,
                progress_token: None,
                sink: None,
                started: &started,
                routing: routing.as_ref(),
                armed: None,
            });
            spent += t0.elapsed();
            if let Some(st) = ctl.state.filter(|st| st.is_cancelled()) {
                if !matches!(reply, Ok(_) | Err(RequestError::Closed)) {
                    self.abandon(st.request_id(), "cancelled by the host");
                }
                return Err(self.asked_failure(a, ErrorKind::Cancelled, "was cancelled"));
            }
            let line = match reply {
                Ok(line) => line,
                Err(e) => return Err(self.asked_request_failure(a, e, limits)),
            };
            let max = self.spec.max_result_bytes;
            if line.len() > max {
                return Err(self.asked_failure(
                    a,
                    ErrorKind::Server,
                    &format!(
                        "answered {} bytes, over maxResultBytes ({max}); the result was dropped",
                        line.len()
                    ),
                ));
            }
            let result = match crate::json::rpc::result_value(&line) {
                Ok(r) => r,
                Err(e) => return Err(self.asked_request_failure(a, RequestError::Rpc(e), limits)),
            };
            if !modern {
                return self.decided(a, ctl, result);
            }
            match result.get("resultType").and_then(Value::as_str) {
                None | Some("complete") => return self.decided(a, ctl, result),
                Some("input_required") => {}
                Some(other) => {
                    return Err(self.asked_failure(
                        a,
                        ErrorKind::Server,
                        &format!(
                            "failed: the server answered with an unknown resultType `{}`",
                            crate::util::quoted(other)
                        ),
                    ))
                }
            }
            rounds += 1;
            if rounds > MAX_ROUNDS {
                return Err(self.asked_failure(
                    a,
                    ErrorKind::Server,
                    &format!("failed: the server still asked for input after {MAX_ROUNDS} rounds; the request was given up"),
                ));
            }
            request_state = result
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_string);
            responses = match self.mrtr_round(&result, ctl, false) {
                Round::Answered(r) => (r != "{}").then_some(r),
                Round::Suspended(saved) => {
                    let mut m = Map::new();
                    for s in saved {
                        m.insert(s.key, ElicitResult::Cancel.into_value());
                    }
                    Some(crate::json::to_text(&Value::Object(m)))
                }
                Round::Fails(why) => {
                    return Err(self.asked_failure(a, ErrorKind::Server, &format!("failed: {why}")))
                }
                Round::Cancelled => {
                    return Err(self.asked_failure(a, ErrorKind::Cancelled, "was cancelled"))
                }
            };
        }
    }

    /// A complete result, unless a cancel came first (§7: it wins over the answer).
    fn decided(
        &self,
        a: &Asking<'_>,
        ctl: &CallCtl<'_>,
        result: Value,
    ) -> Result<Value, crate::error::Error> {
        match ctl.state {
            Some(st) if !st.decide() => {
                Err(self.asked_failure(a, crate::error::ErrorKind::Cancelled, "was cancelled"))
            }
            _ => Ok(result),
        }
    }

    /// `server \`x\`: <method> <what> <how>`, secrets masked (§9).
    pub(crate) fn asked_failure(
        &self,
        a: &Asking<'_>,
        kind: crate::error::ErrorKind,
        how: &str,
    ) -> crate::error::Error {
        crate::error::Error::new(
            kind,
            self.spec.secrets().mask(&format!(
                "server `{}`: {} {} {how}",
                self.spec.name, a.method, a.what
            )),
        )
    }

    /// What a failed request of `a` tells the host: not found, a timeout (the server told), the
    /// client closing, or the server's failure in words.
    fn asked_request_failure(
        &self,
        a: &Asking<'_>,
        e: crate::conn::RequestError,
        limits: crate::conn::Limits,
    ) -> crate::error::Error {
        use crate::conn::RequestError;
        use crate::error::{Error, ErrorKind};
        match e {
            RequestError::Closed => Error::new(ErrorKind::Closed, "the client is disconnected"),
            RequestError::Cancelled => self.asked_failure(a, ErrorKind::Cancelled, "was cancelled"),
            RequestError::Timeout(id) => {
                self.abandon(
                    id,
                    &format!("timed out after {} ms", limits.idle.as_millis()),
                );
                self.asked_failure(
                    a,
                    ErrorKind::Timeout,
                    &format!("timed out: no answer within {} ms", limits.idle.as_millis()),
                )
            }
            RequestError::TimedOutTotal(id) => {
                self.abandon(id, "maxTotalTimeout reached");
                self.asked_failure(
                    a,
                    ErrorKind::Timeout,
                    &format!(
                        "timed out: still running after maxTotalTimeout ({} ms)",
                        self.spec.max_total_timeout.as_millis()
                    ),
                )
            }
            RequestError::Rpc(err)
                if err
                    .get("code")
                    .and_then(Value::as_i64)
                    .is_some_and(|c| a.not_found.contains(&c)) =>
            {
                let why = self.explain(&RequestError::Rpc(err));
                self.asked_failure(a, ErrorKind::NotFound, &format!("was not found: {why}"))
            }
            RequestError::Rpc(err)
                if self.live.is_none()
                    && err.get("code").and_then(Value::as_i64) == Some(-32021) =>
            {
                self.conn.set_elicitation_error(ASKED_WITHOUT_RESOLVER);
                self.asked_failure(
                    a,
                    ErrorKind::Server,
                    &format!("failed: {ASKED_WITHOUT_RESOLVER}"),
                )
            }
            f => {
                let why = self.explain(&f);
                self.asked_failure(a, ErrorKind::Server, &format!("failed: {why}"))
            }
        }
    }
}
