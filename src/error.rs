//! The library's error type: a kind (mapped onto a C status code by `ffi::guard`) and a message
//! that says what was wrong. Protocol code returns these; it never sees a C status.

use std::fmt;

/// What went wrong, at the granularity the C ABI reports (c-api.md "Status codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// NULL, bad UTF-8, a wrong JSON shape, an invalid §10 Answer.
    InvalidArgument,
    /// Text that is not JSON (strict: no lone surrogates, depth ≤ 128, no trailing text).
    InvalidJson,
    /// The whole config is unusable (§2); per-server problems are statuses instead.
    Config,
    /// No tool of that name.
    NotFound,
    /// The client or responder is already closed.
    Closed,
    /// A call that would deadlock (inside that server's own inline resolver).
    Reentrant,
    /// A bug in the library.
    Internal,
    /// The server failed a request the host made of it (resources, prompts, completions): an
    /// error answer other than not-found, a result that is invalid or over `maxResultBytes`,
    /// a connection that ended.
    Server,
    /// No answer within the request's timeout.
    Timeout,
    /// The host cancelled the request (`tn_call_cancel`).
    Cancelled,
}

impl ErrorKind {
    /// The name of the C status this kind maps to (`TN_ERR_…`), for hosts without the header
    /// (the CLI's bridge lines).
    pub fn status_name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "TN_ERR_INVALID_ARGUMENT",
            ErrorKind::InvalidJson => "TN_ERR_INVALID_JSON",
            ErrorKind::Config => "TN_ERR_CONFIG",
            ErrorKind::NotFound => "TN_ERR_NOT_FOUND",
            ErrorKind::Closed => "TN_ERR_CLOSED",
            ErrorKind::Reentrant => "TN_ERR_REENTRANT",
            ErrorKind::Internal => "TN_ERR_INTERNAL",
            ErrorKind::Server => "TN_ERR_SERVER",
            ErrorKind::Timeout => "TN_ERR_TIMEOUT",
            ErrorKind::Cancelled => "TN_ERR_CANCELLED",
        }
    }
}

/// An error with a message for `tn_last_error_message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
