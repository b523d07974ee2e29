//! Tool calls as tasks (issue 29): MCP 2025-11-25 tasks in the handshake era (`params.task`,
//! `tasks/get` at the server's `pollInterval`, `tasks/result`, `tasks/cancel`) and the Tasks
//! extension (SEP-2663) in MCP 2026-07-28 (the extension in the request's client
//! capabilities, `resultType:"task"`, `tasks/get` carrying the result or `inputRequests`,
//! `tasks/update`). The host sees the same call: the wait is bounded by the call's timeout
//! (idle, restarted by a status change or progress; `maxTotalTimeout` in all), not the task;
//! a wait that ends while the task works returns `metadata.pending` with a resume token that
//! names the task, and resuming it polls again: nothing is re-run.

use super::mrtr::Round;
use super::suspend::{self, SavedRequest, Start, TaskRef};
use super::{modern, CallCtl, Era, Session};
use crate::config::TasksMode;
use crate::conn::{Limits, Req, RequestError};
use crate::request::Routing;
use crate::util::lock;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The Tasks extension's identifier (SEP-2663).
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// A call whose timeout is longer than this goes as a task under `"tasks":"auto"`.
const LONG_CALL: Duration = Duration::from_secs(60);
/// The poll interval when the server names none, and the bounds put on one it names.
const DEFAULT_POLL: Duration = Duration::from_millis(1000);
const MIN_POLL: Duration = Duration::from_millis(10);
const MAX_POLL: Duration = Duration::from_secs(30);
/// The least time one poll may take.
const POLL_BOUND: Duration = Duration::from_secs(1);
/// How often a wait between polls looks at a cancel.
const CANCEL_LOOK: Duration = Duration::from_millis(20);
/// The bound on `tasks/cancel` itself.
const CANCEL_BOUND: Duration = Duration::from_secs(5);

/// A tool's `execution.taskSupport` (absent: forbidden).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

impl TaskSupport {
    pub(crate) fn of(tool: &Map<String, Value>) -> TaskSupport {
        match tool
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
        {
            Some("required") => TaskSupport::Required,
            Some("optional") => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        }
    }
}

fn status_of(task: &Value) -> &str {
    task.get("status")
        .and_then(Value::as_str)
        .unwrap_or("working")
}

