//! Calling tools (contract §1, §6, §7): by name, synchronously or asynchronously on the
//! client's call pool, cancel, and resuming a suspended call from its token.

use super::{closed, Client, Server, State};
use crate::error::{Error, ErrorKind, Result};
use crate::session::Session;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How a resumed call goes on.
enum Resumed {
    From(crate::session::Start),
    /// It ends with this result, nothing sent.
    Done(String),
}

/// What `done` is handed: the ToolResult JSON (§1).
pub type Done = Box<dyn FnOnce(String) + Send>;
/// What `progress` is handed: `{"progress":n,"total":n?,"message":"…"?}` (§7).
pub type Progress = Box<dyn Fn(&str) + Send + Sync>;

/// Fires a call's `done` once and retires the call; fires it with an isError when the job
/// unwinds before it could, so that no call is left without its done (§7).
struct Finish {
    calls: Arc<super::async_calls::Calls>,
    id: u64,
    client: u64,
    done: Option<Done>,
    /// The job ran: a job that never started (its thread could not be created) fires no done,
    /// since the caller was told the call did not start.
    started: bool,
}

impl Finish {
    fn fire(&mut self, result: String) {
        if let Some(done) = self.done.take() {
            crate::host::as_callback(self.client, None, || done(result));
        }
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        if self.started && self.done.is_some() {
            self.fire(crate::mapping::shape::failure(
                "internal error: the call failed inside toolnexus (a bug)",
            ));
        }
        self.calls.finished(self.id);
    }
}

impl Client {
    /// Calls the tool `name` (§1); `args_json` None means `{}`.
    pub fn call_tool(&self, name: &str, args_json: Option<&str>) -> Result<String> {
        let (session, remote, args) = self.target(name, args_json)?;
        if crate::host::in_own_resolver(&session.conn) {
            return Err(Error::new(
                ErrorKind::Reentrant,
                format!(
                    "tn_call_tool on server `{}` from inside its own inline resolver would deadlock; return TN_DEFERRED and answer from another thread",
                    session.spec.name
                ),
            ));
        }
        session
            .call(remote, &args, &crate::session::CallCtl::PLAIN)
            .ok_or_else(closed)
    }

    /// Starts a call and returns its id at once (§7); `done` fires exactly once, on a library
    /// thread, with the ToolResult; `progress` gets each progress notification before it.
    /// `timeout` is the per-call `timeoutMs`. `on_id` learns the id before `done` can fire.
    /// When this fails, `done` never fires.
    pub fn call_tool_async(
        &self,
        name: &str,
        args_json: Option<&str>,
        timeout: Option<std::time::Duration>,
        done: Done,
        progress: Option<Progress>,
        on_id: impl FnOnce(u64),
    ) -> Result<u64> {
        let (session, remote, args) = self.target(name, args_json)?;
        self.spawn_call(
            session.clone(),
            remote.to_string(),
            args.into_owned(),
            Resumed::From(crate::session::Start::default()),
            timeout,
            done,
            progress,
            on_id,
        )
    }

    /// Runs a call on a pool thread (§7): `done` exactly once with its result.
    #[allow(clippy::too_many_arguments)]
    fn spawn_call(
        &self,
        session: Arc<Session>,
        remote: String,
        args: String,
        next: Resumed,
        timeout: Option<std::time::Duration>,
        done: Done,
        progress: Option<Progress>,
        on_id: impl FnOnce(u64),
    ) -> Result<u64> {
        let (id, state) = self.calls.register().ok_or_else(closed)?;
        on_id(id);
        let client = self.id;
        let mut finish = Finish {
            calls: self.calls.clone(),
            id,
            client,
            done: Some(done),
            started: false,
        };
        let job = Box::new(move || {
            finish.started = true;
            let sink = |p: &str| {
                if let Some(f) = &progress {
                    crate::host::as_callback(client, None, || f(p));
                }
            };
            let ctl = crate::session::CallCtl {
                timeout,
                progress: Some(&sink),
                state: Some(&state),
            };
            let result = match next {
                Resumed::Done(r) => Some(r),
                Resumed::From(start) => session.call_from(&remote, &args, &ctl, start),
            }
            .unwrap_or_else(|| {
                crate::mapping::shape::failure(&format!("{}: disconnected", session.spec.name))
            });
            // Whatever ended the call, a cancel that came first is what done reports (§7:
            // tn_call_cancel is TN_OK only when it ends the call).
            let result = if state.decide() {
                result
            } else {
                session.cancelled(&remote)
            };
            finish.fire(result);
        });
        if let Err(e) = self.calls.spawn(job) {
            return Err(Error::new(
                ErrorKind::Internal,
                format!("cannot start a thread for the call: {e}"),
            ));
        }
        Ok(id)
    }

    /// Continues a suspended call (§6, c-api.md "Suspended calls") from its resume token and
    /// the host's answers, on this thread.
    pub fn resume(&self, resume_token: &str, answers_json: &str) -> Result<String> {
        let (session, resume, next) = self.resume_target(resume_token, answers_json)?;
        let start = match next {
            Resumed::From(start) => start,
            Resumed::Done(result) => return Ok(result),
        };
        if crate::host::in_own_resolver(&session.conn) {
            return Err(Error::new(
                ErrorKind::Reentrant,
                format!(
                    "tn_call_tool_resume on server `{}` from inside its own inline resolver would deadlock",
                    session.spec.name
                ),
            ));
        }
        session
            .call_from(
                &resume.tool,
                &resume.arguments,
                &crate::session::CallCtl::PLAIN,
                start,
            )
            .ok_or_else(closed)
    }

