//! The flows of [`super::Auth`] against a small HTTP server written here: the issuer binding of
//! authorization-server metadata (RFC 8414 §3.3), the application type of a registration
//! (SEP-837), the JWT-bearer grant (SEP-1933), and DPoP (RFC 9449) at the token endpoint, on MCP
//! requests, with nonces and across `auth.store`.

use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

/// One request the server got.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

impl Seen {
    fn form(&self) -> HashMap<String, String> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn json_reply(status: u16, v: Value) -> Reply {
    Reply {
        status,
        headers: vec![],
        body: v.to_string(),
    }
}

type Handler = dyn Fn(&Seen, &str) -> Reply + Send + Sync;

/// A server on 127.0.0.1 answering each request (one per connection) with `handler(request,
/// base URL)`; what it got is in the returned list.
fn serve(handler: Box<Handler>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (b, s) = (base.clone(), seen.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut r = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let mut headers = HashMap::new();
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                }
            }
            let n = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; n];
            let _ = r.read_exact(&mut body);
            let req = Seen {
                method,
                path,
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            lock(&s).push(req.clone());
            let reply = handler(&req, &b);
            let mut out = format!(
                "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                reply.status,
                reply.body.len()
            );
            for (k, v) in &reply.headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            out.push_str(&reply.body);
            let _ = stream.write_all(out.as_bytes());
        }
    });
    (base, seen)
}

/// A host with no resolver: no browser step.
struct NoHost;

impl LoginHost for NoHost {
    fn ask(
        &self,
        _id: String,
        _request_json: String,
        _done: Box<dyn FnOnce(crate::responder::Finish) + Send>,
    ) -> Option<crate::responder::Token> {
        None
    }
    fn patience(&self) -> Option<Duration> {
        None
    }
    fn pause(&self, _carrier: Option<u64>) -> Box<dyn Send> {
        Box::new(())
    }
}

fn auth_for(base: &str, spec: serde_json::Value) -> Arc<Auth> {
    let spec = crate::config::auth::parse(Some(&spec)).unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    Auth::new(
        "s",
        &Url::parse(&format!("{base}/mcp")).unwrap(),
        &spec,
        http,
        Duration::from_secs(5),
        Arc::new(NoHost),
        &[],
    )
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    crate::net::runtime().block_on(f)
}

fn denied(a: &Auth, challenge: &str, nonce: Option<&str>, rounds: &mut Refusals) -> Denied {
    block(a.on_denied(
        401,
        Some(challenge.to_string()),
        nonce.map(str::to_string),
        a.generation(),
        rounds,
        None,
    ))
}

fn jwt_part(jwt: &str, i: usize) -> Value {
    serde_json::from_slice(&B64.decode(jwt.split('.').nth(i).unwrap()).unwrap()).unwrap()
}

/// Protected-resource metadata naming `issuer` (None: the server's own base).
fn prm(base: &str, issuer: Option<&str>) -> Reply {
    json_reply(
        200,
        json!({"resource": format!("{base}/mcp"), "authorization_servers": [issuer.unwrap_or(base)]}),
    )
}

#[test]
fn metadata_naming_another_issuer_is_refused() {
    // The metadata says it is another issuer, with endpoints reachable only through it: none
    // of them is used, and there is no fallback to default endpoints (SEP-2468).
    for named in ["https://attacker.example.com", "{base}/"] {
        let named = named.to_string();
        let (base, seen) = serve(Box::new(move |r, base| match r.path.as_str() {
            "/.well-known/oauth-protected-resource/mcp" => prm(base, None),
            "/.well-known/oauth-authorization-server" => json_reply(
                200,
                json!({
                    "issuer": named.replace("{base}", base),
                    "authorization_endpoint": format!("{base}/mismatched-as/authorize"),
                    "token_endpoint": format!("{base}/mismatched-as/token"),
                    "registration_endpoint": format!("{base}/mismatched-as/register"),
                }),
            ),
            _ => json_reply(404, json!({})),
        }));
        let a = auth_for(
            &base,
            json!({"grant": "client_credentials", "clientId": "c", "clientSecret": "s3cret-value"}),
        );
        let Denied::Fail(why) = denied(&a, "Bearer", None, &mut Refusals::default()) else {
            panic!("not refused")
        };
        assert!(why.contains("RFC 8414 §3.3"), "{why}");
        assert!(why.contains(&format!("not \"{base}\"")), "{why}");
        assert!(
            why.contains("https://attacker.example.com") || why.contains(&format!("\"{base}/\"")),
            "{why}"
        );
        let paths: Vec<String> = lock(&seen).iter().map(|r| r.path.clone()).collect();
        assert!(
            !paths.iter().any(|p| p.contains("mismatched-as")),
            "{paths:?}"
        );
    }
}

