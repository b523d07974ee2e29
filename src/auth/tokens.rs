//! The token state of one server (contract §8): tokens taken in and masked, the token store
//! read on first use, a refresh when due (after reading the store again), and a new token by
//! the configured grant.

use super::denied::pick_scope;
use super::dpop::DpopKey;
use super::flow::{self, Challenge, ClientId, Discovery, TokenError, Tokens};
use super::{store, Auth, Ctx};
use crate::config::auth::Grant;
use crate::util::lock;
use std::sync::Arc;

impl Auth {
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
            s.put(&store::StoredToken {
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
    pub(super) async fn refresh(&self) -> Result<(), TokenError> {
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

    /// A new token by the configured grant.
    pub(super) async fn obtain(
        &self,
        challenge: &Challenge,
        scope: Option<String>,
    ) -> Result<(), String> {
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
    pub(super) fn configured_client(&self, d: &Discovery) -> Option<ClientId> {
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
