//! DPoP (RFC 9449, SEP-1932): sender-constrained tokens. When the authorization server's
//! metadata lists ES256 in `dpop_signing_alg_values_supported`, the server's [`super::Auth`]
//! holds one P-256 key (made here from the OS's randomness, or read back from `auth.store` with
//! the tokens bound to it). Every token request (refresh included) then carries a proof of
//! possession of that key (`DPoP` header, `htm` + `htu`), the token it returns is bound to the
//! key's thumbprint (`cnf.jkt`), and every request to the MCP server carries
//! `Authorization: DPoP <token>` and a fresh proof that also names the token (`ath`). A server
//! that wants a nonce says so (`use_dpop_nonce` and a `DPoP-Nonce` header, RFC 9449 §8 and §9):
//! the request is sent once more with a new proof carrying it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha256};
use url::Url;

/// The algorithm of our proofs: the one every DPoP server must accept in practice, and the only
/// one made here.
pub(super) const ALG: &str = "ES256";

/// One server's DPoP key. No `Debug`: the private half never goes into a message.
pub(super) struct DpopKey {
    key: SigningKey,
    /// The public JWK with its required members in lexicographic order and no whitespace: the
    /// `jwk` header of every proof, and the input of the thumbprint (RFC 7638 §3).
    jwk: String,
}

impl DpopKey {
    /// A new key from the OS's randomness.
    pub fn generate() -> DpopKey {
        DpopKey::of(SigningKey::random(&mut OsRng))
    }

    /// The key kept in `auth.store` ([`DpopKey::secret`]).
    pub fn from_secret(secret: &str) -> Result<DpopKey, String> {
        let bytes = B64
            .decode(secret.trim())
            .map_err(|_| "the DPoP key kept in `auth.store` is not base64url".to_string())?;
        let key = SigningKey::from_slice(&bytes).map_err(|_| {
            "the DPoP key kept in `auth.store` is not a P-256 private key".to_string()
        })?;
        Ok(DpopKey::of(key))
    }

    fn of(key: SigningKey) -> DpopKey {
        let point = key.verifying_key().to_encoded_point(false);
        let (x, y) = match (point.x(), point.y()) {
            (Some(x), Some(y)) => (B64.encode(x), B64.encode(y)),
            _ => unreachable!("an uncompressed P-256 point has both coordinates"),
        };
        DpopKey {
            key,
            jwk: public_jwk(&x, &y),
        }
    }

