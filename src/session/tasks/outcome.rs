//! How a task ends for the host: its failure, its result fetched and shaped, a cancel sent,
//! a pending with its resume token, a question round's answers.

use super::{status_of, CANCEL_BOUND, MIN_POLL};
use crate::conn::{Limits, Req, RequestError};
use crate::session::mrtr::Round;
use crate::session::suspend::{self, SavedRequest, TaskRef};
use crate::session::{CallCtl, Session};
use serde_json::Value;
use std::time::Instant;

impl Session {
    /// A failed `tasks/*` request: a lost connection ends the wait with a pending the host can
    /// resume later; anything else is an isError naming the method.
    pub(super) fn task_failure(
        &self,
        remote: &str,
        task: &TaskRef,
        method: &str,
        e: RequestError,
        ctl: &CallCtl<'_>,
    ) -> Option<String> {
        match e {
            RequestError::Cancelled => Some(self.cancel_task(remote, task, ctl)),
            // A disconnect or a lost connection ends the wait, not the task: the host gets
            // the token that collects it later (docs/tasks.md).
            RequestError::Closed | RequestError::Lost(_) | RequestError::SessionExpired(_) => {
                let obj = serde_json::json!({"taskId": task.id, "status": "working"});
                Some(self.task_pending(remote, task, &obj, &[]))
            }
            e => Some(self.fail(
                remote,
                &format!(
                    "{method} for task `{}` failed: {}",
                    task.id,
                    self.explain(&e)
                ),
            )),
        }
    }

    /// 2025-11-25 `tasks/result`: the result (or error) of a finished task, or the wait for an
    /// asking one (its question comes on this request's stream and goes to the resolver).
    pub(super) fn task_result(
        &self,
        remote: &str,
        task: &TaskRef,
        ctl: &CallCtl<'_>,
        token: u64,
        deadline: Instant,
        finished: bool,
    ) -> Option<String> {
        // A finished task's result is fetched within the server's timeout even when the wait's
        // own time is up; an asking one waits the rest of the wait.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(MIN_POLL);
        let idle = if finished {
            left.max(self.spec.timeout)
        } else {
            left
        };
        let limits = Limits {
            idle,
            total: self.spec.max_total_timeout,
        };
        let params = self.task_request_params(task, "");
        let started = |i: u64| {
            if let Some(st) = ctl.state {
                st.started(&self.conn, i);
            }
        };
        let (reply, _) = self.request(&Req {
            method: "tasks/result",
            params_json: Some(&params),
            limits,
            progress_token: Some(token),
            sink: ctl.progress,
            started: &started,
            routing: None,
            armed: None,
        });
        match reply {
            Ok(line) => match crate::json::rpc::result_value(&line) {
                Ok(result) => self.task_done(remote, &result, ctl),
                Err(e) => Some(self.fail(
                    remote,
                    &format!(
                        "the task `{}` failed: {}",
                        task.id,
                        self.explain(&RequestError::Rpc(e))
                    ),
                )),
            },
            Err(RequestError::Timeout(i) | RequestError::TimedOutTotal(i)) => {
                self.abandon_quietly(i);
                let obj = serde_json::json!({"taskId": task.id, "status": "working"});
                Some(self.task_pending(remote, task, &obj, &[]))
            }
            Err(e) => self.task_failure(remote, task, "tasks/result", e, ctl),
        }
    }

    /// A finished task's CallToolResult, shaped like any call's (size and schema checks too).
    pub(super) fn task_done(
        &self,
        remote: &str,
        result: &Value,
        ctl: &CallCtl<'_>,
    ) -> Option<String> {
        if let Some(st) = ctl.state {
            if !st.decide() {
                return Some(self.cancelled(remote));
            }
        }
        let line = crate::conn::Response::scanned(format!(
            r#"{{"jsonrpc":"2.0","id":0,"result":{}}}"#,
            crate::json::to_text(result)
        ));
        Some(match self.shape_result(remote, &line) {
            Ok(r) => r,
            Err(e) => self.fail(
                remote,
                &format!("the task failed: {}", self.explain(&RequestError::Rpc(e))),
            ),
        })
    }

    /// The host cancelled the call: `tasks/cancel` tells the server (§7), and the call ends
    /// cancelled.
    pub(super) fn cancel_task(&self, remote: &str, task: &TaskRef, ctl: &CallCtl<'_>) -> String {
        let _ = self.task_request(
            "tasks/cancel",
            task,
            "",
            Limits::phase(CANCEL_BOUND),
            None,
            ctl,
            false,
        );
        self.cancelled(remote)
    }

    /// The result of a wait that ended while the task works (or asks, suspended): isError
    /// false, `metadata.pending` with the task, the Requests and the resume token.
    pub(super) fn task_pending(
        &self,
        remote: &str,
        task: &TaskRef,
        obj: &Value,
        requests: &[SavedRequest],
    ) -> String {
        suspend::task_pending_result(self, remote, task, status_of(obj), requests)
    }

    /// One SEP-2663 `input_required` round: the questions to the resolver (§6 MRTR rules);
    /// the answers as `inputResponses` text.
    pub(super) fn task_round(
        &self,
        remote: &str,
        task: &TaskRef,
        round: &Value,
        ctl: &CallCtl<'_>,
        resumed: bool,
    ) -> Result<String, TaskAsk> {
        match self.mrtr_round(round, ctl, resumed) {
            Round::Answered(r) => Ok(r),
            Round::Suspended(s) => Err(TaskAsk::Suspended(s)),
            Round::Fails(why) => Err(TaskAsk::Ends(self.fail(remote, &why))),
            Round::Cancelled => Err(TaskAsk::Ends(self.cancel_task(remote, task, ctl))),
        }
    }
}

/// Why a task's question round did not give answers.
pub(super) enum TaskAsk {
    Suspended(Vec<SavedRequest>),
    Ends(String),
}
