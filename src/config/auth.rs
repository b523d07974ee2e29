//! The `auth` key of a remote server's config entry (contract §8).

use super::expand::expand_env;
use crate::json::type_name;
use serde_json::{Map, Value};

/// How the library gets an access token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// A person logs in through the browser step (the resolver's).
    #[default]
    AuthorizationCode,
    /// The client authenticates itself; no person, no browser.
    ClientCredentials,
    /// A JWT from elsewhere (a workload identity: a Kubernetes service-account token, a cloud
    /// instance identity) is the grant (RFC 7523 §2.1, SEP-1933 workload identity federation);
    /// no person, no browser.
    JwtBearer,
}

/// The `grant_type` of the RFC 7523 JWT-bearer grant.
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Cross-app access (SEP-990): an ID token from the enterprise IdP is exchanged for an ID-JAG.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IdpSpec {
    pub issuer: String,
    /// Defaults to the IdP's discovered `token_endpoint`.
    pub token_endpoint: Option<String>,
    pub client_id: String,
    /// Expands `${NAME}`; masked like headers.
    pub client_secret: Option<String>,
    /// The ID token (expands `${NAME}`), or a file holding it.
    pub id_token: Option<String>,
    pub id_token_file: Option<String>,
}

/// A server's `auth` settings; all optional (a 401 starts the flow without any).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuthSpec {
    pub client_id: Option<String>,
    /// Expands `${NAME}`; masked like headers.
    pub client_secret: Option<String>,
    pub client_metadata_url: Option<String>,
    pub redirect_uri: Option<String>,
    pub scope: Option<String>,
    pub grant: Grant,
    pub private_key_file: Option<String>,
    pub signing_alg: Option<String>,
    pub idp: Option<IdpSpec>,
    /// The JWT-bearer grant's assertion (expands `${NAME}`; masked like headers), or a file
    /// holding it, read again for every token request (workload tokens rotate).
    pub assertion: Option<String>,
    pub assertion_file: Option<String>,
    pub store: Option<String>,
}

impl AuthSpec {
    /// The configured secret values, for masking (§9).
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self.client_secret.iter().cloned().collect();
        out.extend(self.assertion.iter().cloned());
        if let Some(idp) = &self.idp {
            out.extend(idp.client_secret.iter().cloned());
            out.extend(idp.id_token.iter().cloned());
        }
        out.retain(|s| !s.is_empty());
        out
    }
}

const KEYS: &str = "clientId, clientSecret, clientMetadataUrl, redirectUri, scope, grant, privateKeyFile, signingAlg, idp, assertion, assertionFile, store";

fn string(o: &Map<String, Value>, key: &str, prefix: &str) -> Result<Option<String>, String> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        // Never echo the value: it may be a secret.
        Some(other) => Err(format!(
            "`{prefix}{key}` must be a non-empty string, got {}",
            type_name(other)
        )),
    }
}

