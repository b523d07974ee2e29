//! Authorization for remote servers (contract §8, MCP 2025-11-25 authorization, OAuth 2.1),
//! beside the HTTP transport and used by both eras. The transport's whole surface is small:
//! [`Auth::authorization`] for the headers of each request (given its method and URL: a DPoP
//! proof names both), [`Auth::generation`] to say which token a request carried,
//! [`Auth::before_send`] (load the store, refresh when due), and [`Auth::on_denied`] when the
//! server answers 401 or 403, which says whether to send the request again.
//!
//! - [`tokens`]: the token state: tokens taken in and masked, the store read, refresh, a new
//!   token by the configured grant.
//! - [`denied`]: the 401/403 policy (refresh, login, step-up, DPoP nonce) and its bounds.
//! - [`flow`]: discovery results, tokens, challenges, the well-known URLs.
//! - [`endpoints`]: discovery, registration, token requests, client assertions.
//! - [`grants`]: the grants (authorization code, client credentials, JWT bearer, cross-app).
//! - [`dpop`]: DPoP keys and proofs (RFC 9449).
//! - [`login`]: the browser step through the host's resolver, and the loopback listener.
//! - [`store`]: `auth.store`, the token file.
//!
//! No token, code, verifier or secret is ever put in a message: every value obtained is added to
//! this server's masks, and server text is quoted only masked ([`Auth::mask`]).

mod denied;
mod dpop;
mod endpoints;
mod flow;
#[cfg(test)]
mod flow_tests;
mod grants;
mod login;
mod store;
mod tokens;

pub(crate) use denied::{Denied, Refusals};

use crate::config::auth::AuthSpec;
use crate::util::lock;
use dpop::DpopKey;
use flow::{ClientId, Discovery, Tokens};
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use url::Url;

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
    masks: Mutex<crate::util::secrets::Secrets>,
    store: Option<store::Store>,
}

/// A URL without userinfo or query, for messages.
pub(crate) fn redact_str(u: &str) -> String {
    match Url::parse(u) {
        Ok(u) => crate::util::redact(&u),
        Err(_) => "(not a URL)".into(),
    }
}

/// The host's side of a login (contract §8: auth reaches the host through this
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
            masks: Mutex::default(),
            store: spec.store.as_deref().map(store::Store::new),
        };
        for s in spec.secrets() {
            a.add_mask(&s);
        }
        Arc::new(a)
    }

    fn add_mask(&self, s: &str) {
        lock(&self.masks).add(s);
    }

    /// `text` with every token, code, verifier and secret this server has seen masked (the one
    /// masking of §9, [`crate::util::secrets::Secrets`]).
    pub(crate) fn mask(&self, text: &str) -> String {
        lock(&self.masks).mask(text)
    }

    fn quote(&self, text: &str) -> String {
        crate::util::quoted(&self.mask(text.trim()))
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
}
