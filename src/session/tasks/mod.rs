//! Tool calls as tasks (docs/tasks.md): MCP 2025-11-25 tasks in the handshake era (`params.task`,
//! `tasks/get` at the server's `pollInterval`, `tasks/result`, `tasks/cancel`) and the Tasks
//! extension (SEP-2663) in MCP 2026-07-28 (the extension in the request's client
//! capabilities, `resultType:"task"`, `tasks/get` carrying the result or `inputRequests`,
//! `tasks/update`). The host sees the same call: the wait is bounded by the call's timeout
//! (idle, restarted by a status change or progress; `maxTotalTimeout` in all), not the task;
//! a wait that ends while the task works returns `metadata.pending` with a resume token that
//! names the task, and resuming it polls again: nothing is re-run.

mod outcome;
mod wait;

use super::suspend::TaskRef;
use super::{modern, CallCtl, Era, Session};
use crate::config::TasksMode;
use crate::conn::{Limits, Req, RequestError};
use crate::request::Routing;
use crate::util::lock;
use serde_json::{Map, Value};
use std::time::Duration;

/// The Tasks extension's identifier (SEP-2663).
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
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

    /// `tasks/list`, every page (docs/tasks.md): `{"server","tasks":[…]}`. Only a handshake-era server
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
            // Not `Value::pointer`, which allocates for every token: this runs on every call.
            Era::Legacy => c
                .get("tasks")
                .and_then(|t| t.get("requests"))
                .and_then(|r| r.get("tools"))
                .and_then(|t| t.get("call"))
                .is_some(),
            Era::Modern => c
                .get("extensions")
                .and_then(|e| e.get(TASKS_EXTENSION))
                .is_some(),
        }
    }

    /// Whether this call goes as a task (docs/tasks.md): `required` always, `optional` per the
    /// `tasks` key (`auto`: an asynchronous call, or a timeout over a minute), else never; only
    /// with a server that offers tasks. In MCP 2026-07-28 the server decides (SEP-2663): the
    /// extension is declared unless `tasks` is `never` for a tool that does not require it.
    pub(super) fn call_as_task(&self, remote: &str, ctl: &CallCtl<'_>) -> bool {
        let support = crate::util::read(&self.task_support)
            .get(remote)
            .copied()
            .unwrap_or_default();
        // What the server offers is looked at last, only when the answer depends on it.
        let wanted = match (support, self.spec.tasks) {
            (TaskSupport::Required, _) => true,
            (_, TasksMode::Never) => false,
            (_, TasksMode::Always) => support == TaskSupport::Optional || self.era == Era::Modern,
            (TaskSupport::Optional, TasksMode::Auto) => {
                ctl.state.is_some() || ctl.timeout.unwrap_or(self.spec.timeout) > LONG_CALL
            }
            (TaskSupport::Forbidden, TasksMode::Auto) => self.era == Era::Modern,
        };
        wanted && self.offers_tasks()
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
                &[TASKS_EXTENSION],
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
