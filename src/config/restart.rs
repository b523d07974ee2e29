//! `restart` (contract §3 says nothing of a client that runs for days; docs/live-servers.md):
//! how a server that went away is brought back, and its defaults.

use std::time::Duration;

/// `restart` (docs/live-servers.md): attempts in a row before the server is `failed`, the first delay
/// (doubling to [`RESTART_BACKOFF_CAP`]), and the uptime after which the count starts again.
pub(crate) const DEFAULT_RESTART_ATTEMPTS: u32 = 5;

pub(crate) const DEFAULT_RESTART_BACKOFF: Duration = Duration::from_millis(500);

pub(crate) const DEFAULT_RESTART_RESET: Duration = Duration::from_millis(60_000);

/// The longest delay before a restart attempt, however many came before.
pub(crate) const RESTART_BACKOFF_CAP: Duration = Duration::from_millis(30_000);

/// How a server that went away is brought back (docs/live-servers.md): a stdio child that exited is
/// started again after a backoff; a remote server is reconnected on the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RestartPolicy {
    /// Failed attempts in a row (within `reset_after` of each other) before `failed`.
    pub(crate) max_attempts: u32,
    /// The delay before the first attempt; each next one doubles it, to 30 s, plus jitter.
    pub(crate) backoff: Duration,
    /// Uptime after which a server counts as healthy again: its next crash is attempt 1.
    pub(crate) reset_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            max_attempts: DEFAULT_RESTART_ATTEMPTS,
            backoff: DEFAULT_RESTART_BACKOFF,
            reset_after: DEFAULT_RESTART_RESET,
        }
    }
}

impl RestartPolicy {
    /// The delay before attempt `attempt` (from 1), without jitter.
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        let doubled = self
            .backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        doubled.min(RESTART_BACKOFF_CAP.max(self.backoff))
    }
}