/// Parses `auth` (absent or null: defaults). Messages name the key, never a value.
pub fn parse(v: Option<&Value>) -> Result<AuthSpec, String> {
    let o = match v {
        None | Some(Value::Null) => return Ok(AuthSpec::default()),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(format!(
                "`auth` must be an object, got {}",
                type_name(other)
            ))
        }
    };
    for k in o.keys() {
        if !KEYS.split(", ").any(|known| known == k) {
            return Err(format!("`auth.{k}` is not an auth setting ({KEYS})"));
        }
    }
    let p = "auth.";
    let grant = match string(o, "grant", p)?.as_deref() {
        None | Some("authorization_code") => Grant::AuthorizationCode,
        Some("client_credentials") => Grant::ClientCredentials,
        Some("jwt-bearer") | Some(JWT_BEARER_GRANT) => Grant::JwtBearer,
        Some(other) => {
            return Err(format!(
                "`auth.grant` must be \"authorization_code\", \"client_credentials\" or \"jwt-bearer\", got \"{other}\""
            ))
        }
    };
    let redirect_uri = string(o, "redirectUri", p)?;
    if let Some(r) = &redirect_uri {
        url::Url::parse(r).map_err(|e| format!("`auth.redirectUri` is not a URL: {e}"))?;
    }
    let client_metadata_url = string(o, "clientMetadataUrl", p)?;
    if let Some(u) = &client_metadata_url {
        let parsed = url::Url::parse(u)
            .map_err(|e| format!("`auth.clientMetadataUrl` is not a URL: {e}"))?;
        if parsed.scheme() != "https" || parsed.path() == "/" {
            return Err("`auth.clientMetadataUrl` must be an https URL with a path".into());
        }
    }
    let signing_alg = string(o, "signingAlg", p)?;
    if let Some(a) = &signing_alg {
        algorithm(a)?;
    }
    let idp = match o.get("idp") {
        None | Some(Value::Null) => None,
        Some(Value::Object(i)) => {
            let q = "auth.idp.";
            for k in i.keys() {
                if ![
                    "issuer",
                    "tokenEndpoint",
                    "clientId",
                    "clientSecret",
                    "idToken",
                    "idTokenFile",
                ]
                .contains(&k.as_str())
                {
                    return Err(format!(
                        "`auth.idp.{k}` is not an IdP setting (issuer, tokenEndpoint, clientId, clientSecret, idToken, idTokenFile)"
                    ));
                }
            }
            let spec = IdpSpec {
                issuer: string(i, "issuer", q)?.ok_or("`auth.idp.issuer` is required")?,
                token_endpoint: string(i, "tokenEndpoint", q)?,
                client_id: string(i, "clientId", q)?.ok_or("`auth.idp.clientId` is required")?,
                client_secret: string(i, "clientSecret", q)?.map(|s| expand_env(&s)),
                id_token: string(i, "idToken", q)?.map(|s| expand_env(&s)),
                id_token_file: string(i, "idTokenFile", q)?,
            };
            if spec.id_token.is_none() && spec.id_token_file.is_none() {
                return Err("`auth.idp` needs `idToken` or `idTokenFile`".into());
            }
            Some(spec)
        }
        Some(other) => {
            return Err(format!(
                "`auth.idp` must be an object, got {}",
                type_name(other)
            ))
        }
    };
    let spec = AuthSpec {
        client_id: string(o, "clientId", p)?,
        client_secret: string(o, "clientSecret", p)?.map(|s| expand_env(&s)),
        client_metadata_url,
        redirect_uri,
        scope: string(o, "scope", p)?,
        grant,
        private_key_file: string(o, "privateKeyFile", p)?,
        signing_alg,
        idp,
        assertion: string(o, "assertion", p)?.map(|s| expand_env(&s)),
        assertion_file: string(o, "assertionFile", p)?,
        store: string(o, "store", p)?,
    };
    if spec.grant == Grant::ClientCredentials {
        if spec.client_id.is_none() {
            return Err("`auth.grant` \"client_credentials\" needs `auth.clientId`".into());
        }
        if spec.client_secret.is_none() && spec.private_key_file.is_none() {
            return Err(
                "`auth.grant` \"client_credentials\" needs `auth.clientSecret` or `auth.privateKeyFile`"
                    .into(),
            );
        }
    }
    let has_assertion = spec.assertion.is_some() || spec.assertion_file.is_some();
    if spec.grant == Grant::JwtBearer {
        if !has_assertion {
            return Err(
                "`auth.grant` \"jwt-bearer\" needs `auth.assertion` or `auth.assertionFile`".into(),
            );
        }
        if spec.assertion.is_some() && spec.assertion_file.is_some() {
            return Err("`auth.assertion` and `auth.assertionFile` exclude each other".into());
        }
        if spec.idp.is_some() {
            return Err(
                "`auth.grant` \"jwt-bearer\" and `auth.idp` (cross-app access) exclude each other"
                    .into(),
            );
        }
    } else if has_assertion {
        return Err(
            "`auth.assertion` and `auth.assertionFile` belong to `auth.grant` \"jwt-bearer\""
                .into(),
        );
    }
    if spec.idp.is_some() && spec.client_id.is_none() {
        return Err(
            "`auth.idp` (cross-app access) needs `auth.clientId` for the authorization server"
                .into(),
        );
    }
    Ok(spec)
}