/// The server's poll interval: `pollInterval` (2025-11-25), `pollIntervalMilliseconds`
/// (SEP-2663) or `pollIntervalMs` (its drafts), bounded.
fn poll_interval(task: &Value) -> Duration {
    ["pollInterval", "pollIntervalMilliseconds", "pollIntervalMs"]
        .iter()
        .find_map(|k| task.get(*k).and_then(Value::as_u64))
        .map_or(DEFAULT_POLL, |ms| {
            Duration::from_millis(ms).clamp(MIN_POLL, MAX_POLL)
        })
}

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
    /// The task object of a CreateTaskResult: 2025-11-25 nests it under `task`, SEP-2663 puts it
    /// at the top with `resultType:"task"`. None when the result is no task.
    pub(super) fn created_task(&self, result: &Value) -> Option<Value> {
        if let Some(t) = result.get("task").filter(|t| t.get("taskId").is_some()) {
            return Some(t.clone());
        }
        (result.get("resultType").and_then(Value::as_str) == Some("task")
            && result.get("taskId").is_some_and(Value::is_string))
        .then(|| result.clone())
    }

    /// `tasks/list`, every page (issue 29): `{"server","tasks":[…]}`. Only a handshake-era server
    /// whose capabilities declare `tasks.list` has one (SEP-2663 removed it).
    pub(crate) fn list_tasks(&self) -> crate::error::Result<String> {
        use crate::error::{Error, ErrorKind};
        let name = &self.spec.name;
        let listed = self.era == Era::Legacy
            && lock(&self.capabilities)
                .as_ref()
                .is_some_and(|c| c.pointer("/tasks/list").is_some());
        if !listed {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "server `{name}` does not list its tasks (tasks/list is declared by capabilities.tasks.list in MCP 2025-11-25; MCP 2026-07-28 has none)"
                ),
            ));
        }
        let mut tasks = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pager = super::list::Pager::new(self.era);
        loop {
            let params = match &cursor {
                Some(c) => {
                    let mut p = String::from(r#"{"cursor":"#);
                    crate::json::rpc::push_json_string(&mut p, c);
                    p.push('}');
                    Some(p)
                }
                None => None,
            };
            let (reply, _) = self.request(&Req::plain(
                "tasks/list",
                params.as_deref(),
                self.spec.timeout,
            ));
            let page = reply
                .and_then(|l| crate::json::rpc::result_value(&l).map_err(RequestError::Rpc))
                .map_err(|e| {
                    Error::new(
                        ErrorKind::NotFound,
                        format!("server `{name}`: tasks/list failed: {}", self.explain(&e)),
                    )
                })?;
            if let Some(Value::Array(a)) = page.get("tasks") {
                tasks.extend(a.iter().cloned());
            }
            match pager.after(page.get("nextCursor").and_then(Value::as_str)) {
                super::list::Step::Next(c) => cursor = Some(c),
                super::list::Step::Done => break,
                end => {
                    let why = end.refusal(name, "tasks/list", pager.pages());
                    return Err(Error::new(ErrorKind::NotFound, why.unwrap_or_default()));
                }
            }
        }
        let mut m = Map::new();
        m.insert("server".into(), Value::String(name.clone()));
        m.insert("tasks".into(), Value::Array(tasks));
        Ok(crate::json::to_text(&Value::Object(m)))
    }

    /// Whether the server offers tasks for `tools/call`: `capabilities.tasks.requests.tools.call`
    /// (2025-11-25) or the Tasks extension (SEP-2663).
    pub(crate) fn offers_tasks(&self) -> bool {
        let caps = lock(&self.capabilities);
        let Some(c) = caps.as_ref() else {
            return false;
        };
        match self.era {
            Era::Legacy => c.pointer("/tasks/requests/tools/call").is_some(),
            Era::Modern => c.get("extensions").and_then(|e| e.get(EXTENSION)).is_some(),
        }
    }

    /// Whether this call goes as a task (issue 29): `required` always, `optional` per the
    /// `tasks` key (`auto`: an asynchronous call, or a timeout over a minute), else never; only
    /// with a server that offers tasks. In MCP 2026-07-28 the server decides (SEP-2663): the
    /// extension is declared unless `tasks` is `never` for a tool that does not require it.
    pub(super) fn call_as_task(&self, remote: &str, ctl: &CallCtl<'_>) -> bool {
        if !self.offers_tasks() {
            return false;
        }
        let support = crate::util::read(&self.task_support)
            .get(remote)
            .copied()
            .unwrap_or_default();
        match (support, self.spec.tasks) {
            (TaskSupport::Required, _) => true,
            (_, TasksMode::Never) => false,
            (_, TasksMode::Always) => support == TaskSupport::Optional || self.era == Era::Modern,
            (TaskSupport::Optional, TasksMode::Auto) => {
                ctl.state.is_some() || ctl.timeout.unwrap_or(self.spec.timeout) > LONG_CALL
            }
            (TaskSupport::Forbidden, TasksMode::Auto) => self.era == Era::Modern,
        }
    }

    /// The `_meta` members and the `task` member a task call adds to `tools/call` params.
    pub(super) fn task_params(&self) -> String {
        match self.era {
            Era::Legacy => format!(
                r#","task":{{"ttl":{}}}"#,
                self.spec.max_total_timeout.as_millis()
            ),
            Era::Modern => String::new(),
        }
    }

    /// Params of `tasks/<m>` for `task` (the `_meta` envelope in MCP 2026-07-28), with `extra`
    /// members (`,"inputResponses":…`).
    fn task_request_params(&self, task: &TaskRef, extra: &str) -> String {
        let mut p = String::from(r#"{"taskId":"#);
        crate::json::rpc::push_json_string(&mut p, &task.id);
        if let Some(s) = &task.request_state {
            p.push_str(r#","requestState":"#);
            crate::json::rpc::push_json_string(&mut p, s);
        }
        p.push_str(extra);
        if self.era == Era::Modern {
            p.push_str(r#","_meta":{"#);
            p.push_str(&modern::envelope(
                self.with_resolver,
                None,
                self.spec.log_level,
                &[EXTENSION],
            ));
            p.push('}');
        }
        p.push('}');
        p
    }

    /// One `tasks/*` request, bounded by `limits`; a cancellable one's id is told to the call's
    /// state (a cancel then ends it).
    #[allow(clippy::too_many_arguments)]
    fn task_request(
        &self,
        method: &str,
        task: &TaskRef,
        extra: &str,
        limits: Limits,
        token: Option<u64>,
        ctl: &CallCtl<'_>,
        cancellable: bool,
    ) -> Result<Value, RequestError> {
        let params = self.task_request_params(task, extra);
        let routing = (self.era == Era::Modern).then(|| Routing {
            name: Some(task.id.clone()),
            params: Vec::new(),
        });
        let started = |id: u64| {
            if let (true, Some(st)) = (cancellable, ctl.state) {
                st.started(&self.conn, id);
            }
        };
        let (reply, _) = self.request(&Req {
            method,
            params_json: Some(&params),
            limits,
            progress_token: token,
            sink: ctl.progress,
            started: &started,
            routing: routing.as_ref(),
            armed: None,
        });
        crate::json::rpc::result_value(&reply?).map_err(RequestError::Rpc)
    }

    /// Waits for the task a call became (issue 29) and shapes its result; `start.task` set and
    /// `start.input_responses` carried by a resumed call are delivered first (`tasks/update`).
    pub(super) fn wait_task(
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

    /// A failed `tasks/*` request: a lost connection ends the wait with a pending the host can
    /// resume later; anything else is an isError naming the method.
    fn task_failure(
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
            // the token that collects it later (issue 29).
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
    fn task_result(
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

    /// Tells the server a `tasks/result` wait is given up (the task goes on, §7).
    fn abandon_quietly(&self, id: u64) {
        self.conn.close_carried(id);
        self.transport.abandon(id);
        if !self.transport.cancels_by_closing() {
            let params = format!(r#"{{"requestId":{id},"reason":"the wait for the task ended"}}"#);
            let _ = self.conn.notify("notifications/cancelled", Some(&params));
        }
    }

    /// A finished task's CallToolResult, shaped like any call's (size and schema checks too).
    fn task_done(&self, remote: &str, result: &Value, ctl: &CallCtl<'_>) -> Option<String> {
        if let Some(st) = ctl.state {
            if !st.decide() {
                return Some(self.cancelled(remote));
            }
        }
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":0,"result":{}}}"#,
            crate::json::to_text(result)
        );
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
    fn cancel_task(&self, remote: &str, task: &TaskRef, ctl: &CallCtl<'_>) -> String {
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

    /// The progress note of a task's status: `{"message","task":{taskId,status,statusMessage},
    /// "resume"}` (the resume token lets a host that is about to exit collect it later).
    fn status_note(&self, remote: &str, task: &TaskRef, obj: &Value) -> String {
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

    /// The result of a wait that ended while the task works (or asks, suspended): isError
    /// false, `metadata.pending` with the task, the Requests and the resume token.
    fn task_pending(
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
    fn task_round(
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
enum TaskAsk {
    Suspended(Vec<SavedRequest>),
    Ends(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_support_is_read_from_execution_and_absent_is_forbidden() {
        let of = |v: Value| TaskSupport::of(v.as_object().unwrap());
        assert_eq!(
            of(json!({"execution": {"taskSupport": "required"}})),
            TaskSupport::Required
        );
        assert_eq!(
            of(json!({"execution": {"taskSupport": "optional"}})),
            TaskSupport::Optional
        );
        assert_eq!(
            of(json!({"execution": {"taskSupport": "forbidden"}})),
            TaskSupport::Forbidden
        );
        assert_eq!(of(json!({"name": "x"})), TaskSupport::Forbidden);
        assert_eq!(
            of(json!({"execution": {"taskSupport": 7}})),
            TaskSupport::Forbidden
        );
    }

    #[test]
    fn poll_interval_takes_either_era_name_bounded() {
        assert_eq!(
            poll_interval(&json!({"pollInterval": 250})),
            Duration::from_millis(250)
        );
        assert_eq!(
            poll_interval(&json!({"pollIntervalMilliseconds": 5000})),
            Duration::from_secs(5)
        );
        assert_eq!(poll_interval(&json!({"pollIntervalMs": 0})), MIN_POLL);
        assert_eq!(
            poll_interval(&json!({"pollInterval": 86_400_000})),
            MAX_POLL
        );
        assert_eq!(poll_interval(&json!({})), DEFAULT_POLL);
    }

    #[test]
    fn status_defaults_to_working() {
        assert_eq!(
            status_of(&json!({"status": "input_required"})),
            "input_required"
        );
        assert_eq!(status_of(&json!({})), "working");
    }
}
