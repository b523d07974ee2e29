//! Authorization for remote servers (contract §8, MCP 2025-11-25 authorization, OAuth 2.1),
//! beside the HTTP transport and used by both eras. The transport's whole surface is small:
//! [`Auth::bearer`] on each request, [`Auth::before_send`] (load the store, refresh when due),
//! and [`Auth::on_denied`] when the server answers 401 or 403, which says whether to send the
//! request again.
//!
//! - [`spec`]: the `auth` config keys.
//! - [`flow`]: discovery, registration, token requests, client assertions.
//! - [`login`]: the browser step through the host's resolver, and the loopback listener.
//! - [`store`]: `auth.store`, the token file.
//!
//! No token, code, verifier or secret is ever put in a message: every value obtained is added to
//! this server's masks, and server text is quoted only masked ([`Auth::mask`]).

mod flow;
mod login;
pub(crate) mod spec;
mod store;

use crate::conn::{lock, Conn};
use flow::{Challenge, ClientId, Discovery, TokenError, Tokens};
use reqwest::header::HeaderValue;
use spec::{AuthSpec, Grant};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use url::Url;

/// Step-ups (403 `insufficient_scope`) at most per request (§8).
const MAX_STEP_UPS: u32 = 2;
/// 401s handled at most per request (a refresh, then a login, then give up).
const MAX_UNAUTHORIZED: u32 = 3;

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
}

/// What the current token was obtained with.
#[derive(Clone)]
struct Ctx {
    resource: String,
    issuer: String,
    token_endpoint: String,
    client: ClientId,
}

#[derive(Default)]
struct State {
    tokens: Option<Tokens>,
    ctx: Option<Ctx>,
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
    conn: Weak<Conn>,
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
        Ok(u) => crate::transport::http::redact(&u),
        Err(_) => "(not a URL)".into(),
    }
}

/// Pauses the asking request's timer while authorization runs (a login waits for a person).
struct Paused(Option<Arc<crate::clock::PauseClock>>);

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.end();
        }
    }
}

