//! TLS, configured once for both HTTP clients (contract §5): a rustls client
//! configuration on the ring provider with the platform's store (SSL_CERT_FILE / SSL_CERT_DIR
//! honoured; the roots compiled in only when the platform has none at all), a server's
//! `tls.caFile` added, and its client certificate (`tls.certFile` / `tls.keyFile`). The async
//! client offers HTTP/2 and HTTP/1.1 by ALPN; the direct path, which speaks HTTP/1.1, only that.
//! No option turns verification off.

use super::{key_of, Key};
use crate::config::NetSpec;
use crate::util::lock;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Which protocols a configuration offers by ALPN.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Alpn {
    /// The async client (reqwest/hyper).
    Http2AndHttp1,
    /// The direct path.
    Http1,
}

/// The configurations built so far, by settings and ALPN.
type Configs = Mutex<HashMap<(Key, Alpn), Arc<rustls::ClientConfig>>>;

static CONFIGS: OnceLock<Configs> = OnceLock::new();

/// The direct path's configuration for `net`, built once per distinct settings.
pub(crate) fn http1(net: &NetSpec) -> Result<Arc<rustls::ClientConfig>, String> {
    let key = key_of(net)?;
    let configs = CONFIGS.get_or_init(Default::default);
    if let Some(c) = lock(configs).get(&(key.clone(), Alpn::Http1)) {
        return Ok(c.clone());
    }
    let c = Arc::new(build(&key, net, Alpn::Http1)?);
    Ok(lock(configs).entry((key, Alpn::Http1)).or_insert(c).clone())
}

/// A configuration for the settings `key` (read from `net`'s files), offering `alpn`.
pub(crate) fn build(key: &Key, net: &NetSpec, alpn: Alpn) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for der in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(der);
    }
    if roots.is_empty() {
        // A platform with no store at all: the roots compiled in, rather than trusting nothing.
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    if let (Some(pem), Some(path)) = (&key.ca, &net.ca_file) {
        let mut added = 0;
        for c in CertificateDer::pem_slice_iter(pem) {
            let c = c.map_err(|e| format!("`tls.caFile` ({path}) is not PEM certificates: {e}"))?;
            roots
                .add(c)
                .map_err(|e| format!("`tls.caFile` ({path}) is not PEM certificates: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!("`tls.caFile` ({path}) holds no PEM certificate"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let mut config = match &key.identity {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let bad = |e: &dyn std::fmt::Display| {
                format!(
                    "`tls.certFile` ({}) and `tls.keyFile` ({}) are not a PEM certificate and private key: {e}",
                    net.cert_file.as_deref().unwrap_or(""),
                    net.key_file.as_deref().unwrap_or("")
                )
            };
            let certs = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(&e))?;
            if certs.is_empty() {
                return Err(bad(&"no certificate"));
            }
            let key = PrivateKeyDer::from_pem_slice(pem).map_err(|e| bad(&e))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| bad(&e))?
        }
    };
    config.alpn_protocols = match alpn {
        Alpn::Http2AndHttp1 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Alpn::Http1 => vec![b"http/1.1".to_vec()],
    };
    Ok(config)
}
