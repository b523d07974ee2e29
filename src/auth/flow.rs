//! The network half of authorization (contract §8): discovery (RFC 9728, RFC 8414, OpenID),
//! dynamic registration (RFC 7591), and token requests of every grant, with the client
//! authenticated as the metadata allows. Messages never hold a token, code, verifier or secret:
//! server text is quoted only after [`super::Auth::mask`].

use super::Auth;
use jsonwebtoken::Algorithm;
use reqwest::header::ACCEPT;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};
use url::Url;

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub(super) struct Discovery {
    /// The protected-resource metadata's `resource`, sent verbatim; the server URL when the
    /// server has none (2025-03-26).
    pub resource: String,
    /// PRM `scopes_supported`, space-joined.
    pub prm_scopes: Option<String>,
    pub issuer: String,
    pub meta: Map<String, Value>,
    pub authorize: String,
    pub token: String,
    pub register: Option<String>,
}

impl Discovery {
    fn list(&self, key: &str) -> Vec<String> {
        match self.meta.get(key) {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn auth_methods(&self) -> Vec<String> {
        self.list("token_endpoint_auth_methods_supported")
    }

    pub fn as_scopes(&self) -> Vec<String> {
        self.list("scopes_supported")
    }

    pub fn cimd_supported(&self) -> bool {
        self.meta.get("client_id_metadata_document_supported") == Some(&Value::Bool(true))
    }

    pub fn iss_required(&self) -> bool {
        self.meta
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// A client identity at the authorization server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(super) struct ClientId {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// `none`, `client_secret_basic`, `client_secret_post` or `private_key_jwt`.
    pub method: String,
    /// The redirect URI it was registered with (a dynamic registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

/// Tokens as kept in memory and in the store.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tokens {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// `expires_in` as granted, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Tokens {
    /// Refresh is due when less than min(60 s, half the lifetime) remains (§8).
    pub fn refresh_due(&self) -> bool {
        let Some(at) = self.expires_at else {
            return false;
        };
        let margin = self.lifetime.map_or(60, |l| (l / 2).min(60));
        now() + margin >= at
    }
}

/// The parts of a `WWW-Authenticate: Bearer …` challenge we use.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

/// Parses the Bearer challenge's auth-params (quoted or token values).
pub(super) fn parse_challenge(header: &str) -> Challenge {
    let mut c = Challenge::default();
    let rest = header.trim();
    let rest = match rest.split_once(char::is_whitespace) {
        Some((scheme, r)) if scheme.eq_ignore_ascii_case("bearer") => r,
        _ if rest.eq_ignore_ascii_case("bearer") => "",
        _ => rest,
    };
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b',' || b[i].is_ascii_whitespace()) {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i] != b'=' && b[i] != b',' {
            i += 1;
        }
        let name = rest[start..i].trim().to_ascii_lowercase();
        if i >= b.len() || b[i] != b'=' {
            continue;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < b.len() && b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                let ch_end = (i + 1..=b.len())
                    .find(|e| rest.is_char_boundary(*e))
                    .unwrap_or(b.len());
                value.push_str(&rest[i..ch_end]);
                i = ch_end;
            }
            i += 1;
        } else {
            let s = i;
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            value = rest[s..i].trim().to_string();
        }
        match name.as_str() {
            "resource_metadata" => c.resource_metadata = Some(value),
            "scope" => c.scope = Some(value),
            "error" => c.error = Some(value),
            _ => {}
        }
    }
    c
}

/// Whether the metadata's `resource` covers the configured server URL (§8): same scheme, host
/// and port as written, and a path prefix at a segment boundary.
pub(super) fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.scheme() != server.scheme()
        || r.host_str() != server.host_str()
        || r.port_or_known_default() != server.port_or_known_default()
        || r.fragment().is_some()
    {
        return false;
    }
    let (rp, sp) = (r.path(), server.path());
    rp == sp || rp == "/" || rp.ends_with('/') && sp.starts_with(rp) || {
        sp.starts_with(rp) && sp.as_bytes().get(rp.len()) == Some(&b'/')
    }
}

fn origin(u: &Url) -> String {
    u.origin().ascii_serialization()
}

/// The path of `u` for well-known insertion: empty for the root.
fn path_part(u: &Url) -> String {
    let p = u.path().trim_end_matches('/');
    p.to_string()
}

/// The protected-resource metadata URLs to try, in order (§8).
pub(super) fn prm_urls(server: &Url, from_header: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(h) = from_header {
        out.push(h.to_string());
    }
    let base = format!("{}/.well-known/oauth-protected-resource", origin(server));
    let p = path_part(server);
    if !p.is_empty() {
        out.push(format!("{base}{p}"));
    }
    out.push(base);
    out
}

/// The authorization-server metadata URLs for `issuer`, in order (§8).
pub(super) fn as_urls(issuer: &Url) -> Vec<String> {
    let o = origin(issuer);
    let p = path_part(issuer);
    if p.is_empty() {
        vec![
            format!("{o}/.well-known/oauth-authorization-server"),
            format!("{o}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{o}/.well-known/oauth-authorization-server{p}"),
            format!("{o}/.well-known/openid-configuration{p}"),
            format!("{o}{p}/.well-known/openid-configuration"),
        ]
    }
}

