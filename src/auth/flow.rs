//! What authorization works with (contract §8): discovery results, client identities, tokens,
//! `WWW-Authenticate` challenges, the well-known URLs and the resource rule; the requests that
//! fill them are in [`super::endpoints`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

    /// The authorization server takes DPoP proofs of our algorithm (RFC 9449 §5.1).
    pub fn dpop(&self) -> bool {
        super::dpop::offered(&self.meta)
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
    /// `token_type` as granted: `DPoP` for a token bound to the server's DPoP key (RFC 9449
    /// §5), else a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
}
pub(super) use crate::util::unix_now as now;

impl Tokens {
    /// Presented as `Authorization: DPoP …` with a proof (RFC 9449 §7.1).
    pub fn is_dpop(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }

    /// Refresh is due when less than min(60 s, half the lifetime) remains (§8).
    pub fn refresh_due(&self) -> bool {
        let Some(at) = self.expires_at else {
            return false;
        };
        let margin = self.lifetime.map_or(60, |l| (l / 2).min(60));
        now() + margin >= at
    }
}

/// The parts of `WWW-Authenticate` challenges we use: `Bearer` or `DPoP` (RFC 9449 §7.1), one
/// challenge or several in one header.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
    /// The schemes challenged, lowercase (`bearer`, `dpop`).
    pub schemes: Vec<String>,
}

/// Parses the challenges' auth-params (quoted or token values): the first value of each wins,
/// except that a DPoP `use_dpop_nonce` error is never hidden by another challenge's error.
pub(super) fn parse_challenge(header: &str) -> Challenge {
    let mut c = Challenge::default();
    let rest = header.trim();
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b',' || b[i].is_ascii_whitespace()) {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i] != b'=' && b[i] != b',' && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        if start == i {
            i += 1; // a stray `=`
            continue;
        }
        let token = &rest[start..i];
        let mut j = i;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= b.len() || b[j] != b'=' {
            // Not followed by `=`: an auth-scheme, starting a challenge.
            c.schemes.push(token.to_ascii_lowercase());
            continue;
        }
        let name = token.to_ascii_lowercase();
        i = j + 1;
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
        let slot = match name.as_str() {
            "resource_metadata" => &mut c.resource_metadata,
            "scope" => &mut c.scope,
            "error" if value == "use_dpop_nonce" => {
                c.error = Some(value);
                continue;
            }
            "error" => &mut c.error,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(value);
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

pub(super) fn origin(u: &Url) -> String {
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

pub(super) use crate::config::auth::algorithm;

pub(super) fn url_encode(s: &str) -> String {
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
        assert_eq!(
            parse_challenge("Bearer"),
            Challenge {
                schemes: vec!["bearer".into()],
                ..Challenge::default()
            }
        );
        // DPoP (RFC 9449 §7.1), alone and beside Bearer in one header.
        let c = parse_challenge(r#"DPoP resource_metadata="http://h/.well-known/p""#);
        assert_eq!(c.schemes, vec!["dpop"]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/p")
        );
        let c = parse_challenge(
            r#"Bearer realm="x", error="invalid_token", DPoP algs="ES256", error="use_dpop_nonce", error_description="nonce""#,
        );
        assert_eq!(c.schemes, vec!["bearer", "dpop"]);
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        let c = parse_challenge(r#"DPoP error="use_dpop_nonce", resource_metadata="http://h/p""#);
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(c.resource_metadata.as_deref(), Some("http://h/p"));
        // A token68 scheme does not confuse what follows.
        let c = parse_challenge(r#"Basic dXNlcg==, Bearer scope="a""#);
        assert_eq!(c.scope.as_deref(), Some("a"));
        assert_eq!(c.schemes, vec!["basic", "bearer"]);
        assert_eq!(parse_challenge("").schemes, Vec::<String>::new());
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
            token_type: None,
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
