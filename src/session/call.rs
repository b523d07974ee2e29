//! One `tools/call` from start to result (contract §1, §6, §7): the request with its
//! progressToken; in the modern era the MRTR rounds ([`super::mrtr`]: each `input_required`
//! question handed to the resolver, the call retried with a new id, `inputResponses` and the
//! exact `requestState`); in the legacy era a -32042 URLElicitationRequired asked and retried
//! once ([`super::url_elicitation`]); durable suspension (`TN_SUSPEND`) into a resume token;
//! cancel, timeouts, and the result shaped ([`super::failure`]: every failure an isError naming
//! server, phase and cause).

use super::mrtr::{Round, MAX_ROUNDS};
use super::suspend::{self, Start, SuspendedCall};
use super::Era;
use super::{modern, CallCtl, Session, NEXT_PROGRESS_TOKEN};
use crate::conn::{Limits, Req, RequestError};
use crate::host::server_requests::ASKED_WITHOUT_RESOLVER;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

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
            // A resumed task (docs/tasks.md): polled again, nothing re-run.
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
            // host are looked at here, from the `error` the reader noted (the line is parsed
            // only when its keys are escaped).
            let reply = match reply {
                Ok(line) => match line.error_text() {
                    Ok(None) => Ok(line),
                    Ok(Some(error)) => match serde_json::from_str::<Value>(error) {
                        Ok(e) if asks_the_host(&e) => Err(RequestError::Rpc(e)),
                        _ => Ok(line),
                    },
                    Err(()) => match crate::json::rpc::result_value(&line) {
                        Err(e) if asks_the_host(&e) => Err(RequestError::Rpc(e)),
                        _ => Ok(line),
                    },
                },
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
                modern::envelope(
                    with_resolver,
                    Some(token),
                    self.spec.log_level,
                    &[super::tasks::TASKS_EXTENSION],
                )
            } else {
                modern::envelope(with_resolver, Some(token), self.spec.log_level, &[])
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
            crate::json::rpc::push_u64(&mut p, token);
            p.push('}');
            if as_task {
                p.push_str(&self.task_params());
            }
        }
        p.push('}');
        p
    }

    /// The result of a round that ended the call.
    fn round_end(&self, r: Round, at: &Suspension<'_>) -> Option<String> {
        match r {
            Round::Answered(_) => None,
            Round::Suspended(requests) => Some(suspend::pending_result(&SuspendedCall {
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
}

/// Whether a JSON-RPC error asks something of the host: -32042 (a browser step, legacy) or
/// -32021 (input, without elicitation declared).
fn asks_the_host(e: &Value) -> bool {
    matches!(
        e.get("code").and_then(Value::as_i64),
        Some(-32042) | Some(-32021)
    )
}

/// Where a call stands when a round ends it (for a suspension's resume token).
struct Suspension<'a> {
    remote: &'a str,
    args_json: &'a str,
    rounds: u32,
    request_state: Option<&'a str>,
    url_step: bool,
}
