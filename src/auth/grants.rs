//! The grants that obtain a token (contract §8): `client_credentials` (a secret or
//! `private_key_jwt`), cross-app access (SEP-990: an ID token exchanged at the IdP for an
//! ID-JAG, then the `jwt-bearer` grant), and the authorization code with PKCE, whose browser
//! step is the resolver's ([`super::login`]).

use super::*;

impl Auth {
    pub(super) async fn client_credentials(
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
            .token_request(
                &d.token,
                params,
                &client,
                &d.issuer,
                self.dpop_for(d).as_deref(),
            )
            .await
            .map_err(|e| format!("the client_credentials grant was refused: {}", e.text()))?;
        Ok((t, client))
    }

    /// The JWT-bearer grant (RFC 7523 §2.1) with the configured assertion, for workload
    /// identity federation (SEP-1933): the assertion is read again for every token request (a
    /// workload token rotates), the client is the configured one (or none: no client
    /// authentication), and a refusal fails the server: no retry, no other grant.
    pub(super) async fn jwt_bearer(
        &self,
        d: &Discovery,
        scope: Option<&str>,
    ) -> Result<(Tokens, ClientId), String> {
        let assertion =
            match (&self.spec.assertion, &self.spec.assertion_file) {
                (Some(a), _) => a.clone(),
                (None, Some(f)) => {
                    let a = std::fs::read_to_string(f)
                        .map_err(|e| format!("`auth.assertionFile` ({f}) cannot be read: {e}"))?
                        .trim()
                        .to_string();
                    if a.is_empty() {
                        return Err(format!("`auth.assertionFile` ({f}) is empty"));
                    }
                    a
                }
                (None, None) => return Err(
                    "`auth.grant` \"jwt-bearer\" needs `auth.assertion` or `auth.assertionFile`"
                        .into(),
                ),
            };
        self.add_mask(&assertion);
        let client = self.configured_client(d).unwrap_or(ClientId {
            id: String::new(),
            secret: None,
            method: "none".into(),
            redirect_uri: None,
        });
        let mut params = vec![
            (
                "grant_type",
                crate::config::auth::JWT_BEARER_GRANT.to_string(),
            ),
            ("assertion", assertion),
        ];
        if let Some(s) = scope {
            params.push(("scope", s.to_string()));
        }
        params.push(("resource", d.resource.clone()));
        let t = self
            .token_request(
                &d.token,
                params,
                &client,
                &d.issuer,
                self.dpop_for(d).as_deref(),
            )
            .await
            .map_err(|e| format!("the jwt-bearer grant was refused: {}", e.text()))?;
        Ok((t, client))
    }

    /// Cross-app access (SEP-990): the ID token is exchanged at the IdP for an ID-JAG (RFC
    /// 8693), and the ID-JAG for an access token with the `jwt-bearer` grant (RFC 7523).
    pub(super) async fn cross_app(
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
                        // RFC 8414 §3.3: only a document naming this very issuer is used.
                        if m.get("issuer").and_then(|v| v.as_str()) != Some(idp.issuer.as_str()) {
                            continue;
                        }
                        if let Some(t) = m.get("token_endpoint").and_then(|v| v.as_str()) {
                            found = Some(t.to_string());
                            break;
                        }
                    }
                }
                found.ok_or_else(|| {
                    format!(
                        "the IdP {} publishes no metadata naming it as the issuer with a token_endpoint (set `auth.idp.tokenEndpoint`)",
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
            .token_request(&idp_token_endpoint, params, &idp_client, &idp.issuer, None)
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
            .token_request(
                &d.token,
                params,
                &client,
                &d.issuer,
                self.dpop_for(d).as_deref(),
            )
            .await
            .map_err(|e| format!("the jwt-bearer grant was refused: {}", e.text()))?;
        Ok((t, client))
    }

    /// The authorization-code flow with PKCE (§8), the browser step the resolver's.
    pub(super) async fn authorization_code(
        &self,
        d: &Discovery,
        scope: Option<&str>,
    ) -> Result<(Tokens, ClientId), String> {
        if self.host.patience().is_none() {
            return Err("the server needs a login (OAuth) and no resolver is registered to open the login page; register a resolver, or configure `auth` with a client_credentials grant".into());
        }
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
            match login::browser_step(&*self.host, &self.server, url.as_str(), loopback.as_mut())
                .await
            {
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
            .token_request(
                &d.token,
                params,
                &client,
                &d.issuer,
                self.dpop_for(d).as_deref(),
            )
            .await
            .map_err(|e| format!("the token request was refused: {}", e.text()))?;
        let mut client = client;
        if client.redirect_uri.is_none() && self.spec.client_id.is_none() {
            client.redirect_uri = Some(redirect_uri);
        }
        Ok((t, client))
    }
}
