//! Authorization for remote servers (contract §8, MCP 2025-11-25 authorization, OAuth 2.1),
//! beside the HTTP transport and used by both eras. The transport's whole surface is small:
//! [`Auth::authorization`] for the headers of each request (given its method and URL: a DPoP
//! proof names both), [`Auth::generation`] to say which token a request carried,
//! [`Auth::before_send`] (load the store, refresh when due), and [`Auth::on_denied`] when the
//! server answers 401 or 403, which says whether to send the request again.
//!
//! - [`flow`]: discovery results, tokens, challenges, the well-known URLs.
//! - [`endpoints`]: discovery, registration, token requests, client assertions.
//! - [`grants`]: the grants (authorization code, client credentials, JWT bearer, cross-app).
//! - [`dpop`]: DPoP keys and proofs (RFC 9449).
//! - [`login`]: the browser step through the host's resolver, and the loopback listener.
//! - [`store`]: `auth.store`, the token file.
//!
//! No token, code, verifier or secret is ever put in a message: every value obtained is added to
//! this server's masks, and server text is quoted only masked ([`Auth::mask`]).

mod dpop;
mod endpoints;
mod flow;
#[cfg(test)]
mod flow_tests;
mod grants;
mod login;
mod store;

use crate::config::auth::{AuthSpec, Grant};
use crate::util::lock;
use dpop::DpopKey;
use flow::{Challenge, ClientId, Discovery, TokenError, Tokens};
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use url::Url;

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
pub(crate) struct Rounds {
    step_ups: u32,
    unauthorized: u32,
    nonces: u32,
}

/// What the current token was obtained with.
#[derive(Clone)]
struct Ctx {
    resource: String,
    issuer: String,
    token_endpoint: String,
    client: ClientId,
    /// The token requests carried DPoP proofs (a refresh carries one too, RFC 9449 §5).
    dpop: bool,
}

#[derive(Default)]
struct State {
    tokens: Option<Tokens>,
    ctx: Option<Ctx>,
    /// The server's DPoP key (RFC 9449): made when an authorization server first offers DPoP,
    /// or read back from `auth.store` with the tokens bound to it; kept for the connection.
    dpop: Option<Arc<DpopKey>>,
    /// The MCP server's DPoP nonce (RFC 9449 §9), and the authorization servers' by token
    /// endpoint (§8): each proof to them carries the latest.
    rs_nonce: Option<String>,
    as_nonces: HashMap<String, String>,
    /// Bumped whenever the token changes: a request denied with an older token is simply sent
    /// again.
    generation: u64,
    store_loaded: bool,
    from_store: bool,
}

/// One remote server's authorization state.
pub(crate) struct Auth {
    server: String,
    url: Url,
    spec: AuthSpec,
    http: reqwest::Client,
    timeout: Duration,
    /// The host's side: the browser step, the asking request's paused timer.
    host: Arc<dyn LoginHost>,
    /// False when the config sets an `Authorization` header itself.
    enabled: bool,
    state: Mutex<State>,
    /// One discovery/login/refresh at a time.
    flow: tokio::sync::Mutex<()>,
    masks: Mutex<Vec<String>>,
    store: Option<store::Store>,
}

/// A URL without userinfo or query, for messages.
pub(crate) fn redact_str(u: &str) -> String {
    match Url::parse(u) {
        Ok(u) => crate::util::redact(&u),
        Err(_) => "(not a URL)".into(),
    }
}

/// The host's side of a login (contract §8; issue 24: auth reaches the host through this
/// trait, not through the connection or the resolver plumbing). [`crate::host::login`]
/// implements it.
pub(crate) trait LoginHost: Send + Sync {
    /// Hands `request_json` (a `kind:"authorization"` §10 Request whose id is `id`) to the
    /// host's resolver on a thread of its own (it may block); `done` learns, once, how the
    /// responder ended. The responder, to cancel; None when no resolver is registered.
    fn ask(
        &self,
        id: String,
        request_json: String,
        done: Box<dyn FnOnce(crate::responder::Finish) + Send>,
    ) -> Option<crate::responder::Token>;
    /// How long a login waits for the person (`elicitationTimeout`); None when no resolver is
    /// registered.
    fn patience(&self) -> Option<Duration>;
    /// Pauses the timer of request `carrier` (else the connection's) while authorization runs:
    /// a login waits for a person. It runs on when the returned guard drops.
    fn pause(&self, carrier: Option<u64>) -> Box<dyn Send>;
}

