//! Calling tools (contract §1, §6, §7): by name, synchronously or asynchronously on the
//! client's call pool, cancel, and resuming a suspended call from its token.

use super::restart::{session_for_call, Away};
use super::servers::Phase;
use super::{closed, Client};
use crate::error::{Error, ErrorKind, Result};
use crate::session::Session;
use std::sync::Arc;
use std::time::Duration;

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
struct DoneOnce {
    calls: Arc<super::async_calls::Calls>,
    id: u64,
    client: u64,
    done: Option<Done>,
    /// The job ran: a job that never started (its thread could not be created) fires no done,
    /// since the caller was told the call did not start.
    started: bool,
}

impl DoneOnce {
    fn fire(&mut self, result: String) {
        if let Some(done) = self.done.take() {
            crate::host::as_callback(self.client, None, || done(result));
        }
    }
}

impl Drop for DoneOnce {
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
        self.call_on_this_thread(name, args_json, None, None)
    }

    /// [`Client::call_tool`] with its own `timeoutMs`, named by an id another thread may
    /// cancel (§7): `on_id` learns it before the request goes out, and [`Client::cancel_call`]
    /// ends the call as it ends an asynchronous one. The call runs on this thread, woken by
    /// the reader as a plain call is (no pool thread): what lets a binding wait on its main
    /// thread at the plain call's speed and still cancel on Ctrl-C (docs/performance.md).
    pub fn call_tool_with(
        &self,
        name: &str,
        args_json: Option<&str>,
        timeout: Option<Duration>,
        on_id: impl FnOnce(u64),
    ) -> Result<String> {
        let (id, state) = self.calls.register().ok_or_else(closed)?;
        // Retired however the call ends, a panic included, so disconnect's drain never waits
        // on it.
        struct Retire<'a>(&'a super::async_calls::Calls, u64);
        impl Drop for Retire<'_> {
            fn drop(&mut self) {
                self.0.finished(self.1);
            }
        }
        let _retire = Retire(&self.calls, id);
        on_id(id);
        self.call_on_this_thread(name, args_json, timeout, Some(&state))
    }

    /// A call on the caller's thread: the plain one (no `state`), or one the host may cancel.
    fn call_on_this_thread(
        &self,
        name: &str,
        args_json: Option<&str>,
        own_timeout: Option<Duration>,
        state: Option<&crate::session::CallState>,
    ) -> Result<String> {
        let (idx, remote, args) = self.target(name, args_json)?;
        let slot = &self.inner.slots[idx];
        if slot
            .session()
            .is_some_and(|s| crate::host::in_own_resolver(&s.conn))
        {
            return Err(Error::new(
                ErrorKind::Reentrant,
                format!(
                    "tn_call_tool on server `{}` from inside its own inline resolver would deadlock; return TN_DEFERRED and answer from another thread",
                    slot.name
                ),
            ));
        }
        let timeout = self.timeout_of(idx, own_timeout);
        let cancelled = || state.is_some_and(|s| s.is_cancelled());
        let outcome = match session_for_call(&self.inner, idx, timeout, &cancelled) {
            Ok((session, waited)) => {
                let ctl = crate::session::CallCtl {
                    timeout: left_after(timeout, waited).or(own_timeout),
                    state,
                    ..crate::session::CallCtl::PLAIN
                };
                session.call(&remote, &args, &ctl)
            }
            Err(Away::Closed) => None,
            Err(Away::Failed(why)) => Some(not_sent(&slot.name, &remote, &why)),
        };
        let Some(state) = state else {
            return outcome.ok_or_else(closed);
        };
        // A call the host may cancel ends as its asynchronous form's done would say (§7): a
        // cancel that came first is what it returns, and a disconnect is the isError
        // "disconnected", not TN_ERR_CLOSED.
        Ok(if !state.decide() {
            crate::mapping::shape::failure(&format!(
                "server `{}`: tools/call `{remote}` was cancelled",
                slot.name
            ))
        } else {
            outcome.unwrap_or_else(|| {
                crate::mapping::shape::failure(&format!("{}: disconnected", slot.name))
            })
        })
    }

    /// A call's timeout: its own `timeoutMs`, else its server's `timeout`.
    fn timeout_of(&self, idx: usize, own: Option<Duration>) -> Duration {
        own.unwrap_or_else(|| {
            self.inner.slots[idx]
                .spec
                .as_ref()
                .map_or(crate::config::DEFAULT_TIMEOUT, |s| s.timeout)
        })
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
        let (idx, remote, args) = self.target(name, args_json)?;
        self.spawn_call(
            idx,
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
        idx: usize,
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
        let inner = self.inner.clone();
        let within = self.timeout_of(idx, timeout);
        let mut finish = DoneOnce {
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
            let name = &inner.slots[idx].name;
            let disconnected = || crate::mapping::shape::failure(&format!("{name}: disconnected"));
            let result = match next {
                Resumed::Done(r) => r,
                // The server may be away: the call waits for it within its own timeout.
                Resumed::From(start) => {
                    match session_for_call(&inner, idx, within, &|| state.is_cancelled()) {
                        Ok((session, waited)) => {
                            let ctl = crate::session::CallCtl {
                                timeout: left_after(within, waited).or(timeout),
                                progress: Some(&sink),
                                state: Some(&state),
                            };
                            session
                                .call_from(&remote, &args, &ctl, start)
                                .unwrap_or_else(disconnected)
                        }
                        Err(Away::Closed) => disconnected(),
                        Err(Away::Failed(why)) => not_sent(name, &remote, &why),
                    }
                }
            };
            // Whatever ended the call, a cancel that came first is what done reports (§7:
            // tn_call_cancel is TN_OK only when it ends the call).
            let result = if state.decide() {
                result
            } else {
                crate::mapping::shape::failure(&format!(
                    "server `{name}`: tools/call `{remote}` was cancelled"
                ))
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
        let (idx, resume, next) = self.resume_target(resume_token, answers_json)?;
        let start = match next {
            Resumed::From(start) => start,
            Resumed::Done(result) => return Ok(result),
        };
        let timeout = self.timeout_of(idx, None);
        let session = match session_for_call(&self.inner, idx, timeout, &|| false) {
            Ok((s, _)) => s,
            Err(Away::Closed) => return Err(closed()),
            Err(Away::Failed(why)) => {
                return Ok(not_sent(&self.inner.slots[idx].name, &resume.tool, &why))
            }
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
        let (idx, resume, next) = self.resume_target(resume_token, answers_json)?;
        self.spawn_call(
            idx,
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
    ) -> Result<(usize, crate::session::Resume, Resumed)> {
        if self.inner.is_closed() {
            return Err(closed());
        }
        let resume = crate::session::decode_resume(resume_token)?;
        let Some(idx) = self
            .inner
            .slots
            .iter()
            .position(|s| s.name == resume.server)
        else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the resume token names server `{}`, which this client does not have",
                    resume.server
                ),
            ));
        };
        let server = &self.inner.slots[idx];
        // The session it is on, or was on last (a server that is restarting comes back in the
        // era it had, so the era checks below hold for it).
        let session: Arc<Session> = {
            let st = server.lock();
            match (&st.phase, st.session.clone()) {
                (Phase::Disabled, _) => {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!("the resume token's server `{}` is disabled", server.name),
                    ))
                }
                (_, Some(s)) => s,
                (Phase::Failed { error, .. }, None) => {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "the resume token's server `{}` failed: {error}",
                            server.name
                        ),
                    ))
                }
                (_, None) => {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "the resume token's server `{}` is not connected",
                            server.name
                        ),
                    ))
                }
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
        Ok((idx, resume, next))
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

    /// Whether this thread is inside one of this client's callbacks (a call's done or progress,
    /// or the event callback).
    pub fn in_own_callback(&self) -> bool {
        crate::host::in_callback_of(self.id)
    }

    /// The server (its index), remote name and one-line arguments for tool `name`, as the
    /// index has it now.
    fn target<'a>(
        &self,
        name: &str,
        args_json: Option<&'a str>,
    ) -> Result<(usize, Arc<str>, std::borrow::Cow<'a, str>)> {
        if self.inner.is_closed() {
            return Err(closed());
        }
        let args: std::borrow::Cow<'_, str> = match args_json {
            None => "{}".into(),
            Some(a) => {
                crate::json::rpc::check_object_text(a, "args_json")?;
                crate::json::rpc::one_line(a.trim())
            }
        };
        let index = self.inner.index();
        let tool = index.tools.get(name).ok_or_else(|| self.not_found(name))?;
        Ok((tool.server, tool.remote.clone(), args))
    }

    /// The NOT_FOUND error for `name`. A tool a refresh removed says which server removed it
    /// (docs/live-servers.md). When its prefix is a failed or disabled server's (`sanitize(server) + "_"`,
    /// §0.1), it says which server and why, so that a call to a server that did not start does
    /// not read as a typo (§3: a failure names its server).
    fn not_found(&self, name: &str) -> Error {
        let mut msg = format!("no tool named `{name}`");
        if let Some(idx) = self.inner.index().removed.get(name) {
            msg.push_str(&format!(
                ": server `{}` removed it (its tool list changed)",
                self.inner.slots[*idx].name
            ));
            return Error::new(ErrorKind::NotFound, msg);
        }
        // The longest matching prefix wins (`a_b_x` belongs to `a_b` rather than `a`); on a tie
        // the first server in name order, as for tool-name collisions (§3).
        let mut best: Option<(usize, String)> = None;
        for s in &self.inner.slots {
            let st = s.lock();
            let why = match &st.phase {
                Phase::Disabled => format!("server `{}` is disabled", s.name),
                // `error` already reads "server `x` failed during `phase`: cause".
                Phase::Failed { error, .. } if st.listed.is_none() => error.clone(),
                _ => continue,
            };
            drop(st);
            let prefix = crate::mapping::naming::sanitize(&s.name) + "_";
            if name.starts_with(&prefix) && best.as_ref().is_none_or(|(len, _)| prefix.len() > *len)
            {
                best = Some((prefix.len(), why));
            }
        }
        if let Some((_, why)) = best {
            msg.push_str(&format!(": {why}"));
        }
        Error::new(ErrorKind::NotFound, msg)
    }
}

/// What is left of `timeout` after `waited` for the server (at least 1 ms); None when nothing
/// was waited (the call's own timeout stands as it is).
fn left_after(timeout: Duration, waited: Duration) -> Option<Duration> {
    (!waited.is_zero()).then(|| timeout.saturating_sub(waited).max(Duration::from_millis(1)))
}

/// The isError of a call that was never sent: its server is away (docs/live-servers.md).
fn not_sent(server: &str, remote: &str, why: &str) -> String {
    crate::mapping::shape::failure(&format!(
        "server `{server}`: tools/call `{remote}` was not sent: {why}"
    ))
}