/// The signing algorithm named in config.
pub(crate) fn algorithm(name: &str) -> Result<jsonwebtoken::Algorithm, String> {
    Ok(match name {
        "ES256" => jsonwebtoken::Algorithm::ES256,
        "ES384" => jsonwebtoken::Algorithm::ES384,
        "RS256" => jsonwebtoken::Algorithm::RS256,
        "RS384" => jsonwebtoken::Algorithm::RS384,
        "RS512" => jsonwebtoken::Algorithm::RS512,
        "PS256" => jsonwebtoken::Algorithm::PS256,
        "PS384" => jsonwebtoken::Algorithm::PS384,
        "PS512" => jsonwebtoken::Algorithm::PS512,
        "EdDSA" => jsonwebtoken::Algorithm::EdDSA,
        other => {
            return Err(format!(
                "`auth.signingAlg` \"{other}\" is not supported (ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA)"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> Result<AuthSpec, String> {
        parse(Some(&serde_json::from_str::<Value>(t).unwrap()))
    }

    #[test]
    fn keys_and_errors() {
        std::env::set_var("TN_AUTH_TEST_SECRET", "s-123");
        let s = p(r#"{"clientId":"c","clientSecret":"${TN_AUTH_TEST_SECRET}","store":"/tmp/x"}"#)
            .unwrap();
        assert_eq!(s.client_secret.as_deref(), Some("s-123"));
        assert_eq!(s.secrets(), vec!["s-123".to_string()]);
        assert!(p(r#"{"clientid":"c"}"#)
            .unwrap_err()
            .contains("`auth.clientid`"));
        assert!(p(r#"{"grant":"password"}"#)
            .unwrap_err()
            .contains("auth.grant"));
        assert!(p(r#"{"grant":"client_credentials","clientId":"c"}"#)
            .unwrap_err()
            .contains("clientSecret"));
        let e = p(r#"{"clientSecret":5}"#).unwrap_err();
        assert!(
            e.contains("`auth.clientSecret` must be a non-empty string"),
            "{e}"
        );
        assert!(p(r#"{"clientMetadataUrl":"http://x/y"}"#).is_err());
        assert!(p(r#"{"signingAlg":"none"}"#).is_err());
        assert!(
            p(r#"{"idp":{"issuer":"https://i","clientId":"c"},"clientId":"a"}"#)
                .unwrap_err()
                .contains("idToken")
        );
        assert_eq!(parse(None).unwrap(), AuthSpec::default());
    }

    #[test]
    fn jwt_bearer() {
        std::env::set_var("TN_AUTH_TEST_JWT", "eyJ.workload.jwt");
        let s = p(r#"{"grant":"jwt-bearer","assertion":"${TN_AUTH_TEST_JWT}"}"#).unwrap();
        assert_eq!(s.grant, Grant::JwtBearer);
        assert_eq!(s.assertion.as_deref(), Some("eyJ.workload.jwt"));
        assert_eq!(s.secrets(), vec!["eyJ.workload.jwt".to_string()]);
        let s =
            p(r#"{"grant":"urn:ietf:params:oauth:grant-type:jwt-bearer","assertionFile":"/t"}"#)
                .unwrap();
        assert_eq!(s.grant, Grant::JwtBearer);
        assert_eq!(s.assertion_file.as_deref(), Some("/t"));
        let e = p(r#"{"grant":"jwt-bearer"}"#).unwrap_err();
        assert!(
            e.contains("`auth.assertion` or `auth.assertionFile`"),
            "{e}"
        );
        let e = p(r#"{"grant":"jwt-bearer","assertion":"a","assertionFile":"/t"}"#).unwrap_err();
        assert!(e.contains("exclude each other"), "{e}");
        let e = p(r#"{"assertion":"a"}"#).unwrap_err();
        assert!(e.contains("belong to"), "{e}");
        let e = p(r#"{"grant":"jwt_bearer","assertion":"secret-value"}"#).unwrap_err();
        assert!(
            e.contains("\"jwt-bearer\"") && !e.contains("secret-value"),
            "{e}"
        );
    }
}