    /// [`Client::resume`], asynchronously: the rules of [`Client::call_tool_async`].
    pub fn resume_async(
        &self,
        resume_token: &str,
        answers_json: &str,
        timeout: Option<std::time::Duration>,
        done: Done,
        progress: Option<Progress>,
        on_id: impl FnOnce(u64),
    ) -> Result<u64> {
        let (session, resume, next) = self.resume_target(resume_token, answers_json)?;
        self.spawn_call(
            session,
            resume.tool,
            resume.arguments,
            next,
            timeout,
            done,
            progress,
            on_id,
        )
    }

    /// The session a resume token names, the token, and how the call goes on (c-api.md
    /// "Suspended calls": a foreign server or filtered tool is NotFound; an era that changed
    /// ends the call with nothing sent).
    fn resume_target(
        &self,
        resume_token: &str,
        answers_json: &str,
    ) -> Result<(Arc<Session>, crate::session::Resume, Resumed)> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let resume = crate::session::decode_resume(resume_token)?;
        let Some(server) = self.servers.iter().find(|s| s.name == resume.server) else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the resume token names server `{}`, which this client does not have",
                    resume.server
                ),
            ));
        };
        let session = match &server.state {
            State::Connected(s) => s.clone(),
            State::Disabled => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("the resume token's server `{}` is disabled", server.name),
                ))
            }
            State::Failed(why) => {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("the resume token's server `{}` failed: {why}", server.name),
                ))
            }
        };
        if !session.spec.tools.allows(&resume.tool) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the resume token's tool `{}` of server `{}` is filtered out by the config",
                    resume.tool, server.name
                ),
            ));
        }
        let next = if session.era != resume.era
            || session.protocol_version != resume.protocol_version
        {
            Resumed::Done(crate::mapping::shape::failure(&format!(
                "server `{}`: tools/call `{}` cannot be resumed: the server now speaks protocol {} ({}), the call was suspended under {}; nothing was sent",
                server.name,
                resume.tool,
                session.protocol_version,
                if session.era == crate::session::Era::Modern { "modern" } else { "legacy" },
                resume.protocol_version
            )))
        } else {
            match resume.answers(answers_json)? {
                crate::session::Continue::From(start) => Resumed::From(start),
                crate::session::Continue::Fails(why) => {
                    Resumed::Done(crate::mapping::shape::failure(&format!(
                        "server `{}`: tools/call `{}` failed: {why}",
                        server.name, resume.tool
                    )))
                }
            }
        };
        Ok((session, resume, next))
    }

    /// Cancels call `id` (§7): Ok when this is what ends it (its done then carries the
    /// cancelled result); NotFound when it is unknown or already finished.
    pub fn cancel_call(&self, id: u64) -> Result<()> {
        if self.calls.cancel(id) {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::NotFound,
                format!("no call {id} in flight (unknown, finished or already cancelled)"),
            ))
        }
    }

    /// Whether this thread is inside one of this client's call callbacks.
    pub fn in_own_callback(&self) -> bool {
        crate::host::in_callback_of(self.id)
    }

    /// The session, remote name and one-line arguments for tool `name`.
    fn target<'a>(
        &'a self,
        name: &str,
        args_json: Option<&'a str>,
    ) -> Result<(&'a Arc<Session>, &'a str, std::borrow::Cow<'a, str>)> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        let args: std::borrow::Cow<'_, str> = match args_json {
            None => "{}".into(),
            Some(a) => {
                crate::json::rpc::check_object_text(a, "args_json")?;
                crate::json::rpc::one_line(a.trim())
            }
        };
        let tool = self.tools.get(name).ok_or_else(|| self.not_found(name))?;
        let State::Connected(session) = &self.servers[tool.server].state else {
            return Err(Error::new(
                ErrorKind::Internal,
                "tool of a server that is not connected",
            ));
        };
        Ok((session, &tool.remote, args))
    }

    /// The NOT_FOUND error for `name`. When its prefix is a failed or disabled server's
    /// (`sanitize(server) + "_"`, §0.1), it says which server and why, so that a call to a
    /// server that did not start does not read as a typo (§3: a failure names its server).
    fn not_found(&self, name: &str) -> Error {
        let mut msg = format!("no tool named `{name}`");
        // The longest matching prefix wins (`a_b_x` belongs to `a_b` rather than `a`); on a tie
        // the first server in name order, as for tool-name collisions (§3).
        let mut best: Option<(usize, &Server)> = None;
        for s in &self.servers {
            if matches!(s.state, State::Connected(_)) {
                continue;
            }
            let prefix = crate::mapping::naming::sanitize(&s.name) + "_";
            if name.starts_with(&prefix) && best.is_none_or(|(len, _)| prefix.len() > len) {
                best = Some((prefix.len(), s));
            }
        }
        if let Some((_, s)) = best {
            match &s.state {
                // `why` already reads "server `x` failed during `phase`: cause".
                State::Failed(why) => msg.push_str(&format!(": {why}")),
                State::Disabled => msg.push_str(&format!(": server `{}` is disabled", s.name)),
                State::Connected(_) => {}
            }
        }
        Error::new(ErrorKind::NotFound, msg)
    }
}