impl Auth {
    pub(crate) fn new(
        server: &str,
        url: &Url,
        spec: &AuthSpec,
        http: reqwest::Client,
        timeout: Duration,
        host: Arc<dyn LoginHost>,
        headers: &[(String, String)],
    ) -> Arc<Auth> {
        let enabled = !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        let a = Auth {
            server: server.to_string(),
            url: url.clone(),
            spec: spec.clone(),
            http,
            timeout,
            host,
            enabled,
            state: Mutex::new(State::default()),
            flow: tokio::sync::Mutex::new(()),
            masks: Mutex::new(Vec::new()),
            store: spec.store.as_deref().map(store::Store::new),
        };
        for s in spec.secrets() {
            a.add_mask(&s);
        }
        Arc::new(a)
    }

    fn add_mask(&self, s: &str) {
        if s.len() < 4 {
            return; // masking a tiny value would mangle ordinary text; none of ours is this short
        }
        let mut m = lock(&self.masks);
        if !m.iter().any(|x| x == s) {
            m.push(s.to_string());
            m.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// `text` with every token, code, verifier and secret this server has seen masked.
    pub(crate) fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for v in lock(&self.masks).iter() {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), crate::util::secrets::MASK);
            }
        }
        out
    }

    fn quote(&self, text: &str) -> String {
        crate::util::cut(&self.mask(text.trim()), 200)
    }

    /// A `DPoP-Nonce` header on any response of the MCP server (RFC 9449 §8.2: the server may
    /// hand out a fresh nonce with a success): the next proof carries it, so the request after
    /// does not take a `use_dpop_nonce` round first. Only while the token is DPoP-bound.
    pub(crate) fn note_nonce(&self, nonce: Option<&str>) {
        let Some(n) = nonce.map(str::trim).filter(|n| !n.is_empty()) else {
            return;
        };
        let mut st = lock(&self.state);
        if st.tokens.as_ref().is_some_and(Tokens::is_dpop) && st.rs_nonce.as_deref() != Some(n) {
            st.rs_nonce = Some(n.to_string());
        }
    }

    /// The token generation the next request carries (give it back to [`Auth::on_denied`]).
    pub(crate) fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// The authorization headers of one request to the MCP server (§8): none before a token;
    /// `Authorization: Bearer <token>`; or, for a DPoP-bound token, `Authorization: DPoP
    /// <token>` and a `DPoP` proof made for this `method` and `url` (its query and fragment
    /// left out), carrying the server's latest nonce (RFC 9449 §7.1). Each call makes a new
    /// proof: call it once per request sent.
    pub(crate) fn authorization(&self, method: &str, url: &Url) -> Vec<(HeaderName, HeaderValue)> {
        let (token, key, nonce) = {
            let st = lock(&self.state);
            let Some(t) = &st.tokens else {
                return Vec::new();
            };
            let key = if t.is_dpop() { st.dpop.clone() } else { None };
            (t.access_token.clone(), key, st.rs_nonce.clone())
        };
        let sensitive = |s: String| {
            let mut v = HeaderValue::from_str(&s).ok()?;
            v.set_sensitive(true);
            Some(v)
        };
        match key {
            Some(k) => {
                let proof = k.proof(method, url, nonce.as_deref(), Some(&token));
                match (sensitive(format!("DPoP {token}")), sensitive(proof)) {
                    (Some(a), Some(p)) => {
                        vec![(AUTHORIZATION, a), (HeaderName::from_static("dpop"), p)]
                    }
                    _ => Vec::new(),
                }
            }
            None => sensitive(format!("Bearer {token}"))
                .map(|v| vec![(AUTHORIZATION, v)])
                .unwrap_or_default(),
        }
    }

    /// The DPoP key for token requests to the authorization server `d` found: None when it
    /// offers no DPoP; else the server's key, made now if there is none yet.
    fn dpop_for(&self, d: &Discovery) -> Option<Arc<DpopKey>> {
        if !d.dpop() {
            return None;
        }
        let mut st = lock(&self.state);
        Some(
            st.dpop
                .get_or_insert_with(|| Arc::new(DpopKey::generate()))
                .clone(),
        )
    }

    fn set_tokens(&self, tokens: Tokens, ctx: Ctx) -> Result<(), String> {
        self.add_mask(&tokens.access_token);
        if let Some(r) = &tokens.refresh_token {
            self.add_mask(r);
        }
        {
            let mut st = lock(&self.state);
            st.tokens = Some(tokens.clone());
            st.ctx = Some(ctx.clone());
            st.generation += 1;
        }
        if let Some(s) = &self.store {
            // A DPoP-bound token (and its refresh token, RFC 9449 §5) is of no use without the
            // key: the key is kept beside them.
            let dpop_key = if ctx.dpop {
                lock(&self.state).dpop.as_ref().map(|k| k.secret())
            } else {
                None
            };
            s.put(&store::Entry {
                resource: ctx.resource,
                issuer: ctx.issuer,
                token_endpoint: ctx.token_endpoint,
                client: ctx.client,
                tokens,
                dpop_key,
            })?;
        }
        Ok(())
    }

    /// Whether the next request first needs [`Auth::before_send`]: the store is not read yet,
    /// or a refresh is due (§8).
    pub(crate) fn flow_due(&self) -> bool {
        if !self.enabled {
            return false;
        }
        let st = lock(&self.state);
        (!st.store_loaded && self.store.is_some())
            || st
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_due() && t.refresh_token.is_some())
    }

    /// Before a request: the stored token on first use, and a refresh when one is due (§8).
    pub(crate) async fn before_send(&self) -> Result<(), String> {
        if !self.flow_due() {
            return Ok(());
        }
        let load = !lock(&self.state).store_loaded && self.store.is_some();
        let _one = self.flow.lock().await;
        if load && !lock(&self.state).store_loaded {
            self.load_store()?;
        }
        let due = lock(&self.state)
            .tokens
            .as_ref()
            .is_some_and(|t| t.refresh_due() && t.refresh_token.is_some());
        if due {
            // A failed refresh here is not fatal: the server's 401 starts a login.
            let _ = self.refresh().await;
        }
        Ok(())
    }

    fn load_store(&self) -> Result<(), String> {
        let Some(s) = &self.store else { return Ok(()) };
        lock(&self.state).store_loaded = true;
        if let Some(e) = s.find(&self.url, self.spec.client_id.as_deref())? {
            self.add_mask(&e.tokens.access_token);
            if let Some(r) = &e.tokens.refresh_token {
                self.add_mask(r);
            }
            if let Some(sec) = &e.client.secret {
                self.add_mask(sec);
            }
            let key = match &e.dpop_key {
                Some(k) => {
                    self.add_mask(k);
                    Some(Arc::new(DpopKey::from_secret(k).map_err(|m| {
                        format!("{m} ({}); delete that file to log in again", s.path())
                    })?))
                }
                None => None,
            };
            let mut st = lock(&self.state);
            st.tokens = Some(e.tokens);
            st.ctx = Some(Ctx {
                resource: e.resource,
                issuer: e.issuer,
                token_endpoint: e.token_endpoint,
                client: e.client,
                dpop: key.is_some(),
            });
            if key.is_some() {
                st.dpop = key;
            }
            st.generation += 1;
            st.from_store = true;
        }
        Ok(())
    }

    /// Refreshes the token (§8), after reading the store again: another process may have
    /// rotated it already.
    async fn refresh(&self) -> Result<(), TokenError> {
        let (tokens, ctx) = {
            let st = lock(&self.state);
            match (&st.tokens, &st.ctx) {
                (Some(t), Some(c)) => (t.clone(), c.clone()),
                _ => return Err(TokenError::Failed("no token to refresh".into())),
            }
        };
        if let Some(s) = &self.store {
            if let Ok(Some(e)) = s.find(&self.url, Some(&ctx.client.id)) {
                if e.tokens.access_token != tokens.access_token && !e.tokens.refresh_due() {
                    self.add_mask(&e.tokens.access_token);
                    if let Some(r) = &e.tokens.refresh_token {
                        self.add_mask(r);
                    }
                    // Bound to the key kept with them (the other process's, after a login).
                    let key = match &e.dpop_key {
                        Some(k) => {
                            self.add_mask(k);
                            DpopKey::from_secret(k).ok().map(Arc::new)
                        }
                        None => None,
                    };
                    if e.dpop_key.is_none() || key.is_some() {
                        let mut st = lock(&self.state);
                        st.tokens = Some(e.tokens);
                        if key.is_some() {
                            st.dpop = key;
                        }
                        st.generation += 1;
                        return Ok(());
                    }
                }
            }
        }
        let Some(refresh) = tokens.refresh_token.clone() else {
            return Err(TokenError::Failed("the token has no refresh token".into()));
        };
        let params = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", refresh.clone()),
            ("resource", ctx.resource.clone()),
        ];
        let key = if ctx.dpop {
            lock(&self.state).dpop.clone()
        } else {
            None
        };
        let mut new = self
            .token_request(
                &ctx.token_endpoint,
                params,
                &ctx.client,
                &ctx.issuer,
                key.as_deref(),
            )
            .await?;
        if new.refresh_token.is_none() {
            new.refresh_token = Some(refresh);
        }
        if new.scope.is_none() {
            new.scope = tokens.scope;
        }
        self.set_tokens(new, ctx).map_err(TokenError::Failed)
    }

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
        rounds: &mut Rounds,
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

    /// A new token by the configured grant.
    async fn obtain(&self, challenge: &Challenge, scope: Option<String>) -> Result<(), String> {
        let d = self.discover(challenge).await?;
        let scope = pick_scope(scope, &d);
        let (tokens, client) = if self.spec.idp.is_some() {
            self.cross_app(&d, scope.as_deref()).await?
        } else {
            match self.spec.grant {
                Grant::ClientCredentials => self.client_credentials(&d, scope.as_deref()).await?,
                // No browser and, when it fails, no other grant (SEP-1933).
                Grant::JwtBearer => self.jwt_bearer(&d, scope.as_deref()).await?,
                Grant::AuthorizationCode => self.authorization_code(&d, scope.as_deref()).await?,
            }
        };
        let mut tokens = tokens;
        if tokens.scope.is_none() {
            tokens.scope = scope;
        }
        self.set_tokens(
            tokens,
            Ctx {
                resource: d.resource.clone(),
                issuer: d.issuer.clone(),
                token_endpoint: d.token.clone(),
                client,
                dpop: d.dpop(),
            },
        )
    }

    /// The configured client (with its secret or private key), if any.
    fn configured_client(&self, d: &Discovery) -> Option<ClientId> {
        let id = self.spec.client_id.clone()?;
        let method = if self.spec.private_key_file.is_some() {
            "private_key_jwt".to_string()
        } else {
            flow::secret_method(self.spec.client_secret.is_some(), &d.auth_methods())
        };
        Some(ClientId {
            id,
            secret: self.spec.client_secret.clone(),
            method,
            redirect_uri: None,
        })
    }
}

/// The scope to ask for (§8): the one given (challenge, step-up or config), else the
/// protected-resource metadata's `scopes_supported`; `offline_access` added when the
/// authorization server lists it (a refresh token).
fn pick_scope(given: Option<String>, d: &Discovery) -> Option<String> {
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
