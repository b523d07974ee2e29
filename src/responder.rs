//! The one-shot responder behind `tn_responder` (contract §4, c-api.md "The resolver"): a small
//! state machine (open → answered | cancelled | timed out) under a lock, reached through a
//! never-reused token so that a late, repeated or racing answer is `Closed`, never a
//! use-after-free.

use crate::error::{Error, ErrorKind, Result};
use crate::mapping::elicitation::{parse_answer, Answer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// How a responder ended; handed once to its finisher.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// A valid §10 Answer from the host.
    Answer(Answer),
    /// No usable answer: the reason is recorded for diagnostics, the server sees cancel.
    Cancel(String),
}

type Finisher = Box<dyn FnOnce(Finish) + Send>;

/// One open question to the host.
pub struct Responder {
    /// Which client opened it (0: the pure function); disconnect cancels by owner.
    owner: u64,
    request_id: String,
    finisher: Mutex<Option<Finisher>>,
}

/// The opaque handle given to the host: a registry key, never reused within the process.
pub type Token = u64;

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

fn registry() -> &'static Mutex<HashMap<Token, Arc<Responder>>> {
    static REG: OnceLock<Mutex<HashMap<Token, Arc<Responder>>>> = OnceLock::new();
    REG.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked mid-update of plain data; go on.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Opens a responder for the Request `request_id`; `finisher` runs exactly once, on whichever
/// thread ends it (the host's answer, the resolver's return, a timer, disconnect).
pub fn open(
    owner: u64,
    request_id: String,
    finisher: impl FnOnce(Finish) + Send + 'static,
) -> Token {
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    let r = Arc::new(Responder {
        owner,
        request_id,
        finisher: Mutex::new(Some(Box::new(finisher))),
    });
    lock(registry()).insert(token, r);
    token
}

fn closed() -> Error {
    Error::new(
        ErrorKind::Closed,
        "this responder was already answered, timed out or cancelled",
    )
}

fn take(token: Token) -> Option<Finisher> {
    let r = lock(registry()).remove(&token)?;
    let f = lock(&r.finisher).take();
    f
}

/// The host's answer (JSON text). Invalid text or an invalid Answer is an error and leaves
/// the responder open; an ended responder is `Closed`.
pub fn answer(token: Token, answer_json: &str) -> Result<()> {
    let r = lock(registry()).get(&token).cloned().ok_or_else(closed)?;
    let v = crate::json::parse(answer_json, "answer_json")?;
    let a = parse_answer(v, Some(&r.request_id))?;
    let f = {
        let mut slot = lock(&r.finisher);
        let f = slot.take().ok_or_else(closed)?;
        lock(registry()).remove(&token);
        f
    };
    f(Finish::Answer(a));
    Ok(())
}

/// Ends the responder with cancel when it is still open; false when it had already ended.
pub fn cancel(token: Token, reason: impl Into<String>) -> bool {
    match take(token) {
        Some(f) => {
            f(Finish::Cancel(reason.into()));
            true
        }
        None => false,
    }
}

/// Cancels every open responder of `owner` (disconnect); returns how many were open.
pub fn cancel_owner(owner: u64, reason: &str) -> usize {
    let tokens: Vec<Token> = lock(registry())
        .iter()
        .filter(|(_, r)| r.owner == owner)
        .map(|(t, _)| *t)
        .collect();
    tokens.into_iter().filter(|t| cancel(*t, reason)).count()
}

/// Whether the responder is still waiting for an answer.
pub fn is_open(token: Token) -> bool {
    lock(registry()).contains_key(&token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_shot() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let t = open(9, "elc-x-1".into(), move |f| g.lock().unwrap().push(f));
        assert_eq!(answer(t, "nope").unwrap_err().kind, ErrorKind::InvalidJson);
        assert_eq!(
            answer(t, r#"{"ok":true,"id":"other"}"#).unwrap_err().kind,
            ErrorKind::InvalidArgument
        );
        assert!(is_open(t));
        answer(t, r#"{"ok":false,"reason":"declined"}"#).unwrap();
        assert_eq!(
            answer(t, r#"{"ok":true}"#).unwrap_err().kind,
            ErrorKind::Closed
        );
        assert!(!cancel(t, "late"));
        assert_eq!(got.lock().unwrap().len(), 1);
    }
}

/// What the host's resolver function returned (c-api.md: `TN_RESOLVED`, `TN_DEFERRED`, or
/// anything else = failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolverReturn {
    Resolved,
    Deferred,
    /// `TN_SUSPEND`: suspend this question durably (§6); counts only for an MRTR or -32042
    /// question, elsewhere it is cancel.
    Suspend,
    Failed(i32),
}

/// The host's resolver, seen from the protocol side: it gets the §10 Request as JSON text and
/// the token of its responder. Implemented over the C function pointer in `ffi::resolver`.
pub trait Resolver: Send + Sync {
    fn call(&self, request_json: &str, token: Token) -> ResolverReturn;
}

/// Runs `resolver` synchronously for the pure `server_request_response` (c-api.md): only an
/// answer given before it returns counts; `TN_DEFERRED`, a failure code or no answer is cancel.
pub fn resolve_now(
    resolver: &dyn Resolver,
    request: &crate::mapping::elicitation::Request,
) -> Option<Answer> {
    let slot: Arc<Mutex<Option<Finish>>> = Arc::new(Mutex::new(None));
    let s = slot.clone();
    let token = open(0, request.id.clone(), move |f| *lock(&s) = Some(f));
    let rc = resolver.call(&request.json, token);
    let why = match rc {
        ResolverReturn::Resolved => {
            "the resolver returned TN_RESOLVED without answering".to_string()
        }
        ResolverReturn::Deferred => "TN_DEFERRED is a failure in the pure function".to_string(),
        ResolverReturn::Suspend => "TN_SUSPEND is cancel in the pure function".to_string(),
        ResolverReturn::Failed(code) => format!("the resolver failed with code {code}"),
    };
    cancel(token, why);
    let outcome = lock(&slot).take();
    match outcome {
        Some(Finish::Answer(a)) => Some(a),
        _ => None,
    }
}
