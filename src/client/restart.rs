//! Bringing a server back (docs/live-servers.md). A stdio child that exits while connected fails the
//! calls in flight at once (as it always did: its exit status and stderr tail; nothing is sent
//! again), and is started again on a thread of its own after a backoff (`restart.backoffMs`,
//! doubling to 30 s, with jitter), with the same config and in the era it had, until it is up
//! or `restart.maxAttempts` attempts since it was last up for `restart.resetAfterMs` have
//! failed: then it is `failed` with the reason. A remote server whose connection ended (the
//! HTTP+SSE stream) is reconnected by the next call, on a new session. A call made while a
//! server is away waits for it within its own timeout; a call to a server that is `failed`
//! this way tries once more.

use super::servers::{Inner, Phase};
use crate::conn::{Conn, RequestError};
use crate::session::Session;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a call that finds its server's connection dead waits for the watcher to take note
/// (the reader fails the calls first, then tells the watcher).
const NOTICE: Duration = Duration::from_millis(200);
/// How often a call waiting for its server looks whether it was cancelled.
const CANCEL_LOOK: Duration = Duration::from_millis(20);

/// Why a call got no session to run on.
pub(crate) enum Away {
    /// The client is being disconnected.
    Closed,
    /// The server did not come back in time, or could not: the words for the call's isError.
    Failed(String),
}

/// Server `idx`'s connection `conn` failed with `why` (on the thread that noticed: a reader).
pub(crate) fn on_failed(inner: &Arc<Inner>, idx: usize, conn: &Conn, why: &RequestError) {
    if inner.is_closed() {
        return;
    }
    let slot = &inner.slots[idx];
    let Some(spec) = slot.spec.as_ref() else {
        return;
    };
    let mut st = slot.lock();
    let Some(session) = st.session.clone() else {
        return;
    };
    if !matches!(st.phase, Phase::Connected) || !std::ptr::eq(Arc::as_ptr(&session.conn), conn) {
        return; // an old connection, or one still being opened: its opener decides
    }
    st.last_exit = session.transport.exit();
    let cause = session.explain(why);
    let reason = format!("server `{}` failed after connecting: {cause}", slot.name);
    let Some(policy) = spec.restart else {
        st.phase = Phase::Failed {
            error: reason.clone(),
            retry_on_call: false,
        };
        slot.changed.notify_all();
        drop(st);
        inner.status_event(idx, "failed", &[("error", reason.into())]);
        return;
    };
    if !slot.is_local() {
        // A remote server: the next call reconnects (new session where the old one is gone).
        st.phase = Phase::Failed {
            error: reason.clone(),
            retry_on_call: true,
        };
        slot.changed.notify_all();
        drop(st);
        inner.status_event(idx, "failed", &[("error", reason.into())]);
        return;
    }
    if st.up_since.elapsed() >= policy.reset_after {
        st.attempts = 0;
    }
    let attempt = st.attempts + 1;
    if attempt > policy.max_attempts {
        let error = format!(
            "{reason} (it had been started again {} times within restart.resetAfterMs, {} ms; restart.maxAttempts is {})",
            st.attempts,
            policy.reset_after.as_millis(),
            policy.max_attempts
        );
        st.phase = Phase::Failed {
            error: error.clone(),
            retry_on_call: true,
        };
        slot.changed.notify_all();
        drop(st);
        inner.status_event(idx, "failed", &[("error", error.into())]);
        return;
    }
    let delay = jittered(policy.delay(attempt));
    begin(inner, idx, st, attempt, delay, reason, None);
}

/// The delay with up to a quarter more at random, so that servers that died together do not
/// all start again at once.
fn jittered(d: Duration) -> Duration {
    d + d.mul_f64(crate::util::jitter() / 4.0)
}

