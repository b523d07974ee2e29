//! TLS for the direct path (contract §5): a rustls client configuration with the trust the
//! async path's client has (the platform's store, SSL_CERT_FILE / SSL_CERT_DIR, a server's
//! `tls.caFile`) and its client certificate (`tls.certFile` / `tls.keyFile`), built once per
//! distinct settings. Only HTTP/1.1 is offered (ALPN), which is what the direct path speaks.

use super::{key_of, Key};
use crate::config::NetSpec;
use crate::conn::lock;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

static CONFIGS: OnceLock<Mutex<HashMap<Key, Arc<rustls::ClientConfig>>>> = OnceLock::new();

/// The configuration for `net`; an error when its files do not hold what they should (the
/// async path then reports it in words).
pub(super) fn config(net: &NetSpec) -> Result<Arc<rustls::ClientConfig>, String> {
    let key = key_of(net)?;
    let configs = CONFIGS.get_or_init(Default::default);
    if let Some(c) = lock(configs).get(&key) {
        return Ok(c.clone());
    }
    let c = Arc::new(build(&key)?);
    Ok(lock(configs).entry(key).or_insert(c).clone())
}

fn build(key: &Key) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for der in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(der);
    }
    if let Some(pem) = &key.ca {
        for c in CertificateDer::pem_slice_iter(pem) {
            roots
                .add(c.map_err(|e| format!("tls.caFile: {e}"))?)
                .map_err(|e| format!("tls.caFile: {e}"))?;
        }
    }
    if roots.is_empty() {
        // The async path falls back to compiled-in roots here; the direct path leaves it to it.
        return Err("no trusted roots".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let mut config = match &key.identity {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let certs = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("tls.certFile: {e}"))?;
            let key =
                PrivateKeyDer::from_pem_slice(pem).map_err(|e| format!("tls.keyFile: {e}"))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| e.to_string())?
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}