    /// The private scalar, base64url: what `auth.store` keeps beside the tokens bound to it.
    pub fn secret(&self) -> String {
        B64.encode(self.key.to_bytes())
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key (the token's `cnf.jkt`).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn thumbprint(&self) -> String {
        B64.encode(Sha256::digest(self.jwk.as_bytes()))
    }

    /// A proof for one request (RFC 9449 §4.2): `htm` the method, `htu` the URL without query
    /// and fragment, `iat` now, a new random `jti`, the server's `nonce` when it gave one, and
    /// `ath` (the hash of the access token) on a request that presents one.
    pub fn proof(
        &self,
        htm: &str,
        url: &Url,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> String {
        let header = format!(r#"{{"typ":"dpop+jwt","alg":"{ALG}","jwk":{}}}"#, self.jwk);
        let mut jti = [0u8; 16];
        OsRng.fill_bytes(&mut jti);
        let mut claims = serde_json::json!({
            "jti": B64.encode(jti),
            "htm": htm,
            "htu": htu(url),
            "iat": crate::util::unix_now(),
        });
        if let Some(t) = access_token {
            claims["ath"] = ath(t).into();
        }
        if let Some(n) = nonce {
            claims["nonce"] = n.into();
        }
        let input = format!(
            "{}.{}",
            B64.encode(header.as_bytes()),
            B64.encode(claims.to_string().as_bytes())
        );
        let sig: Signature = self.key.sign(input.as_bytes());
        format!("{input}.{}", B64.encode(sig.to_bytes()))
    }
}

/// The public JWK of a P-256 key, in RFC 7638 canonical form.
fn public_jwk(x: &str, y: &str) -> String {
    format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#)
}

/// `ath`: base64url of the SHA-256 of the access token's ASCII (RFC 9449 §4.2).
pub(super) fn ath(access_token: &str) -> String {
    B64.encode(Sha256::digest(access_token.as_bytes()))
}

/// `htu`: the request's URL without its query and fragment (RFC 9449 §4.2).
pub(super) fn htu(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// Whether authorization-server metadata offers DPoP with our algorithm (RFC 9449 §5.1).
pub(super) fn offered(meta: &serde_json::Map<String, serde_json::Value>) -> bool {
    match meta.get("dpop_signing_alg_values_supported") {
        Some(serde_json::Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(ALG)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;
    use serde_json::Value;

    fn part(jwt: &str, i: usize) -> Value {
        serde_json::from_slice(&B64.decode(jwt.split('.').nth(i).unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn rfc_vectors() {
        // RFC 9449 §4.1's key and §6.1's `cnf.jkt` for it; §7.1's access token and its `ath`.
        let jwk = public_jwk(
            "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs",
            "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA",
        );
        assert_eq!(
            B64.encode(Sha256::digest(jwk.as_bytes())),
            "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
        );
        assert_eq!(
            ath("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn proofs_verify_and_are_fresh() {
        let k = DpopKey::generate();
        let url = Url::parse("https://mcp.example.com:8443/mcp?session=1#frag").unwrap();
        let p1 = k.proof("POST", &url, Some("n-1"), Some("tok"));
        let p2 = k.proof("POST", &url, None, None);
        let h = part(&p1, 0);
        assert_eq!(h["typ"], "dpop+jwt");
        assert_eq!(h["alg"], "ES256");
        assert_eq!(h["jwk"]["kty"], "EC");
        assert!(h["jwk"].get("d").is_none(), "never the private key");
        let c = part(&p1, 1);
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], "https://mcp.example.com:8443/mcp");
        assert_eq!(c["nonce"], "n-1");
        assert_eq!(c["ath"], Value::from(ath("tok")));
        assert!((c["iat"].as_u64().unwrap() as i64 - crate::util::unix_now() as i64).abs() < 5);
        let c2 = part(&p2, 1);
        assert_ne!(c["jti"], c2["jti"], "a new jti for every proof");
        assert!(c2.get("ath").is_none() && c2.get("nonce").is_none());
        // The signature verifies with the key the header names.
        let x = B64.decode(h["jwk"]["x"].as_str().unwrap()).unwrap();
        let y = B64.decode(h["jwk"]["y"].as_str().unwrap()).unwrap();
        let mut sec1 = vec![4u8];
        sec1.extend(x);
        sec1.extend(y);
        let vk = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let (input, sig) = p1.rsplit_once('.').unwrap();
        let sig = Signature::from_slice(&B64.decode(sig).unwrap()).unwrap();
        vk.verify(input.as_bytes(), &sig).unwrap();
        // The thumbprint is of that same JWK, canonical.
        let canon = public_jwk(
            h["jwk"]["x"].as_str().unwrap(),
            h["jwk"]["y"].as_str().unwrap(),
        );
        assert_eq!(k.thumbprint(), B64.encode(Sha256::digest(canon.as_bytes())));
    }

    #[test]
    fn kept_key_round_trips() {
        let k = DpopKey::generate();
        let again = DpopKey::from_secret(&k.secret()).unwrap();
        assert_eq!(k.thumbprint(), again.thumbprint());
        assert!(DpopKey::from_secret("not base64!").is_err());
        assert!(DpopKey::from_secret(&B64.encode([0u8; 32])).is_err());
    }

    #[test]
    fn offered_only_with_es256() {
        let m = |t: &str| serde_json::from_str::<serde_json::Map<String, Value>>(t).unwrap();
        assert!(offered(&m(
            r#"{"dpop_signing_alg_values_supported":["RS256","ES256"]}"#
        )));
        assert!(!offered(&m(
            r#"{"dpop_signing_alg_values_supported":["RS256"]}"#
        )));
        assert!(!offered(&m(r#"{}"#)));
    }
}