/// Marks server `idx` as restarting (attempt `attempt` after `delay`), tells the host, and
/// starts the restart thread unless one runs.
fn begin(
    inner: &Arc<Inner>,
    idx: usize,
    mut st: std::sync::MutexGuard<'_, super::servers::SlotState>,
    attempt: u32,
    delay: Duration,
    reason: String,
    budget: Option<u32>,
) {
    let slot = &inner.slots[idx];
    st.phase = Phase::Restarting {
        attempt,
        delay,
        since: Instant::now(),
        reason: reason.clone(),
        budget,
    };
    let start = !st.restarter;
    st.restarter = true;
    let last_exit = st.last_exit.clone();
    slot.changed.notify_all();
    drop(st);
    let mut more = vec![
        ("attempt", Value::from(attempt)),
        ("delayMs", Value::from(delay.as_millis() as u64)),
        ("reason", Value::from(reason)),
    ];
    if let Some(e) = last_exit {
        more.push(("lastExit", e.into()));
    }
    inner.status_event(idx, "restarting", &more);
    if start {
        let me = inner.clone();
        let started = inner.spawn(format!("tn-restart-{}", slot.name), move || run(&me, idx));
        if !started {
            let mut st = slot.lock();
            st.restarter = false;
            st.phase = Phase::Failed {
                error: format!(
                    "server `{}` could not be started again: no thread for it",
                    slot.name
                ),
                retry_on_call: true,
            };
            slot.changed.notify_all();
        }
    }
}

/// The restart thread of server `idx`: waits out each attempt's delay, opens the server again
/// in the era it had, and installs it, or counts the attempt and goes on, or gives up.
fn run(inner: &Arc<Inner>, idx: usize) {
    let slot = &inner.slots[idx];
    let Some(spec) = slot.spec.clone() else {
        return;
    };
    let policy = spec.restart.unwrap_or_default();
    loop {
        let mut st = slot.lock();
        // The attempt's delay, cut short by disconnect.
        let (attempt, budget) = loop {
            if inner.is_closed() {
                st.restarter = false;
                slot.changed.notify_all();
                return;
            }
            let Phase::Restarting {
                attempt,
                delay,
                since,
                budget,
                ..
            } = &st.phase
            else {
                st.restarter = false;
                return;
            };
            let left = delay.saturating_sub(since.elapsed());
            if left.is_zero() {
                break (*attempt, *budget);
            }
            st = slot.wait(st, left);
        };
        st.attempts = st.attempts.max(attempt);
        // The old session goes first: its child is reaped before a new one starts.
        let old = st.session.clone();
        drop(st);
        if let Some(old) = &old {
            old.stop();
        }
        let hooks = slot.hooks();
        let opened = match &old {
            Some(was) => crate::session::reopen(&spec, slot.live.clone(), hooks, was),
            None => crate::session::open(&spec, slot.live.clone(), hooks),
        };
        let mut st = slot.lock();
        if inner.is_closed() {
            st.restarter = false;
            slot.changed.notify_all();
            drop(st);
            if let Ok((s, _)) = opened {
                s.stop();
            }
            return;
        }
        match opened {
            Ok((session, listing)) => {
                st.restarts += 1;
                if budget.is_some() {
                    // A call brought it back: it counts as a fresh start.
                    st.attempts = 0;
                }
                st.restarter = false;
                let restarts = st.restarts;
                let changed = std::mem::take(&mut st.changed_while_opening);
                drop(st);
                let listed_before = inner.slots[idx].lock().catalog.has_any();
                inner.install(idx, session, listing);
                inner.rebuild();
                if listed_before {
                    // A server that came back may list otherwise: listed again, and what
                    // changed told.
                    super::catalog::changed(inner, idx, super::catalog::Kind::All);
                }
                inner.status_event(idx, "connected", &[("restarts", restarts.into())]);
                if changed {
                    super::refresh::request(inner, idx);
                }
                return;
            }
            Err(e) => {
                let budget = budget.map(|b| b.saturating_sub(1));
                if st.attempts >= policy.max_attempts || budget == Some(0) {
                    let error = if budget.is_some() {
                        e.message
                    } else {
                        format!(
                            "{} (gave up after {} restart attempts)",
                            e.message, st.attempts
                        )
                    };
                    st.phase = Phase::Failed {
                        error: error.clone(),
                        retry_on_call: true,
                    };
                    st.restarter = false;
                    slot.changed.notify_all();
                    drop(st);
                    inner.status_event(idx, "failed", &[("error", error.into())]);
                    return;
                }
                let next = st.attempts + 1;
                let delay = jittered(policy.delay(next));
                // This thread goes on with the next attempt (`restarter` stays set).
                st.phase = Phase::Restarting {
                    attempt: next,
                    delay,
                    since: Instant::now(),
                    reason: e.message.clone(),
                    budget,
                };
                slot.changed.notify_all();
                drop(st);
                inner.status_event(
                    idx,
                    "restarting",
                    &[
                        ("attempt", next.into()),
                        ("delayMs", (delay.as_millis() as u64).into()),
                        ("reason", e.message.into()),
                    ],
                );
            }
        }
    }
}

