//! The wait for a task (SEP-2663 and MCP 2025-11-25 tasks): polled at the server's
//! `pollInterval`, bounded by the call's idle timeout (restarted by a status change or
//! progress) and `maxTotalTimeout`, its questions asked, a cancel honoured; a wait that ends
//! while the task works is a pending with a resume token.

use super::outcome::TaskAsk;
use super::{poll_interval, status_of, CANCEL_LOOK, POLL_BOUND};
use crate::conn::{Limits, RequestError};
use crate::session::suspend::{self, Start, TaskRef};
use crate::session::{CallCtl, Era, Session};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::time::Instant;

/// Stops holding a call's progress when the wait ends, however it ends.
struct HeldProgress<'a> {
    session: &'a Session,
    token: u64,
}

impl Drop for HeldProgress<'_> {
    fn drop(&mut self) {
        self.session.conn.release_progress(self.token);
    }
}

impl Session {
    /// Waits for the task a call became (docs/tasks.md) and shapes its result; `start.task` set and
    /// `start.input_responses` carried by a resumed call are delivered first (`tasks/update`).
    pub(in crate::session) fn wait_task(
        &self,
        remote: &str,
        mut task_obj: Value,
        ctl: &CallCtl<'_>,
        token: u64,
        start: &mut Start,
    ) -> Option<String> {
        let mut task = TaskRef {
            id: task_obj
                .get("taskId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            request_state: None,
        };
        // A resumed task is polled at once (what the token says of it is old).
        let mut poll_now = start.task.is_some();
        if let Some(prior) = &start.task {
            task.request_state = prior.request_state.clone();
        }
        if let Some(s) = task_obj.get("requestState").and_then(Value::as_str) {
            task.request_state = Some(s.to_string());
        }
        self.conn.hold_progress(token);
        let _held = HeldProgress {
            session: self,
            token,
        };
        let idle = ctl.timeout.unwrap_or(self.spec.timeout);
        let began = Instant::now();
        let mut deadline = began + idle;
        let mut shown = String::new();
        let mut answered: HashSet<String> = HashSet::new();
        let sink = |s: &str| {
            if let Some(f) = ctl.progress {
                f(s)
            }
        };
        if let Some(responses) = start.input_responses.take().filter(|r| r != "{}") {
            if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&responses) {
                answered.extend(m.keys().cloned());
            }
            let extra = format!(r#","inputResponses":{responses}"#);
            let limits = Limits::phase(idle);
            if let Err(e) =
                self.task_request("tasks/update", &task, &extra, limits, None, ctl, true)
            {
                return self.task_failure(remote, &task, "tasks/update", e, ctl);
            }
        }
        loop {
            for p in self.conn.take_progress(token) {
                sink(&p);
                deadline = Instant::now() + idle;
            }
            if ctl.state.is_some_and(|st| st.is_cancelled()) {
                return Some(self.cancel_task(remote, &task, ctl));
            }
            let now_shown = self.status_note(remote, &task, &task_obj);
            if now_shown != shown {
                sink(&now_shown);
                if !shown.is_empty() {
                    deadline = Instant::now() + idle;
                }
                shown = now_shown;
            }
            match status_of(&task_obj) {
                "completed" => {
                    if self.era == Era::Modern {
                        let result = task_obj.get("result").cloned().unwrap_or(Value::Null);
                        return self.task_done(remote, &result, ctl);
                    }
                    return self.task_result(remote, &task, ctl, token, deadline, true);
                }
                "failed" => {
                    if self.era == Era::Legacy {
                        return self.task_result(remote, &task, ctl, token, deadline, true);
                    }
                    let e = task_obj.get("error").cloned().unwrap_or(Value::Null);
                    return Some(self.fail(
                        remote,
                        &format!(
                            "the task `{}` failed: {}",
                            task.id,
                            RequestError::Rpc(e).explain(idle)
                        ),
                    ));
                }
                "cancelled" => {
                    return Some(self.fail(
                        remote,
                        &format!("the task `{}` was cancelled on the server", task.id),
                    ))
                }
                "input_required" if self.era == Era::Legacy => {
                    // 2025-11-25: the server asks on the stream of `tasks/result`, answered
                    // by the resolver like any server request (§4).
                    return self.task_result(remote, &task, ctl, token, deadline, false);
                }
                "input_required" => {
                    let mut asks = Map::new();
                    if let Some(Value::Object(m)) = task_obj.get("inputRequests") {
                        for (k, v) in m {
                            if !answered.contains(k) {
                                asks.insert(k.clone(), v.clone());
                            }
                        }
                    }
                    if !asks.is_empty() {
                        let keys: Vec<String> = asks.keys().cloned().collect();
                        let round = serde_json::json!({"inputRequests": asks});
                        match self.task_round(remote, &task, &round, ctl, start.resumed) {
                            Ok(responses) => {
                                answered.extend(keys);
                                let extra = format!(r#","inputResponses":{responses}"#);
                                if let Err(e) = self.task_request(
                                    "tasks/update",
                                    &task,
                                    &extra,
                                    Limits::phase(idle),
                                    None,
                                    ctl,
                                    true,
                                ) {
                                    return self.task_failure(
                                        remote,
                                        &task,
                                        "tasks/update",
                                        e,
                                        ctl,
                                    );
                                }
                                deadline = Instant::now() + idle;
                            }
                            Err(TaskAsk::Suspended(requests)) => {
                                return Some(self.task_pending(remote, &task, &task_obj, &requests))
                            }
                            Err(TaskAsk::Ends(r)) => return Some(r),
                        }
                    }
                }
                _ => {}
            }
            let now = Instant::now();
            let total_end = began + self.spec.max_total_timeout;
            if !poll_now && (now >= deadline || now >= total_end) {
                return Some(self.task_pending(remote, &task, &task_obj, &[]));
            }
            // Sleep the server's interval, looking at a cancel, never past the deadline; a
            // resumed task is polled at once.
            let wake = if std::mem::take(&mut poll_now) {
                now
            } else {
                (now + poll_interval(&task_obj))
                    .min(deadline)
                    .min(total_end)
            };
            while Instant::now() < wake {
                if ctl.state.is_some_and(|st| st.is_cancelled()) || self.conn.is_dead() {
                    break;
                }
                std::thread::sleep(CANCEL_LOOK.min(wake.saturating_duration_since(Instant::now())));
            }
            if ctl.state.is_some_and(|st| st.is_cancelled()) {
                continue;
            }
            // One poll may take a second even when the wait's own time is nearly up.
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(POLL_BOUND);
            let limits = Limits {
                idle: left,
                total: left,
            };
            match self.task_request("tasks/get", &task, "", limits, Some(token), ctl, true) {
                Ok(t) => {
                    if let Some(s) = t.get("requestState").and_then(Value::as_str) {
                        task.request_state = Some(s.to_string());
                    }
                    task_obj = t;
                }
                Err(RequestError::Cancelled) => continue,
                Err(RequestError::Timeout(_) | RequestError::TimedOutTotal(_)) => continue,
                Err(e) => return self.task_failure(remote, &task, "tasks/get", e, ctl),
            }
        }
    }

    /// Tells the server a `tasks/result` wait is given up (the task goes on, §7).
    pub(super) fn abandon_quietly(&self, id: u64) {
        self.conn.close_carried(id);
        self.transport.abandon(id);
        if !self.transport.cancels_by_closing() {
            let params = format!(r#"{{"requestId":{id},"reason":"the wait for the task ended"}}"#);
            let _ = self.conn.notify("notifications/cancelled", Some(&params));
        }
    }

    /// The progress note of a task's status: `{"message","task":{taskId,status,statusMessage},
    /// "resume"}` (the resume token lets a host that is about to exit collect it later).
    pub(super) fn status_note(&self, remote: &str, task: &TaskRef, obj: &Value) -> String {
        let mut t = Map::new();
        t.insert("taskId".into(), Value::String(task.id.clone()));
        t.insert("status".into(), Value::String(status_of(obj).to_string()));
        let msg = obj.get("statusMessage").and_then(Value::as_str);
        if let Some(m) = msg {
            t.insert("statusMessage".into(), Value::String(m.to_string()));
        }
        let mut note = Map::new();
        note.insert(
            "message".into(),
            Value::String(match msg {
                Some(m) => format!("task {}: {m}", status_of(obj)),
                None => format!("task {}", status_of(obj)),
            }),
        );
        note.insert("task".into(), Value::Object(t));
        note.insert(
            "resume".into(),
            Value::String(suspend::task_token(self, remote, task, &[])),
        );
        crate::json::to_text(&Value::Object(note))
    }
}