#[test]
fn metadata_of_the_issuer_is_used() {
    // Byte-identical, with a path (RFC 8414 §3.1 path insertion), then the token request.
    let (base, seen) = serve(Box::new(|r, base| match r.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => prm(base, Some(&format!("{base}/tenant1"))),
        "/.well-known/oauth-authorization-server/tenant1" => json_reply(
            200,
            json!({"issuer": format!("{base}/tenant1"), "token_endpoint": format!("{base}/tenant1/token")}),
        ),
        "/tenant1/token" => json_reply(
            200,
            json!({"access_token": "at-123456", "token_type": "Bearer"}),
        ),
        _ => json_reply(404, json!({})),
    }));
    let a = auth_for(
        &base,
        json!({"grant": "client_credentials", "clientId": "c", "clientSecret": "s3cret-value"}),
    );
    assert!(matches!(
        denied(&a, "Bearer", None, &mut Refusals::default()),
        Denied::Retry
    ));
    assert_eq!(lock(&seen).last().unwrap().path, "/tenant1/token");
    let h = a.authorization("POST", &Url::parse(&format!("{base}/mcp")).unwrap());
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].1.to_str().unwrap(), "Bearer at-123456");
}

#[test]
fn legacy_issuer_on_the_server_origin_is_taken() {
    // 2025-03-26: no protected-resource metadata; the metadata is at the server's origin and
    // nobody named the issuer: one on that origin is taken (and `iss` is compared with it), one
    // on another origin is refused.
    for (named, ok) in [
        ("{base}", true),
        ("{base}/", true),
        ("{base}/oauth", true),
        ("http://localhost:1/oauth", false),
    ] {
        let named = named.to_string();
        let (base, _seen) = serve(Box::new(move |r, base| match r.path.as_str() {
            "/.well-known/oauth-authorization-server" => json_reply(
                200,
                json!({"issuer": named.replace("{base}", base), "token_endpoint": format!("{base}/token")}),
            ),
            "/token" => json_reply(200, json!({"access_token": "at-legacy-1"})),
            _ => json_reply(404, json!({})),
        }));
        let a = auth_for(
            &base,
            json!({"grant": "client_credentials", "clientId": "c", "clientSecret": "s3cret-value"}),
        );
        match denied(&a, "Bearer", None, &mut Refusals::default()) {
            Denied::Retry => assert!(ok),
            Denied::Fail(why) => {
                assert!(!ok, "{why}");
                assert!(why.contains("not on the server's origin"), "{why}");
            }
            Denied::Pass => panic!("pass"),
        }
    }
}

