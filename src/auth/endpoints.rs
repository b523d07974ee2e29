//! Authorization over HTTP (contract §8): discovery (RFC 9728, RFC 8414, OpenID), dynamic
//! registration (RFC 7591), and token requests of every grant, with the client authenticated as
//! the metadata allows. Messages never hold a token, code, verifier or secret: server text is
//! quoted only after [`super::Auth::mask`].

use super::flow::*;
use super::Auth;
use crate::util::lock;
use jsonwebtoken::Algorithm;
use reqwest::header::ACCEPT;
use serde_json::{Map, Value};
use url::Url;

impl Auth {
    /// GETs a JSON object; None for any non-success or non-JSON answer (discovery moves on).
    pub(super) async fn get_json(&self, url: &str) -> Option<Map<String, Value>> {
        let req = self
            .http
            .get(url)
            .header(ACCEPT, "application/json")
            .header("mcp-protocol-version", crate::versions::HANDSHAKE_VERSION);
        let resp = tokio::time::timeout(self.timeout, req.send())
            .await
            .ok()?
            .ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let bytes = tokio::time::timeout(self.timeout, resp.bytes())
            .await
            .ok()?
            .ok()?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        }
    }

    /// Discovery (§8): protected-resource metadata, then the authorization server's; the
    /// 2025-03-26 fallbacks when the server has none.
    pub(super) async fn discover(&self, challenge: &Challenge) -> Result<Discovery, String> {
        let mut prm = None;
        for u in prm_urls(&self.url, challenge.resource_metadata.as_deref()) {
            if Url::parse(&u).is_err() {
                continue;
            }
            if let Some(m) = self.get_json(&u).await {
                if m.contains_key("authorization_servers") || m.contains_key("resource") {
                    prm = Some(m);
                    break;
                }
            }
        }
        let (resource, prm_scopes, issuer) = match &prm {
            Some(m) => {
                let resource = m
                    .get("resource")
                    .and_then(Value::as_str)
                    .ok_or("the protected-resource metadata has no `resource`")?
                    .to_string();
                if !resource_covers(&resource, &self.url) {
                    return Err(format!(
                        "the protected-resource metadata names the resource {resource}, which is not this server's URL ({}); no login is attempted",
                        super::redact_str(self.url.as_str())
                    ));
                }
                let scopes = match m.get("scopes_supported") {
                    Some(Value::Array(a)) if !a.is_empty() => Some(
                        a.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                    _ => None,
                };
                let issuer = match m.get("authorization_servers") {
                    Some(Value::Array(a)) => a.iter().find_map(Value::as_str).map(str::to_string),
                    _ => None,
                }
                .unwrap_or_else(|| origin(&self.url));
                (resource, scopes, issuer)
            }
            // 2025-03-26: the authorization server is the MCP server's origin.
            None => {
                let mut r = self.url.clone();
                r.set_fragment(None);
                (r.to_string(), None, origin(&self.url))
            }
        };
        let issuer_url = Url::parse(&issuer).map_err(|e| {
            format!("the authorization server `{issuer}` named by the metadata is not a URL: {e}")
        })?;
        // RFC 8414 §3.3 (SEP-2468): a document whose `issuer` is not, byte for byte, the issuer
        // its well-known URL was built from is not used at all: not its endpoints, and no
        // fallback to the default ones. Without protected-resource metadata (2025-03-26) nobody
        // named an issuer: the metadata sits at the server's origin whatever the issuer's path
        // (2025-03-26 authorization §2.3.2), so an issuer on that origin is taken as written,
        // and one on another origin is refused.
        let legacy = prm.is_none();
        let accepted = |named: &str| {
            if legacy {
                Url::parse(named).is_ok_and(|n| origin(&n) == origin(&issuer_url))
            } else {
                named == issuer
            }
        };
        let mut meta = None;
        let mut refused: Option<(String, Option<String>)> = None;
        for u in as_urls(&issuer_url) {
            if let Some(m) = self.get_json(&u).await {
                if m.contains_key("authorization_endpoint") || m.contains_key("token_endpoint") {
                    let named = m.get("issuer").and_then(Value::as_str);
                    if named.is_some_and(accepted) {
                        meta = Some(m);
                        break;
                    }
                    if refused.is_none() {
                        refused = Some((u.clone(), named.map(str::to_string)));
                    }
                }
            }
        }
        if let (None, Some((u, named))) = (&meta, refused) {
            return Err(match named {
                Some(n) if legacy => format!(
                    "the authorization server metadata at {} names the issuer \"{}\", which is not on the server's origin {issuer}; refused (RFC 8414 §3.3)",
                    super::redact_str(&u),
                    self.quote(&n)
                ),
                Some(n) => format!(
                    "the authorization server metadata at {} names the issuer \"{}\", not \"{issuer}\" (the issuer it was looked up for); refused (RFC 8414 §3.3)",
                    super::redact_str(&u),
                    self.quote(&n)
                ),
                None => format!(
                    "the authorization server metadata at {} names no issuer (it must be \"{issuer}\"); refused (RFC 8414 §3.3)",
                    super::redact_str(&u)
                ),
            });
        }
        let o = origin(&issuer_url);
        let meta = meta.unwrap_or_default();
        let field = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_string);
        if meta.is_empty() && prm.is_some() {
            // With protected-resource metadata the authorization server must publish its own.
            return Err(format!(
                "the authorization server {issuer} publishes no metadata (tried {})",
                as_urls(&issuer_url).join(", ")
            ));
        }
        if let Some(Value::Array(methods)) = meta.get("code_challenge_methods_supported") {
            if !methods.iter().any(|m| m.as_str() == Some("S256")) {
                return Err(format!(
                    "the authorization server {issuer} does not support PKCE S256, which MCP requires"
                ));
            }
        }
        let register = if meta.is_empty() {
            Some(format!("{o}/register"))
        } else {
            field("registration_endpoint")
        };
        Ok(Discovery {
            resource,
            prm_scopes,
            // The issuer checked above (the one named, when a document was used).
            issuer: field("issuer").unwrap_or(issuer),
            authorize: field("authorization_endpoint").unwrap_or_else(|| format!("{o}/authorize")),
            token: field("token_endpoint").unwrap_or_else(|| format!("{o}/token")),
            register,
            meta,
        })
    }

    /// Dynamic registration of a public client (RFC 7591, §8).
    pub(super) async fn register(
        &self,
        endpoint: &str,
        redirect_uri: Option<&str>,
        grant: &str,
        d: &Discovery,
    ) -> Result<ClientId, String> {
        let mut body = serde_json::json!({
            "client_name": "toolnexus",
            "application_type": application_type(redirect_uri),
            "grant_types": [grant, "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        if let Some(r) = redirect_uri {
            body["redirect_uris"] = serde_json::json!([r]);
        }
        if d.dpop() {
            // Every token request of ours will carry a proof (RFC 9449 §5.2).
            body["dpop_bound_access_tokens"] = Value::Bool(true);
        }
        let req = self
            .http
            .post(endpoint)
            .header(ACCEPT, "application/json")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        let resp = tokio::time::timeout(self.timeout, req.send())
            .await
            .map_err(|_| format!("dynamic client registration at {endpoint} timed out"))?
            .map_err(|e| {
                format!(
                    "dynamic client registration at {endpoint} failed: {}",
                    crate::net::explain_reqwest(e)
                )
            })?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            return Err(format!(
                "dynamic client registration at {endpoint} was refused: HTTP {status}: {}",
                self.quote(&text)
            ));
        }
        let v: Map<String, Value> = serde_json::from_str(&text).map_err(|_| {
            format!("dynamic client registration at {endpoint} answered something that is not a JSON object")
        })?;
        let id = v
            .get("client_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                format!("dynamic client registration at {endpoint} returned no client_id")
            })?
            .to_string();
        let secret = v
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(s) = &secret {
            self.add_mask(s);
        }
        let method = match v.get("token_endpoint_auth_method").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => secret_method(secret.is_some(), &d.auth_methods()),
        };
        Ok(ClientId {
            id,
            secret,
            method,
            redirect_uri: redirect_uri.map(str::to_string),
        })
    }

    /// A token request at `endpoint` with `params`, the client authenticated by `client`
    /// (`aud` is the issuer, for `private_key_jwt`). With `dpop`, the request carries a proof of
    /// that key (RFC 9449 §5); an answer `use_dpop_nonce` with a `DPoP-Nonce` header is taken
    /// once: the request goes again with a new proof carrying the nonce (§8).
    pub(super) async fn token_request(
        &self,
        endpoint: &str,
        params: Vec<(&'static str, String)>,
        client: &ClientId,
        aud: &str,
        dpop: Option<&super::dpop::DpopKey>,
    ) -> Result<Tokens, TokenError> {
        let htu = match dpop {
            Some(_) => Some(Url::parse(endpoint).map_err(|e| {
                TokenError::Failed(format!("the token endpoint {endpoint} is not a URL: {e}"))
            })?),
            None => None,
        };
        let mut nonce_taken = false;
        let (status, text) = loop {
            let mut req = self.token_post(endpoint, &params, client, aud)?;
            let mut nonce_sent = None;
            if let (Some(k), Some(u)) = (dpop, &htu) {
                nonce_sent = lock(&self.state).as_nonces.get(endpoint).cloned();
                req = req.header("dpop", k.proof("POST", u, nonce_sent.as_deref(), None));
            }
            let resp = tokio::time::timeout(self.timeout, req.send())
                .await
                .map_err(|_| {
                    TokenError::Failed(format!("the token endpoint {endpoint} timed out"))
                })?
                .map_err(|e| {
                    TokenError::Failed(format!(
                        "the token endpoint {endpoint} could not be reached: {}",
                        crate::net::explain_reqwest(e)
                    ))
                })?;
            let status = resp.status();
            // The authorization server may hand out a new nonce with any answer (§8).
            let new_nonce = resp
                .headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty());
            let text = resp.text().await.unwrap_or_default();
            if let (Some(_), Some(n)) = (dpop, &new_nonce) {
                lock(&self.state)
                    .as_nonces
                    .insert(endpoint.to_string(), n.clone());
            }
            let asks_nonce = status.as_u16() == 400
                && serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v.get("error")?.as_str().map(|e| e == "use_dpop_nonce"))
                    .unwrap_or(false);
            if asks_nonce
                && dpop.is_some()
                && !nonce_taken
                && new_nonce.is_some()
                && new_nonce != nonce_sent
            {
                nonce_taken = true;
                continue;
            }
            break (status, text);
        };
        let v: Option<Map<String, Value>> = serde_json::from_str(&text).ok();
        if !status.is_success() {
            let error = match &v {
                Some(m) => {
                    let e = m
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("no error code");
                    match m.get("error_description").and_then(Value::as_str) {
                        Some(d) => format!("{e} ({})", self.quote(d)),
                        None => e.to_string(),
                    }
                }
                None => self.quote(&text),
            };
            return Err(TokenError::Refused {
                status: status.as_u16(),
                error,
            });
        }
        let v = v.ok_or_else(|| {
            TokenError::Failed(format!(
                "the token endpoint {endpoint} answered something that is not a JSON object"
            ))
        })?;
        let access = v
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                TokenError::Failed(format!(
                    "the token endpoint {endpoint} answered without an access_token"
                ))
            })?;
        let lifetime = v.get("expires_in").and_then(|e| {
            e.as_u64()
                .or_else(|| e.as_f64().map(|f| f.max(0.0) as u64))
                .or_else(|| e.as_str().and_then(|s| s.parse().ok()))
        });
        let tokens = Tokens {
            access_token: access.to_string(),
            refresh_token: v
                .get("refresh_token")
                .and_then(Value::as_str)
                .map(str::to_string),
            expires_at: lifetime.map(|l| now().saturating_add(l)),
            lifetime,
            scope: v.get("scope").and_then(Value::as_str).map(str::to_string),
            // Bound only when we asked for it: a `DPoP` token type without a proof of ours is
            // presented as a bearer token.
            token_type: v
                .get("token_type")
                .and_then(Value::as_str)
                .filter(|_| dpop.is_some())
                .map(str::to_string),
        };
        self.add_mask(&tokens.access_token);
        if let Some(r) = &tokens.refresh_token {
            self.add_mask(r);
        }
        Ok(tokens)
    }

    /// The POST of one token request, the client authenticated (a new client assertion each
    /// time).
    fn token_post(
        &self,
        endpoint: &str,
        params: &[(&'static str, String)],
        client: &ClientId,
        aud: &str,
    ) -> Result<reqwest::RequestBuilder, TokenError> {
        let mut params = params.to_vec();
        let mut req = self.http.post(endpoint).header(ACCEPT, "application/json");
        match client.method.as_str() {
            "client_secret_basic" => {
                let secret = client.secret.clone().unwrap_or_default();
                req = req.basic_auth(url_encode(&client.id), Some(url_encode(&secret)));
            }
            "client_secret_post" => {
                params.push(("client_id", client.id.clone()));
                params.push(("client_secret", client.secret.clone().unwrap_or_default()));
            }
            "private_key_jwt" => {
                let assertion = self.client_assertion(&client.id, aud)?;
                self.add_mask(&assertion);
                params.push(("client_id", client.id.clone()));
                params.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
                ));
                params.push(("client_assertion", assertion));
            }
            // No client id at all: a grant that needs no client authentication (RFC 7523 §3.1).
            _ if client.id.is_empty() => {}
            _ => params.push(("client_id", client.id.clone())),
        }
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let req = req
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        Ok(req)
    }

    /// A `private_key_jwt` client assertion (RFC 7523): `iss` = `sub` = client id, `aud` = the
    /// authorization server's issuer.
    fn client_assertion(&self, client_id: &str, aud: &str) -> Result<String, TokenError> {
        let path = self.spec.private_key_file.as_deref().ok_or_else(|| {
            TokenError::Failed("private_key_jwt needs `auth.privateKeyFile`".into())
        })?;
        let pem = std::fs::read(path).map_err(|e| {
            TokenError::Failed(format!(
                "`auth.privateKeyFile` ({path}) cannot be read: {e}"
            ))
        })?;
        let alg = algorithm(self.spec.signing_alg.as_deref().unwrap_or("ES256"))
            .map_err(TokenError::Failed)?;
        let key = match alg {
            Algorithm::ES256 | Algorithm::ES384 => jsonwebtoken::EncodingKey::from_ec_pem(&pem),
            Algorithm::EdDSA => jsonwebtoken::EncodingKey::from_ed_pem(&pem),
            _ => jsonwebtoken::EncodingKey::from_rsa_pem(&pem),
        }
        .map_err(|e| {
            TokenError::Failed(format!(
                "`auth.privateKeyFile` ({path}) is not a PEM private key for {alg:?}: {e}"
            ))
        })?;
        let iat = now();
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": aud,
            "iat": iat,
            "exp": iat + 300,
            "jti": oauth2::CsrfToken::new_random().secret(),
        });
        jsonwebtoken::encode(&jsonwebtoken::Header::new(alg), &claims, &key).map_err(|e| {
            TokenError::Failed(format!(
                "signing the client assertion with `auth.privateKeyFile` ({path}) failed: {e}"
            ))
        })
    }
}