/// The signing algorithm named in config.
pub(super) fn algorithm(name: &str) -> Result<Algorithm, String> {
    Ok(match name {
        "ES256" => Algorithm::ES256,
        "ES384" => Algorithm::ES384,
        "RS256" => Algorithm::RS256,
        "RS384" => Algorithm::RS384,
        "RS512" => Algorithm::RS512,
        "PS256" => Algorithm::PS256,
        "PS384" => Algorithm::PS384,
        "PS512" => Algorithm::PS512,
        "EdDSA" => Algorithm::EdDSA,
        other => {
            return Err(format!(
                "`auth.signingAlg` \"{other}\" is not supported (ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA)"
            ))
        }
    })
}

fn url_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The outcome of one token request.
pub(super) enum TokenError {
    /// The endpoint answered an OAuth error (`invalid_grant` …), or another status.
    Refused { status: u16, error: String },
    /// No usable answer (network, not JSON).
    Failed(String),
}

impl TokenError {
    pub fn text(&self) -> String {
        match self {
            TokenError::Refused { status, error } => format!("HTTP {status}: {error}"),
            TokenError::Failed(m) => m.clone(),
        }
    }
}

impl Auth {
    /// GETs a JSON object; None for any non-success or non-JSON answer (discovery moves on).
    pub(super) async fn get_json(&self, url: &str) -> Option<Map<String, Value>> {
        let req = self
            .http
            .get(url)
            .header(ACCEPT, "application/json")
            .header("mcp-protocol-version", "2025-11-25");
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
        let mut meta = None;
        for u in as_urls(&issuer_url) {
            if let Some(m) = self.get_json(&u).await {
                if m.contains_key("authorization_endpoint") || m.contains_key("token_endpoint") {
                    meta = Some(m);
                    break;
                }
            }
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
            "grant_types": [grant, "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        if let Some(r) = redirect_uri {
            body["redirect_uris"] = serde_json::json!([r]);
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
                    crate::transport::http::explain_reqwest(e)
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
    /// (`aud` is the issuer, for `private_key_jwt`).
    pub(super) async fn token_request(
        &self,
        endpoint: &str,
        mut params: Vec<(&'static str, String)>,
        client: &ClientId,
        aud: &str,
    ) -> Result<Tokens, TokenError> {
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
        let resp = tokio::time::timeout(self.timeout, req.send())
            .await
            .map_err(|_| TokenError::Failed(format!("the token endpoint {endpoint} timed out")))?
            .map_err(|e| {
                TokenError::Failed(format!(
                    "the token endpoint {endpoint} could not be reached: {}",
                    crate::transport::http::explain_reqwest(e)
                ))
            })?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
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
        };
        self.add_mask(&tokens.access_token);
        if let Some(r) = &tokens.refresh_token {
            self.add_mask(r);
        }
        Ok(tokens)
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

/// The client authentication for a client with (or without) a secret: the first of
/// `client_secret_basic` / `client_secret_post` the metadata lists, `client_secret_basic`
/// when it lists neither (unless it lists only `none`).
pub(super) fn secret_method(has_secret: bool, supported: &[String]) -> String {
    if !has_secret {
        return "none".into();
    }
    for m in supported {
        if m == "client_secret_basic" || m == "client_secret_post" {
            return m.clone();
        }
    }
    if !supported.is_empty() && supported.iter().all(|m| m == "none") {
        return "none".into();
    }
    "client_secret_basic".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        let c = parse_challenge(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="https://h/.well-known/x""#,
        );
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://h/.well-known/x")
        );
        let c = parse_challenge("Bearer realm=x,scope=mcp");
        assert_eq!(c.scope.as_deref(), Some("mcp"));
        assert_eq!(parse_challenge("Bearer"), Challenge::default());
    }

    #[test]
    fn discovery_urls() {
        let u = Url::parse("http://localhost:3000/mcp").unwrap();
        assert_eq!(
            prm_urls(&u, None),
            vec![
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource"
            ]
        );
        let i = Url::parse("https://as.test/tenant1").unwrap();
        assert_eq!(
            as_urls(&i),
            vec![
                "https://as.test/.well-known/oauth-authorization-server/tenant1",
                "https://as.test/.well-known/openid-configuration/tenant1",
                "https://as.test/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(as_urls(&Url::parse("https://as.test/").unwrap()).len(), 2);
    }

    #[test]
    fn resources() {
        let s = Url::parse("http://localhost:3000/mcp").unwrap();
        assert!(resource_covers("http://localhost:3000/mcp", &s));
        assert!(resource_covers("http://localhost:3000/", &s));
        assert!(resource_covers("http://localhost:3000", &s));
        assert!(!resource_covers("http://127.0.0.1:3000/mcp", &s));
        assert!(!resource_covers("https://evil.example.com/mcp", &s));
        assert!(!resource_covers("http://localhost:3000/mc", &s));
        assert!(!resource_covers("http://localhost:3000/mcp/x", &s));
    }

    #[test]
    fn methods_and_expiry() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(secret_method(true, &l(&[])), "client_secret_basic");
        assert_eq!(
            secret_method(true, &l(&["none", "client_secret_post"])),
            "client_secret_post"
        );
        assert_eq!(secret_method(true, &l(&["none"])), "none");
        assert_eq!(secret_method(false, &l(&["client_secret_basic"])), "none");
        let t = Tokens {
            access_token: "a".into(),
            refresh_token: None,
            expires_at: Some(now() + 10),
            lifetime: Some(30),
            scope: None,
        };
        assert!(t.refresh_due());
        let t = Tokens {
            expires_at: Some(now() + 3000),
            lifetime: Some(3600),
            ..t
        };
        assert!(!t.refresh_due());
    }
}