#[test]
fn jwt_bearer_grant_once_no_browser_no_fallback() {
    let (base, seen) = serve(Box::new(|r, base| match r.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => prm(base, None),
        "/.well-known/oauth-authorization-server" => json_reply(
            200,
            json!({"issuer": base, "token_endpoint": format!("{base}/token"),
                   "authorization_endpoint": format!("{base}/authorize"),
                   "grant_types_supported": [crate::config::auth::JWT_BEARER_GRANT]}),
        ),
        "/token" if r.form().get("assertion").map(String::as_str) == Some("eyJ.good.jwt") => {
            json_reply(
                200,
                json!({"access_token": "at-wif-1", "token_type": "Bearer", "expires_in": 3600}),
            )
        }
        "/token" => json_reply(
            400,
            json!({"error": "invalid_grant", "error_description": "bad eyJ.bad.jwt"}),
        ),
        _ => json_reply(404, json!({})),
    }));
    let a = auth_for(
        &base,
        json!({"grant": "jwt-bearer", "assertion": "eyJ.good.jwt", "clientId": "wl"}),
    );
    assert!(matches!(
        denied(&a, "Bearer", None, &mut Refusals::default()),
        Denied::Retry
    ));
    let tokens: Vec<Seen> = lock(&seen)
        .iter()
        .filter(|r| r.path == "/token")
        .cloned()
        .collect();
    assert_eq!(tokens.len(), 1);
    let f = tokens[0].form();
    assert_eq!(
        f["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(f["assertion"], "eyJ.good.jwt");
    assert_eq!(f["client_id"], "wl");
    assert_eq!(f["resource"], format!("{base}/mcp"));
    assert!(!lock(&seen).iter().any(|r| r.path.contains("authorize")));

    // A file, read at the token request; refused: one request, the server fails, masked.
    let dir = std::env::temp_dir().join(format!("tn-wif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, "eyJ.bad.jwt\n").unwrap();
    let a = auth_for(
        &base,
        json!({"grant": "jwt-bearer", "assertionFile": file.to_str().unwrap()}),
    );
    let before = lock(&seen).iter().filter(|r| r.path == "/token").count();
    let Denied::Fail(why) = denied(&a, "Bearer", None, &mut Refusals::default()) else {
        panic!("not refused")
    };
    assert!(
        why.contains("the jwt-bearer grant was refused: HTTP 400: invalid_grant"),
        "{why}"
    );
    assert!(
        !why.contains("eyJ.bad.jwt"),
        "the assertion is masked: {why}"
    );
    let after: Vec<Seen> = lock(&seen)
        .iter()
        .filter(|r| r.path == "/token")
        .cloned()
        .collect();
    assert_eq!(after.len(), before + 1, "no retry, no other grant");
    assert!(
        !after.last().unwrap().form().contains_key("client_id"),
        "no client configured"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A DPoP authorization server (and its MCP server's metadata) that wants nonces: it checks
/// each proof's shape and answers `use_dpop_nonce` until the proof carries `as-nonce-1`.
fn dpop_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    serve(Box::new(|r, base| match r.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => prm(base, None),
        "/.well-known/oauth-authorization-server" => json_reply(
            200,
            json!({"issuer": base, "token_endpoint": format!("{base}/token"),
                   "dpop_signing_alg_values_supported": ["RS256", "ES256"]}),
        ),
        "/token" => {
            let Some(proof) = r.headers.get("dpop") else {
                return json_reply(
                    200,
                    json!({"access_token": "at-plain-1", "token_type": "Bearer"}),
                );
            };
            let c = jwt_part(proof, 1);
            assert_eq!(c["htm"], "POST");
            assert_eq!(c["htu"], format!("{base}/token"));
            assert!(c.get("ath").is_none());
            if c["nonce"] != "as-nonce-1" {
                return Reply {
                    status: 400,
                    headers: vec![("DPoP-Nonce", "as-nonce-1".into())],
                    body: json!({"error": "use_dpop_nonce"}).to_string(),
                };
            }
            let jkt = {
                let h = jwt_part(proof, 0);
                let jwk = format!(
                    r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
                    h["jwk"]["x"].as_str().unwrap(),
                    h["jwk"]["y"].as_str().unwrap()
                );
                B64.encode(<sha2::Sha256 as sha2::Digest>::digest(jwk.as_bytes()))
            };
            let n = if r.form()["grant_type"] == "refresh_token" {
                2
            } else {
                1
            };
            json_reply(
                200,
                json!({"access_token": format!("at-dpop-{n}.{jkt}"), "token_type": "DPoP",
                       "refresh_token": "rt-dpop-1", "expires_in": 3600}),
            )
        }
        _ => json_reply(404, json!({})),
    }))
}

#[test]
fn dpop_token_and_resource_requests_with_nonces() {
    let (base, seen) = dpop_server();
    let a = auth_for(
        &base,
        json!({"grant": "client_credentials", "clientId": "c", "clientSecret": "s3cret-value"}),
    );
    let mut rounds = Refusals::default();
    assert!(matches!(
        denied(&a, r#"DPoP resource_metadata="x""#, None, &mut rounds),
        Denied::Retry
    ));
    // At the token endpoint: a proof, then the nonce asked for, with a new proof (a new jti).
    let proofs: Vec<String> = lock(&seen)
        .iter()
        .filter(|r| r.path == "/token")
        .map(|r| r.headers["dpop"].clone())
        .collect();
    assert_eq!(proofs.len(), 2);
    assert_eq!(jwt_part(&proofs[1], 1)["nonce"], "as-nonce-1");
    assert_ne!(
        jwt_part(&proofs[0], 1)["jti"],
        jwt_part(&proofs[1], 1)["jti"]
    );
    let key = lock(&a.state).dpop.clone().unwrap();
    let token = format!("at-dpop-1.{}", key.thumbprint());

    // On MCP requests: the DPoP scheme and a fresh proof for the method and URL, with `ath`.
    let url = Url::parse(&format!("{base}/mcp?x=1")).unwrap();
    let h = a.authorization("POST", &url);
    assert_eq!(h[0].0, AUTHORIZATION);
    assert_eq!(h[0].1.to_str().unwrap(), format!("DPoP {token}"));
    assert!(h[0].1.is_sensitive());
    assert_eq!(h[1].0.as_str(), "dpop");
    let c = jwt_part(h[1].1.to_str().unwrap(), 1);
    assert_eq!(c["htm"], "POST");
    assert_eq!(c["htu"], format!("{base}/mcp"));
    assert_eq!(c["ath"], Value::from(dpop::ath(&token)));
    assert!(c.get("nonce").is_none());
    let g = a.authorization("GET", &url);
    let c2 = jwt_part(g[1].1.to_str().unwrap(), 1);
    assert_eq!(c2["htm"], "GET");
    assert_ne!(c["jti"], c2["jti"]);

    // The MCP server's nonce: taken without a new token, at most MAX_NONCES per request.
    let generation = a.generation();
    let mut rounds = Refusals::default();
    let challenge = r#"DPoP error="use_dpop_nonce", resource_metadata="x""#;
    assert!(matches!(
        denied(&a, challenge, Some("rs-nonce-1"), &mut rounds),
        Denied::Retry
    ));
    assert_eq!(a.generation(), generation, "no new token for a nonce");
    let h = a.authorization("POST", &url);
    assert_eq!(jwt_part(h[1].1.to_str().unwrap(), 1)["nonce"], "rs-nonce-1");
    assert!(matches!(
        denied(&a, challenge, Some("rs-nonce-2"), &mut rounds),
        Denied::Retry
    ));
    let Denied::Fail(why) = denied(&a, challenge, Some("rs-nonce-3"), &mut rounds) else {
        panic!("unbounded nonces")
    };
    assert!(why.contains("nonce"), "{why}");
    let tokens_asked = lock(&seen).iter().filter(|r| r.path == "/token").count();
    assert_eq!(tokens_asked, 2);

    // A refresh carries a proof of the same key (RFC 9449 §5), with the nonce known.
    block(a.refresh()).ok().unwrap();
    let last = lock(&seen).last().unwrap().clone();
    assert_eq!(last.form()["grant_type"], "refresh_token");
    let p = jwt_part(&last.headers["dpop"], 1);
    assert_eq!(p["nonce"], "as-nonce-1");
    assert_eq!(
        jwt_part(&last.headers["dpop"], 0)["jwk"],
        jwt_part(&proofs[0], 0)["jwk"]
    );
    let h = a.authorization("POST", &url);
    assert_eq!(
        h[0].1.to_str().unwrap(),
        format!("DPoP at-dpop-2.{}", key.thumbprint())
    );
}

#[test]
fn no_dpop_without_es256_and_bearer_token_types_stay_bearer() {
    // The server lists no ES256: no proof, a bearer token.
    let (base, seen) = serve(Box::new(|r, base| match r.path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => prm(base, None),
        "/.well-known/oauth-authorization-server" => json_reply(
            200,
            json!({"issuer": base, "token_endpoint": format!("{base}/token"),
                   "dpop_signing_alg_values_supported": ["RS256"]}),
        ),
        // Claims DPoP although no proof came: still presented as a bearer token.
        "/token" => json_reply(
            200,
            json!({"access_token": "at-odd-1", "token_type": "DPoP"}),
        ),
        _ => json_reply(404, json!({})),
    }));
    let a = auth_for(
        &base,
        json!({"grant": "client_credentials", "clientId": "c", "clientSecret": "s3cret-value"}),
    );
    assert!(matches!(
        denied(&a, "Bearer", None, &mut Refusals::default()),
        Denied::Retry
    ));
    assert!(lock(&seen).iter().all(|r| !r.headers.contains_key("dpop")));
    let h = a.authorization("POST", &Url::parse(&format!("{base}/mcp")).unwrap());
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].1.to_str().unwrap(), "Bearer at-odd-1");
    // A nonce challenge to a bearer token is an ordinary 401 (here: a new token).
    let mut rounds = Refusals::default();
    let before = a.generation();
    let _ = denied(&a, r#"DPoP error="use_dpop_nonce""#, Some("n"), &mut rounds);
    assert_ne!(a.generation(), before);
}

#[test]
fn dpop_key_is_kept_with_the_tokens_in_the_store() {
    let (base, _seen) = dpop_server();
    let dir = std::env::temp_dir().join(format!("tn-dpop-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("tokens.json");
    let spec = json!({"grant": "client_credentials", "clientId": "c", "clientSecret": "s3cret-value",
                      "store": store.to_str().unwrap()});
    let a = auth_for(&base, spec.clone());
    assert!(matches!(
        denied(&a, "DPoP", None, &mut Refusals::default()),
        Denied::Retry
    ));
    let thumb = lock(&a.state).dpop.as_ref().unwrap().thumbprint();
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    let entry = &kept["entries"][0];
    assert_eq!(entry["tokens"]["tokenType"], "DPoP");
    assert!(entry["dpopKey"].is_string());
    // A second run: the same key, from the store, before any request.
    let b = auth_for(&base, spec);
    block(b.before_send()).unwrap();
    let url = Url::parse(&format!("{base}/mcp")).unwrap();
    let h = b.authorization("POST", &url);
    assert_eq!(h[0].1.to_str().unwrap(), format!("DPoP at-dpop-1.{thumb}"));
    assert_eq!(lock(&b.state).dpop.as_ref().unwrap().thumbprint(), thumb);
    // The key never shows in a message.
    let secret = entry["dpopKey"].as_str().unwrap();
    assert_eq!(b.mask(&format!("x {secret} y")), "x *** y");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn registration_declares_the_application_type() {
    let (base, seen) = serve(Box::new(|r, _base| match r.path.as_str() {
        "/register" => json_reply(201, json!({"client_id": "reg-1"})),
        _ => json_reply(404, json!({})),
    }));
    let a = auth_for(&base, json!({}));
    let d = Discovery {
        resource: format!("{base}/mcp"),
        prm_scopes: None,
        issuer: base.clone(),
        meta: serde_json::from_value(json!({"dpop_signing_alg_values_supported": ["ES256"]}))
            .unwrap(),
        authorize: format!("{base}/authorize"),
        token: format!("{base}/token"),
        register: Some(format!("{base}/register")),
    };
    let reg = format!("{base}/register");
    for (redirect, kind) in [
        ("http://127.0.0.1:4444/callback", "native"),
        ("https://app.example.com/cb", "web"),
    ] {
        block(a.register(&reg, Some(redirect), "authorization_code", &d)).unwrap();
        let last = lock(&seen).last().unwrap().clone();
        assert_eq!(
            (last.method.as_str(), last.path.as_str()),
            ("POST", "/register")
        );
        let body: Value = serde_json::from_str(&last.body).unwrap();
        assert_eq!(body["application_type"], kind);
        assert_eq!(body["redirect_uris"], json!([redirect]));
        assert_eq!(body["dpop_bound_access_tokens"], true);
    }
}