/// The `application_type` a registration declares (SEP-837, OpenID Connect Dynamic Client
/// Registration §2): "web" for a redirect URI on a remote host (an https or http URL whose host
/// is not a loopback one), "native" otherwise: the library's own loopback redirect, a
/// `localhost` or custom-scheme redirect, or none.
pub(super) fn application_type(redirect_uri: Option<&str>) -> &'static str {
    let Some(u) = redirect_uri.and_then(|r| Url::parse(r).ok()) else {
        return "native";
    };
    if !matches!(u.scheme(), "http" | "https") {
        return "native";
    }
    let loopback = match u.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => true,
    };
    if loopback {
        "native"
    } else {
        "web"
    }
}

#[cfg(test)]
mod tests {
    use super::application_type;

    #[test]
    fn application_types() {
        assert_eq!(application_type(None), "native");
        assert_eq!(
            application_type(Some("http://127.0.0.1:5555/callback")),
            "native"
        );
        assert_eq!(application_type(Some("http://localhost:8080/cb")), "native");
        assert_eq!(application_type(Some("http://[::1]:8080/cb")), "native");
        assert_eq!(application_type(Some("http://app.localhost/cb")), "native");
        assert_eq!(application_type(Some("com.example.app:/oauth")), "native");
        assert_eq!(
            application_type(Some("https://app.example.com/oauth/cb")),
            "web"
        );
        assert_eq!(application_type(Some("http://intranet.example/cb")), "web");
    }
}
