//! The platform layer's own words, the same on every platform (the implementations use them).

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by this signal (POSIX only).
    #[cfg_attr(windows, allow(dead_code))]
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exited with status {c}"),
            Exit::Signal(s) => write!(f, "was killed by signal {s}"),
        }
    }
}

/// How a child's process tree is told to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Asked to stop (SIGTERM on POSIX): the processes may clean up, or ignore it.
    Ask,
    /// Killed outright (SIGKILL on POSIX).
    Kill,
}

/// What an idle kept-alive socket holds, looked at without blocking or consuming (§5: a
/// connection the server closed while it sat in the pool is not written to).
#[derive(Debug, PartialEq)]
pub enum Idle {
    /// Nothing to read: still open.
    Quiet,
    /// Bytes are waiting (for TLS, perhaps a session ticket or a close alert).
    Data,
    /// The peer closed it, or it failed.
    Closed,
}
