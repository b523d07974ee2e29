//! The network under both HTTP clients and the authorization flow (contract §5, §8, §9): the
//! process-wide runtime the async I/O runs on, one reqwest client per distinct TLS and proxy
//! settings (shared by the servers that have them), the TLS configuration both HTTP clients use
//! ([`tls`], built once per settings), the same-origin redirect rule, and failures told in words.

pub(crate) mod tls;

use crate::config::NetSpec;
use crate::util::lock;
use reqwest::Url;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The process-wide runtime for HTTP I/O, created on first use (only when a remote server is
/// configured). Two workers: all they do is move bytes.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolnexus-http")
            .on_thread_start(crate::sys::block_sigpipe_on_this_thread)
            .enable_all()
            .build()
            .expect("cannot start the HTTP runtime")
    })
}

/// The environment variables a client's trust store and proxies are read from.
const ENV_KEYS: [&str; 10] = [
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// What makes two clients interchangeable: the files' contents (not their names: a rewritten
/// CA file takes effect), the proxy choice, and the environment they were read under.
#[derive(PartialEq, Eq, Hash, Clone)]
pub(crate) struct Key {
    pub(crate) ca: Option<Vec<u8>>,
    pub(crate) identity: Option<Vec<u8>>,
    proxy: Option<String>,
    env: Vec<Option<String>>,
}

fn read(key: &str, path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("`{key}` ({path}) cannot be read: {e}"))
}

static CLIENTS: OnceLock<Mutex<HashMap<Key, reqwest::Client>>> = OnceLock::new();

/// The settings of `net` as a cache key (the files read now).
pub(crate) fn key_of(net: &NetSpec) -> Result<Key, String> {
    let ca = match &net.ca_file {
        Some(p) => Some(read("tls.caFile", p)?),
        None => None,
    };
    let identity = match (&net.cert_file, &net.key_file) {
        (Some(c), Some(k)) => {
            let mut pem = read("tls.certFile", c)?;
            pem.push(b'\n');
            pem.extend(read("tls.keyFile", k)?);
            Some(pem)
        }
        _ => None,
    };
    Ok(Key {
        ca,
        identity,
        proxy: net.proxy.clone(),
        env: ENV_KEYS.iter().map(|k| std::env::var(k).ok()).collect(),
    })
}

/// The client for `net`, built once per distinct settings and shared (§5).
pub(crate) fn shared(net: &NetSpec) -> Result<reqwest::Client, String> {
    let key = key_of(net)?;
    let clients = CLIENTS.get_or_init(Default::default);
    if let Some(c) = lock(clients).get(&key) {
        return Ok(c.clone());
    }
    let client = build(&key, net)?;
    Ok(lock(clients).entry(key).or_insert(client).clone())
}

fn build(key: &Key, net: &NetSpec) -> Result<reqwest::Client, String> {
    let _guard = runtime().enter();
    // The one TLS configuration (the direct path uses the same, HTTP/1.1 only).
    let tls = tls::build(key, net, tls::Alpn::Http2AndHttp1)?;
    let mut b = reqwest::Client::builder()
        .redirect(same_origin_redirects())
        .use_preconfigured_tls(tls);
    match net.proxy.as_deref() {
        None => {} // the proxy variables
        Some("") => b = b.no_proxy(),
        Some(url) => {
            let p = reqwest::Proxy::all(url).map_err(|_| {
                "`proxy` is not a valid proxy URL (it is not repeated here: it may hold a password)"
                    .to_string()
            })?;
            b = b.proxy(p);
        }
    }
    b.build()
        .map_err(|e| format!("cannot build the HTTP client: {}", explain_reqwest(e)))
}

/// A reqwest failure in words a person can act on; never with the URL (its query may hold
/// secrets). Certificate failures say what was wrong and how to trust a private CA (§5).
pub(crate) fn explain_reqwest(e: reqwest::Error) -> String {
    if let Some(tls) = tls_failure(&e) {
        return tls;
    }
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_redirect() {
        "redirect refused"
    } else if e.is_body() || e.is_decode() {
        "reading the body failed"
    } else {
        "request failed"
    };
    let e = e.without_url();
    let mut msg = format!("{kind}: {e}");
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    msg
}

/// The rustls error somewhere in `e`'s chain (io::Errors nest it, and their `source` skips
/// it), told in words.
pub(crate) fn tls_failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let mut inner: Option<&(dyn std::error::Error + 'static)> = Some(err);
        while let Some(i) = inner {
            if let Some(t) = i.downcast_ref::<rustls::Error>() {
                return Some(explain_tls(t));
            }
            inner = i
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .map(|x| x as &(dyn std::error::Error + 'static));
        }
        cur = err.source();
    }
    None
}

fn explain_tls(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C};
    let what = match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::UnknownIssuer => "the server's certificate is signed by an unknown issuer (not in the trusted roots); to trust a private CA, set `tls.caFile` for this server, or SSL_CERT_FILE / SSL_CERT_DIR for the process".to_string(),
            C::NotValidForName | C::NotValidForNameContext { .. } => format!("the server's certificate does not match its host name ({e})"),
            C::Expired | C::ExpiredContext { .. } => "the server's certificate has expired".to_string(),
            C::NotValidYet | C::NotValidYetContext { .. } => "the server's certificate is not valid yet".to_string(),
            C::Revoked => "the server's certificate is revoked".to_string(),
            other => format!("the server's certificate was rejected ({other:?})"),
        },
        rustls::Error::AlertReceived(A::CertificateRequired) => {
            "the server requires a client certificate (set `tls.certFile` and `tls.keyFile`)".to_string()
        }
        rustls::Error::AlertReceived(a @ (A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::UnsupportedCertificate | A::CertificateExpired | A::CertificateRevoked | A::AccessDenied | A::HandshakeFailure)) => {
            format!("the server refused the TLS handshake ({a:?}): a client certificate may be required or not accepted (`tls.certFile`, `tls.keyFile`)")
        }
        other => format!("{other}"),
    };
    format!("TLS failed: {what}")
}

/// Redirects followed at most (same origin only, §9).
const MAX_REDIRECTS: usize = 8;

/// Follows redirects only within the configured origin (§9): configured headers and tokens are
/// never sent to another origin, and the failure names the origin that was refused.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().map(Url::origin);
        if first.as_ref().is_some_and(|o| *o != attempt.url().origin()) {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(format!(
                "the server redirected to another origin ({to}); refused, so that configured headers never leave the configured origin"
            ))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built() -> usize {
        CLIENTS.get().map_or(0, |c| lock(c).len())
    }

    #[test]
    fn servers_with_equal_settings_share_one_client() {
        let direct = NetSpec {
            proxy: Some(String::new()),
            ..NetSpec::default()
        };
        let before = built();
        shared(&direct).unwrap();
        shared(&direct.clone()).unwrap();
        assert_eq!(built(), before + 1, "equal settings: one client");
        let proxied = NetSpec {
            proxy: Some("http://127.0.0.1:9".into()),
            ..NetSpec::default()
        };
        shared(&proxied).unwrap();
        assert_eq!(built(), before + 2, "another proxy: another client");
        let missing = NetSpec {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..NetSpec::default()
        };
        let e = shared(&missing).unwrap_err();
        assert!(
            e.starts_with("`tls.caFile` (/nonexistent/ca.pem) cannot be read"),
            "{e}"
        );
    }
}
