//! The 401 and 403 policy of contract §8: what a refusal of the MCP server means (a refresh,
//! a login, a step-up to more scope, a DPoP nonce), how often each may happen per request, and
//! which scope to ask for.

use super::flow::{self, Discovery, TokenError, Tokens};
use super::Auth;
use crate::util::lock;

/// Step-ups (403 `insufficient_scope`) at most per request (§8).
const MAX_STEP_UPS: u32 = 2;
/// 401s handled at most per request (a refresh, then a login, then give up).
const MAX_UNAUTHORIZED: u32 = 3;
/// New DPoP nonces taken at most per request from the MCP server (RFC 9449 §9); they do not
/// count as the 401s above.
const MAX_NONCES: u32 = 2;

/// What the transport does after a 401/403.
pub(crate) enum Denied {
    /// A new token is in place: send the request again.
    Retry,
    /// Authorization failed: the request (and, at connect, the server) fails in phase `auth`.
    Fail(String),
    /// Not an authorization matter (a 403 without `insufficient_scope`, or auth is off).
    Pass,
}

/// Per-request bookkeeping of [`Auth::on_denied`].
#[derive(Default)]
pub(crate) struct Refusals {
    step_ups: u32,
    unauthorized: u32,
    nonces: u32,
}

impl Auth {
    /// After a 401 or 403 to a request sent with token generation `sent`: refresh, log in or
    /// step up, as §8 says, at most [`MAX_STEP_UPS`] step-ups and [`MAX_UNAUTHORIZED`] 401s
    /// per request; a DPoP server's `use_dpop_nonce` with its `DPoP-Nonce` header (`dpop_nonce`)
    /// only takes the nonce, at most [`MAX_NONCES`] times per request (RFC 9449 §9). `carrier`
    /// is the request's id: its timer pauses meanwhile.
    pub(crate) async fn on_denied(
        &self,
        status: u16,
        www_authenticate: Option<String>,
        dpop_nonce: Option<String>,
        sent: u64,
        rounds: &mut Refusals,
        carrier: Option<u64>,
    ) -> Denied {
        if !self.enabled {
            return Denied::Pass;
        }
        let challenge = flow::parse_challenge(www_authenticate.as_deref().unwrap_or(""));
        if status == 401 && challenge.error.as_deref() == Some("use_dpop_nonce") {
            let nonce = dpop_nonce.filter(|n| !n.trim().is_empty());
            let bound = lock(&self.state)
                .tokens
                .as_ref()
                .is_some_and(Tokens::is_dpop);
            if let (Some(n), true) = (nonce, bound) {
                rounds.nonces += 1;
                if rounds.nonces > MAX_NONCES {
                    return Denied::Fail(format!(
                        "the server still asks for a new DPoP nonce after {MAX_NONCES} (RFC 9449 §9)"
                    ));
                }
                lock(&self.state).rs_nonce = Some(n.trim().to_string());
                return Denied::Retry;
            }
        }
        if status == 403 && challenge.error.as_deref() != Some("insufficient_scope") {
            return Denied::Pass;
        }
        let _paused = self.host.pause(carrier);
        let _one = self.flow.lock().await;
        if lock(&self.state).generation != sent {
            return Denied::Retry; // another request already got a new token
        }
        let current_scope = {
            let st = lock(&self.state);
            st.tokens.as_ref().and_then(|t| t.scope.clone())
        };
        let scope = if status == 403 {
            if rounds.step_ups >= MAX_STEP_UPS {
                return Denied::Fail(format!(
                    "the server still answers 403 insufficient_scope{} after {MAX_STEP_UPS} step-ups",
                    challenge
                        .scope
                        .as_deref()
                        .map(|s| format!(" (scope \"{s}\")"))
                        .unwrap_or_default()
                ));
            }
            rounds.step_ups += 1;
            Some(union(current_scope.as_deref(), challenge.scope.as_deref()))
        } else {
            rounds.unauthorized += 1;
            if rounds.unauthorized > MAX_UNAUTHORIZED {
                return Denied::Fail(
                    "the server keeps answering 401 Unauthorized to the new access token".into(),
                );
            }
            let can_refresh = {
                let st = lock(&self.state);
                st.ctx.is_some()
                    && st
                        .tokens
                        .as_ref()
                        .is_some_and(|t| t.refresh_token.is_some())
            };
            if can_refresh && rounds.unauthorized == 1 {
                match self.refresh().await {
                    Ok(()) => return Denied::Retry,
                    Err(TokenError::Refused { .. }) => {} // the refresh token is dead: log in
                    Err(TokenError::Failed(m)) => {
                        let from_store = lock(&self.state).from_store;
                        return Denied::Fail(match (&self.store, from_store) {
                            (Some(s), true) => format!(
                                "refreshing the token kept in `auth.store` ({}) failed: {m}; delete that file to log in again",
                                s.path()
                            ),
                            _ => format!("refreshing the access token failed: {m}"),
                        });
                    }
                }
            }
            challenge.scope.clone().or_else(|| self.spec.scope.clone())
        };
        match self.obtain(&challenge, scope).await {
            Ok(()) => Denied::Retry,
            Err(m) => Denied::Fail(self.mask(&m)),
        }
    }
}

/// The scope to ask for (§8): the one given (challenge, step-up or config), else the
/// protected-resource metadata's `scopes_supported`; `offline_access` added when the
/// authorization server lists it (a refresh token).
pub(super) fn pick_scope(given: Option<String>, d: &Discovery) -> Option<String> {
    let base = given
        .filter(|s| !s.trim().is_empty())
        .or_else(|| d.prm_scopes.clone())?;
    let as_scopes = d.as_scopes();
    if as_scopes.iter().any(|s| s == "offline_access")
        && !base.split(' ').any(|s| s == "offline_access")
    {
        return Some(format!("{base} offline_access"));
    }
    Some(base)
}

/// The scopes of `a` and then those of `b` not already in it.
fn union(a: Option<&str>, b: Option<&str>) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in a.unwrap_or("").split(' ').chain(b.unwrap_or("").split(' ')) {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes() {
        assert_eq!(union(Some("a b"), Some("b c")), "a b c");
        assert_eq!(union(None, Some("x")), "x");
        let d = Discovery {
            resource: "r".into(),
            prm_scopes: Some("p1 p2".into()),
            issuer: "i".into(),
            meta: serde_json::from_str(r#"{"scopes_supported":["p1","offline_access"]}"#).unwrap(),
            authorize: "a".into(),
            token: "t".into(),
            register: None,
        };
        assert_eq!(
            pick_scope(None, &d).as_deref(),
            Some("p1 p2 offline_access")
        );
        assert_eq!(
            pick_scope(Some("x".into()), &d).as_deref(),
            Some("x offline_access")
        );
        let d = Discovery {
            prm_scopes: None,
            meta: Default::default(),
            ..d
        };
        assert_eq!(pick_scope(None, &d), None);
    }
}