impl Auth {
    pub(crate) fn new(
        server: &str,
        url: &Url,
        spec: &AuthSpec,
        http: reqwest::Client,
        timeout: Duration,
        conn: &Arc<Conn>,
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
            conn: Arc::downgrade(conn),
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
                out = out.replace(v.as_str(), crate::secrets::MASK);
            }
        }
        out
    }

    fn quote(&self, text: &str) -> String {
        crate::transport::http::cut(&self.mask(text.trim()), 200)
    }

    /// The `Authorization` header for the next request, and the token generation it carries.
    pub(crate) fn bearer(&self) -> (u64, Option<HeaderValue>) {
        let st = lock(&self.state);
        let v = st.tokens.as_ref().and_then(|t| {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", t.access_token)).ok()?;
            v.set_sensitive(true);
            Some(v)
        });
        (st.generation, v)
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
            s.put(&store::Entry {
                resource: ctx.resource,
                issuer: ctx.issuer,
                token_endpoint: ctx.token_endpoint,
                client: ctx.client,
                tokens,
            })?;
        }
        Ok(())
    }

    /// Before a request: the stored token on first use, and a refresh when one is due (§8).
    pub(crate) async fn before_send(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        let (load, due) = {
            let st = lock(&self.state);
            (
                !st.store_loaded && self.store.is_some(),
                st.tokens
                    .as_ref()
                    .is_some_and(|t| t.refresh_due() && t.refresh_token.is_some()),
            )
        };
        if !load && !due {
            return Ok(());
        }
        let _one = self.flow.lock().await;
        if load {
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
            let mut st = lock(&self.state);
            st.tokens = Some(e.tokens);
            st.ctx = Some(Ctx {
                resource: e.resource,
                issuer: e.issuer,
                token_endpoint: e.token_endpoint,
                client: e.client,
            });
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
                    let mut st = lock(&self.state);
                    st.tokens = Some(e.tokens);
                    st.generation += 1;
                    return Ok(());
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
        let mut new = self
            .token_request(&ctx.token_endpoint, params, &ctx.client, &ctx.issuer)
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
    /// per request. `carrier` is the request's id: its timer pauses meanwhile.
    pub(crate) async fn on_denied(
        &self,
        status: u16,
        www_authenticate: Option<String>,
        sent: u64,
        rounds: &mut Rounds,
        carrier: Option<u64>,
    ) -> Denied {
        if !self.enabled {
            return Denied::Pass;
        }
        let challenge = flow::parse_challenge(www_authenticate.as_deref().unwrap_or(""));
        if status == 403 && challenge.error.as_deref() != Some("insufficient_scope") {
            return Denied::Pass;
        }
        let _paused = Paused(self.conn.upgrade().map(|c| {
            let clock = c.clock_for(carrier);
            clock.begin();
            clock
        }));
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
        } else if self.spec.grant == Grant::ClientCredentials {
            self.client_credentials(&d, scope.as_deref()).await?
        } else {
            self.authorization_code(&d, scope.as_deref()).await?
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

    async fn client_credentials(
        &self,
        d: &Discovery,
        scope: Option<&str>,
    ) -> Result<(Tokens, ClientId), String> {
        let mut client = self
            .configured_client(d)
            .ok_or("`auth.grant` \"client_credentials\" needs `auth.clientId`")?;
        if client.method == "none" {
            client.method = "client_secret_basic".into();
        }
        let mut params = vec![("grant_type", "client_credentials".to_string())];
        if let Some(s) = scope {
            params.push(("scope", s.to_string()));
        }
        params.push(("resource", d.resource.clone()));
        let t = self
            .token_request(&d.token, params, &client, &d.issuer)
            .await
            .map_err(|e| format!("the client_credentials grant was refused: {}", e.text()))?;
        Ok((t, client))
    }

    /// Cross-app access (SEP-990): the ID token is exchanged at the IdP for an ID-JAG (RFC
    /// 8693), and the ID-JAG for an access token with the `jwt-bearer` grant (RFC 7523).
    async fn cross_app(
        &self,
        d: &Discovery,
        scope: Option<&str>,
    ) -> Result<(Tokens, ClientId), String> {
        let idp = self.spec.idp.clone().ok_or("no `auth.idp`")?;
        let id_token = match (&idp.id_token, &idp.id_token_file) {
            (Some(t), _) => t.clone(),
            (None, Some(f)) => std::fs::read_to_string(f)
                .map_err(|e| format!("`auth.idp.idTokenFile` ({f}) cannot be read: {e}"))?
                .trim()
                .to_string(),
            (None, None) => return Err("`auth.idp` needs `idToken` or `idTokenFile`".into()),
        };
        self.add_mask(&id_token);
        let idp_token_endpoint = match &idp.token_endpoint {
            Some(t) => t.clone(),
            None => {
                let issuer = Url::parse(&idp.issuer)
                    .map_err(|e| format!("`auth.idp.issuer` is not a URL: {e}"))?;
                let mut found = None;
                for u in flow::as_urls(&issuer) {
                    if let Some(m) = self.get_json(&u).await {
                        if let Some(t) = m.get("token_endpoint").and_then(|v| v.as_str()) {
                            found = Some(t.to_string());
                            break;
                        }
                    }
                }
                found.ok_or_else(|| {
                    format!(
                        "the IdP {} publishes no token_endpoint (set `auth.idp.tokenEndpoint`)",
                        idp.issuer
                    )
                })?
            }
        };
        let idp_client = ClientId {
            id: idp.client_id.clone(),
            secret: idp.client_secret.clone(),
            method: if idp.client_secret.is_some() {
                "client_secret_basic".into()
            } else {
                "none".into()
            },
            redirect_uri: None,
        };
        let mut params = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_string(),
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag".into(),
            ),
            ("audience", d.issuer.clone()),
            ("resource", d.resource.clone()),
            ("subject_token", id_token),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".into(),
            ),
        ];
        if let Some(s) = scope {
            params.push(("scope", s.to_string()));
        }
        let jag = self
            .token_request(&idp_token_endpoint, params, &idp_client, &idp.issuer)
            .await
            .map_err(|e| format!("the IdP's token exchange was refused: {}", e.text()))?;
        let client = self
            .configured_client(d)
            .ok_or("cross-app access needs `auth.clientId`")?;
        let mut params = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:jwt-bearer".to_string(),
            ),
            ("assertion", jag.access_token),
            ("resource", d.resource.clone()),
        ];
        if let Some(s) = scope {
            params.push(("scope", s.to_string()));
        }
        let t = self
            .token_request(&d.token, params, &client, &d.issuer)
            .await
            .map_err(|e| format!("the jwt-bearer grant was refused: {}", e.text()))?;
        Ok((t, client))
    }

    /// The authorization-code flow with PKCE (§8), the browser step the resolver's.
    async fn authorization_code(
        &self,
        d: &Discovery,
        scope: Option<&str>,
    ) -> Result<(Tokens, ClientId), String> {
        let conn = self.conn.upgrade().ok_or("the connection is closed")?;
        let Some(live) = conn.live() else {
            return Err("the server needs a login (OAuth) and no resolver is registered to open the login page; register a resolver, or configure `auth` with a client_credentials grant".into());
        };
        // The redirect: the host's, or our loopback listener, bound before registration (a
        // stored registration's port again when it can be).
        let previous = {
            let st = lock(&self.state);
            st.ctx
                .as_ref()
                .filter(|c| c.issuer == d.issuer && c.client.redirect_uri.is_some())
                .map(|c| c.client.clone())
        };
        let mut loopback = None;
        let redirect_uri = match &self.spec.redirect_uri {
            Some(r) => r.clone(),
            None => {
                let wanted = previous
                    .as_ref()
                    .and_then(|c| c.redirect_uri.as_deref())
                    .and_then(|r| Url::parse(r).ok())
                    .and_then(|u| u.port());
                let l = wanted
                    .and_then(|p| login::Loopback::bind(p).ok())
                    .map(Ok)
                    .unwrap_or_else(|| login::Loopback::bind(0))
                    .map_err(|e| {
                        format!("cannot listen on 127.0.0.1 for the login redirect: {e}")
                    })?;
                let r = l.redirect_uri();
                loopback = Some(l);
                r
            }
        };
        let client = if let Some(c) = self.configured_client(d) {
            c
        } else if let (true, Some(u)) = (d.cimd_supported(), &self.spec.client_metadata_url) {
            ClientId {
                id: u.clone(),
                secret: None,
                method: "none".into(),
                redirect_uri: None,
            }
        } else if let Some(c) =
            previous.filter(|c| c.redirect_uri.as_deref() == Some(redirect_uri.as_str()))
        {
            c
        } else if let Some(reg) = &d.register {
            self.register(reg, Some(&redirect_uri), "authorization_code", d)
                .await?
        } else {
            return Err(format!(
                "the authorization server {} offers no dynamic client registration and no client is configured: set `auth.clientId` (and `auth.clientSecret`), or `auth.clientMetadataUrl` where the server supports client metadata documents",
                d.issuer
            ));
        };
        let (challenge, verifier) = oauth2::PkceCodeChallenge::new_random_sha256();
        self.add_mask(verifier.secret());
        let state = oauth2::CsrfToken::new_random();
        let mut url = Url::parse(&d.authorize).map_err(|e| {
            format!(
                "the authorization endpoint {} is not a URL: {e}",
                d.authorize
            )
        })?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client.id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", challenge.as_str())
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", state.secret());
            if let Some(s) = scope {
                q.append_pair("scope", s);
            }
            q.append_pair("resource", &d.resource);
        }
        let query =
            match login::browser_step(live, &self.server, url.as_str(), loopback.as_mut()).await {
                login::Outcome::Redirect(q) => q,
                login::Outcome::Failed(m) => return Err(m),
            };
        drop(loopback);
        let mut code = None;
        let mut got_state = None;
        let mut iss = None;
        let mut error = None;
        let mut error_description = None;
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "code" => code = Some(v.into_owned()),
                "state" => got_state = Some(v.into_owned()),
                "iss" => iss = Some(v.into_owned()),
                "error" => error = Some(v.into_owned()),
                "error_description" => error_description = Some(v.into_owned()),
                _ => {}
            }
        }
        if let Some(c) = &code {
            self.add_mask(c);
        }
        if let Some(e) = error {
            return Err(format!(
                "the authorization server refused the login: {}{}",
                self.quote(&e),
                error_description
                    .map(|d| format!(" ({})", self.quote(&d)))
                    .unwrap_or_default()
            ));
        }
        if got_state.as_deref() != Some(state.secret().as_str()) {
            return Err("the login redirect's `state` does not match the request (a forged or stale redirect); refused".into());
        }
        match iss {
            Some(i) if i != d.issuer => {
                return Err(format!(
                    "the login redirect's `iss` ({}) is not the authorization server's issuer ({}); refused (RFC 9207)",
                    self.quote(&i),
                    d.issuer
                ))
            }
            None if d.iss_required() => {
                return Err(format!(
                    "the authorization server {} promises an `iss` in the login redirect and sent none; refused (RFC 9207)",
                    d.issuer
                ))
            }
            _ => {}
        }
        let code = code.ok_or("the login redirect carries no `code`")?;
        let params = vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", code),
            ("redirect_uri", redirect_uri.clone()),
            ("code_verifier", verifier.secret().clone()),
            ("resource", d.resource.clone()),
        ];
        let t = self
            .token_request(&d.token, params, &client, &d.issuer)
            .await
            .map_err(|e| format!("the token request was refused: {}", e.text()))?;
        let mut client = client;
        if client.redirect_uri.is_none() && self.spec.client_id.is_none() {
            client.redirect_uri = Some(redirect_uri);
        }
        Ok((t, client))
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
