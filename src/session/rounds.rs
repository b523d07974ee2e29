//! One `tools/call` from start to result (contract §1, §6, §7): the request with its
//! progressToken; in the modern era the MRTR rounds (each `input_required` question handed to
//! the same resolver, the call retried with a new id, `inputResponses` and the exact
//! `requestState`, at most 10 rounds); in the legacy era a -32042 URLElicitationRequired asked
//! and retried once; durable suspension (`TN_SUSPEND`) into a resume token; cancel, timeouts,
//! and the result shaped with every failure an isError naming server, phase and cause.

use super::suspend::{self, Pending, SavedRequest, Start};
use super::Era;
use super::{modern, CallCtl, Session, NEXT_PROGRESS_TOKEN};
use crate::conn::{Limits, Req, RequestError};
use crate::host::question::{Asked, Question};
use crate::host::server_requests::ASKED_WITHOUT_RESOLVER;
use crate::mapping::elicitation::{self as bridge, ElicitResult};
use serde_json::{Map, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The most MRTR retries of one call, across resumes (§6): the 11th `input_required` ends it.
pub(crate) const MAX_ROUNDS: u32 = 10;

/// How one round of questions ended.
pub(super) enum Round {
    /// Every question answered: `inputResponses` as JSON text.
    Answered(String),
    /// A question was suspended (§6): the Requests of the round and what resuming needs.
    Suspended(Vec<SavedRequest>),
    /// The call ends with this isError text.
    Fails(String),
    Cancelled,
}

impl Session {
    /// Calls `remote` with `args_json` (already checked to be a JSON object) and shapes the
    /// outcome as a ToolResult (§1). None only when the client is being disconnected. When the
    /// server asked for input while no resolver is registered, the output says so (§4, §6).
    pub(crate) fn call(&self, remote: &str, args_json: &str, ctl: &CallCtl<'_>) -> Option<String> {
        self.call_from(remote, args_json, ctl, Start::default())
    }

    /// [`Session::call`] from `start` (a resumed call continues its rounds, §6).
    pub(crate) fn call_from(
        &self,
        remote: &str,
        args_json: &str,
        ctl: &CallCtl<'_>,
        mut start: Start,
    ) -> Option<String> {
        let token = NEXT_PROGRESS_TOKEN.fetch_add(1, Ordering::Relaxed);
        let idle = ctl.timeout.unwrap_or(self.spec.timeout);
        // maxTotalTimeout spans every round, less the time the host took to answer (§7).
        let mut spent = Duration::ZERO;
        if let Some(t) = start.task.clone() {
            // A resumed task (issue 29): polled again, nothing re-run.
            let obj = serde_json::json!({"taskId": t.id, "status": "working"});
            return self.wait_task(remote, obj, ctl, token, &mut start);
        }
        let as_task = self.call_as_task(remote, ctl);
        let routing = (self.era == Era::Modern).then(|| {
            let params = crate::util::read(&self.header_params);
            let params = params.get(remote).map_or(&[][..], |p| p);
            modern::routing(remote, args_json, params)
        });
        loop {
            if ctl.state.is_some_and(|st| st.is_cancelled()) {
                // Cancelled before this request went out: nothing is sent (§7).
                return Some(self.cancelled(remote));
            }
            let params = self.call_params(remote, args_json, token, &start, as_task);
            let limits = Limits {
                idle,
                total: self.spec.max_total_timeout.saturating_sub(spent),
            };
            let started = |id: u64| {
                if let Some(st) = ctl.state {
                    st.started(&self.conn, id);
                }
            };
            let t0 = Instant::now();
            let (reply, asked) = self.request(&Req {
                method: "tools/call",
                params_json: Some(&params),
                limits,
                progress_token: Some(token),
                sink: ctl.progress,
                started: &started,
                routing: routing.as_ref(),
                armed: None,
            });
            spent += t0.elapsed();
            if let Some(st) = ctl.state {
                if st.is_cancelled() {
                    // A cancel that came first wins over whatever the server answered (§7);
                    // the server is told unless it had already answered.
                    if !matches!(reply, Ok(_) | Err(RequestError::Closed)) {
                        self.abandon(st.request_id(), "cancelled by the host");
                    }
                    return Some(self.cancelled(remote));
                }
            }
            let asked_line = |r: String| {
                if asked {
                    crate::mapping::shape::append_line(&r, ASKED_WITHOUT_RESOLVER)
                } else {
                    r
                }
            };
            // A JSON-RPC error arrives as a response line; the two that ask something of the
            // host are looked at here (a cheap check first: results rarely say "error").
            let reply = match reply {
                Ok(line) if line.contains("\"error\"") => {
                    match crate::json::rpc::result_value(&line) {
                        Err(e)
                            if matches!(
                                e.get("code").and_then(Value::as_i64),
                                Some(-32042) | Some(-32021)
                            ) =>
                        {
                            Err(RequestError::Rpc(e))
                        }
                        _ => Ok(line),
                    }
                }
                other => other,
            };
            let line = match reply {
                Ok(line) => line,
                Err(RequestError::Rpc(e))
                    if self.era == Era::Legacy
                        && e.get("code").and_then(Value::as_i64) == Some(-32042) =>
                {
                    if start.url_retry {
                        return Some(self.fail(
                            remote,
                            "the server asked for the same browser step again after it was done (-32042); the call is not retried twice",
                        ));
                    }
                    match self.url_round(&e, ctl) {
                        Round::Answered(_) => {
                            start.url_retry = true;
                            continue;
                        }
                        other => {
                            let at = Suspension {
                                remote,
                                args_json,
                                rounds: start.rounds,
                                request_state: None,
                                url_step: true,
                            };
                            return self.round_end(other, &at);
                        }
                    }
                }
                Err(RequestError::Rpc(e))
                    if self.live.is_none()
                        && e.get("code").and_then(Value::as_i64) == Some(-32021) =>
                {
                    // The server needs input and we declared no elicitation (§6): say why.
                    self.conn.set_elicitation_error(ASKED_WITHOUT_RESOLVER);
                    let r = self.shape_failure(remote, RequestError::Rpc(e), limits)?;
                    return Some(crate::mapping::shape::append_line(
                        &r,
                        ASKED_WITHOUT_RESOLVER,
                    ));
                }
                Err(e) => return self.shape_failure(remote, e, limits).map(asked_line),
            };
            if self.era == Era::Modern {
                let result = match crate::json::rpc::result_value(&line) {
                    Ok(r) => r,
                    Err(e) => {
                        return self
                            .shape_failure(remote, RequestError::Rpc(e), limits)
                            .map(asked_line)
                    }
                };
                match result.get("resultType").and_then(Value::as_str) {
                    None | Some("complete") => {}
                    Some("task") if as_task => match self.created_task(&result) {
                        Some(t) => return self.wait_task(remote, t, ctl, token, &mut start),
                        None => {
                            return Some(self.fail(
                                remote,
                                "the server answered resultType `task` without a taskId",
                            ))
                        }
                    },
                    Some("input_required") => {
                        start.rounds += 1;
                        if start.rounds > MAX_ROUNDS {
                            return Some(self.fail(
                                remote,
                                &format!(
                                    "the server still asked for input after {MAX_ROUNDS} rounds; the call was given up"
                                ),
                            ));
                        }
                        let state = result.get("requestState").and_then(Value::as_str);
                        match self.mrtr_round(&result, ctl, start.resumed) {
                            Round::Answered(responses) => {
                                // A round with only requestState sends none (as the
                                // reference client does).
                                start.input_responses = (responses != "{}").then_some(responses);
                                start.request_state = state.map(str::to_string);
                                continue;
                            }
                            other => {
                                let at = Suspension {
                                    remote,
                                    args_json,
                                    rounds: start.rounds,
                                    request_state: state,
                                    url_step: false,
                                };
                                return self.round_end(other, &at);
                            }
                        }
                    }
                    Some(other) => {
                        return Some(self.fail(
                            remote,
                            &format!("the server answered with an unknown resultType `{other}`"),
                        ))
                    }
                }
            }
            if as_task && self.era == Era::Legacy && line.contains("\"task\"") {
                if let Some(t) = crate::json::rpc::result_value(&line)
                    .ok()
                    .and_then(|r| self.created_task(&r))
                {
                    return self.wait_task(remote, t, ctl, token, &mut start);
                }
            }
            if let Some(st) = ctl.state {
                if !st.decide() {
                    return Some(self.cancelled(remote));
                }
            }
            return match self.shape_result(remote, &line) {
                Ok(r) => Some(asked_line(r)),
                Err(e) => self
                    .shape_failure(remote, RequestError::Rpc(e), limits)
                    .map(asked_line),
            };
        }
    }

    /// The `tools/call` params: name, arguments, `_meta` (progressToken; the envelope in the
    /// modern era) and a retry's `inputResponses`/`requestState`.
    fn call_params(
        &self,
        remote: &str,
        args_json: &str,
        token: u64,
        start: &Start,
        as_task: bool,
    ) -> String {
        let mut p = String::with_capacity(remote.len() + args_json.len() + 96);
        p.push_str(r#"{"name":"#);
        crate::json::rpc::push_json_string(&mut p, remote);
        p.push_str(r#","arguments":"#);
        p.push_str(args_json);
        if self.era == Era::Modern {
            p.push_str(r#","_meta":{"#);
            let with_resolver = self.with_resolver || start.resumed;
            p.push_str(&if as_task {
                modern::task_envelope(with_resolver, Some(token), self.spec.log_level)
            } else {
                modern::envelope(with_resolver, Some(token), self.spec.log_level)
            });
            p.push('}');
            if let Some(r) = &start.input_responses {
                p.push_str(r#","inputResponses":"#);
                p.push_str(r);
            }
            if let Some(s) = &start.request_state {
                p.push_str(r#","requestState":"#);
                crate::json::rpc::push_json_string(&mut p, s);
            }
        } else {
            p.push_str(r#","_meta":{"progressToken":"#);
            p.push_str(&token.to_string());
            p.push('}');
            if as_task {
                p.push_str(&self.task_params());
            }
        }
        p.push('}');
        p
    }

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

    /// A -32042 (§6): each `data.elicitations[]` becomes a `kind:"authorization"` Request;
    /// when every one is accepted the call is retried once.
    fn url_round(&self, error: &Value, ctl: &CallCtl<'_>) -> Round {
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
        let requests: Vec<bridge::Request> = questions
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
    fn ask_all(
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

    /// The result of a round that ended the call.
    fn round_end(&self, r: Round, at: &Suspension<'_>) -> Option<String> {
        match r {
            Round::Answered(_) => None,
            Round::Suspended(requests) => Some(suspend::pending_result(&Pending {
                server: &self.spec.name,
                tool: at.remote,
                arguments: at.args_json,
                era: self.era,
                protocol_version: &self.protocol_version,
                rounds: at.rounds,
                request_state: at.request_state,
                url_step: at.url_step,
                requests: &requests,
            })),
            Round::Fails(why) => Some(self.fail(at.remote, &why)),
            Round::Cancelled => Some(self.cancelled(at.remote)),
        }
    }

    pub(super) fn fail(&self, remote: &str, why: &str) -> String {
        crate::mapping::shape::failure(&self.spec.secrets().mask(&format!(
            "server `{}`: tools/call `{remote}` failed: {why}",
            self.spec.name
        )))
    }

    pub(crate) fn cancelled(&self, remote: &str) -> String {
        crate::mapping::shape::failure(&format!(
            "server `{}`: tools/call `{remote}` was cancelled",
            self.spec.name
        ))
    }

    /// Tells the server that request `id` is abandoned (§7): the elicitations on its stream
    /// are answered cancel, then `notifications/cancelled`; on modern HTTP the response
    /// stream is closed instead.
    fn abandon(&self, id: u64, reason: &str) {
        self.conn.close_carried(id);
        self.transport.abandon(id);
        if self.transport.cancels_by_closing() {
            return;
        }
        let mut params = format!(r#"{{"requestId":{id},"reason":"#);
        crate::json::rpc::push_json_string(&mut params, reason);
        params.push('}');
        let _ = self.conn.notify("notifications/cancelled", Some(&params));
    }

    fn shape_failure(&self, remote: &str, e: RequestError, limits: Limits) -> Option<String> {
        let server = &self.spec.name;
        let text = match e {
            RequestError::Closed => return None,
            RequestError::Cancelled => {
                format!("server `{server}`: tools/call `{remote}` was cancelled")
            }
            RequestError::Timeout(id) => {
                self.abandon(
                    id,
                    &format!("timed out after {} ms", limits.idle.as_millis()),
                );
                format!(
                    "server `{server}`: tools/call `{remote}` timed out: no answer within {} ms{}",
                    limits.idle.as_millis(),
                    self.stderr_tail()
                )
            }
            RequestError::TimedOutTotal(id) => {
                self.abandon(id, "maxTotalTimeout reached");
                format!(
                    "server `{server}`: tools/call `{remote}` timed out: still running after maxTotalTimeout ({} ms)",
                    self.spec.max_total_timeout.as_millis()
                )
            }
            f => format!(
                "server `{server}`: tools/call `{remote}` failed: {}{}",
                self.explain(&f),
                self.era_hint(&f)
            ),
        };
        Some(crate::mapping::shape::failure(
            &self.spec.secrets().mask(&text),
        ))
    }

    /// What to do when a dual-era server refused a way of asking that only the other era has
    /// (issue 23): its SDKs name MCP 2026-07-28 or `InputRequiredResult` in the refusal. The
    /// call is not sent again in the other era (that would run the tool twice); the host can
    /// choose the era for this server.
    fn era_hint(&self, f: &RequestError) -> String {
        let RequestError::Rpc(e) = f else {
            return String::new();
        };
        let text = crate::json::to_text(e);
        if !(text.contains("2026-07-28") || text.contains("InputRequiredResult")) {
            return String::new();
        }
        match self.era {
            Era::Legacy => " (this server is spoken to in the handshake era, chosen so that push-style questions work; a tool that asks through MRTR needs MCP 2026-07-28: set \"protocol\": \"modern-first\" for this server)".into(),
            Era::Modern => " (this server is spoken to in MCP 2026-07-28, where a tool asks only through MRTR; a push-style question needs the handshake era: set \"protocol\": \"legacy\" for this server)".into(),
        }
    }

    /// "; stderr: …" when the child wrote something (§3), else "".
    fn stderr_tail(&self) -> String {
        let tail = self.transport.diagnostics();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr: {tail}")
        }
    }
}

/// Where a call stands when a round ends it (for a suspension's resume token).
struct Suspension<'a> {
    remote: &'a str,
    args_json: &'a str,
    rounds: u32,
    request_state: Option<&'a str>,
    url_step: bool,
}

/// Why a round's questions did not all get answers.
enum AskEnd {
    Suspended,
    NoResolver,
    Cancelled,
}