/// The session a call to server `idx` runs on (docs/live-servers.md): the current one; while the server
/// restarts, the one it comes back on, waited for at most `within` (the call's own timeout);
/// a server that is `failed` but may be tried again is tried once, within the same bound.
/// Returns the session and how long the wait took. A call that `cancelled` says was cancelled
/// stops waiting (its caller then sends nothing).
pub(crate) fn session_for_call(
    inner: &Arc<Inner>,
    idx: usize,
    within: Duration,
    cancelled: &dyn Fn() -> bool,
) -> Result<(Arc<Session>, Duration), Away> {
    let slot = &inner.slots[idx];
    let mut st = slot.lock();
    // The usual case first: connected and alive, nothing to wait for (no clock read).
    if matches!(st.phase, Phase::Connected | Phase::Opening) && !inner.is_closed() && !cancelled() {
        if let Some(s) = st.session.as_ref().filter(|s| !s.conn.is_dead()) {
            return Ok((s.clone(), Duration::ZERO));
        }
    }
    let t0 = Instant::now();
    let deadline = t0 + within;
    // Zero unless the call had to wait (its timeout then counts what is left).
    let did_wait = std::cell::Cell::new(false);
    let waited = || {
        if did_wait.get() {
            t0.elapsed()
        } else {
            Duration::ZERO
        }
    };
    let mut noticed = false;
    let mut tried = false;
    loop {
        if inner.is_closed() {
            return Err(Away::Closed);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if cancelled() {
            // The caller finds the cancel before it sends anything.
            if let Some(s) = st.session.clone() {
                return Ok((s, waited()));
            }
            return Err(Away::Failed("cancelled by the host".into()));
        }
        match &st.phase {
            Phase::Connected | Phase::Opening => {
                let Some(s) = st.session.clone() else {
                    return Err(Away::Failed(format!(
                        "server `{}` is not connected",
                        slot.name
                    )));
                };
                let restartable = slot.spec.as_ref().is_some_and(|sp| sp.restart.is_some());
                if s.conn.is_dead() && restartable && !noticed && !left.is_zero() {
                    // Died just now: the watcher is about to mark it restarting.
                    noticed = true;
                    did_wait.set(true);
                    st = slot.wait(st, left.min(NOTICE));
                    continue;
                }
                return Ok((s, waited()));
            }
            Phase::Restarting {
                attempt, reason, ..
            } => {
                if left.is_zero() {
                    return Err(Away::Failed(format!(
                        "server `{}` is restarting (attempt {attempt}; {reason}) and was not back within {} ms",
                        slot.name,
                        within.as_millis()
                    )));
                }
                did_wait.set(true);
                st = slot.wait(st, left.min(CANCEL_LOOK));
            }
            Phase::Failed {
                error,
                retry_on_call: true,
            } => {
                if left.is_zero() || tried {
                    return Err(Away::Failed(error.clone()));
                }
                // One more try, now, on behalf of this call (and only one).
                tried = true;
                let reason = error.clone();
                let attempt = st.attempts + 1;
                begin(inner, idx, st, attempt, Duration::ZERO, reason, Some(1));
                st = slot.lock();
            }
            Phase::Failed {
                error,
                retry_on_call: false,
            } => {
                return match st.session.clone() {
                    // The call fails with why the server went away (`"restart": false`).
                    Some(s) => Ok((s, waited())),
                    None => Err(Away::Failed(error.clone())),
                };
            }
            Phase::Disabled => {
                return Err(Away::Failed(format!("server `{}` is disabled", slot.name)))
            }
        }
    }
}
