//! `auth.store` (contract §8): a JSON file, mode 0600, of entries keyed by resource, issuer and
//! client id. Every write is atomic (a 0600 temp file renamed into place) under an exclusive
//! lock on a sibling `.lock` file, and a refresh reads the file again first, so that two
//! processes never lose a rotated refresh token.

use super::flow::{ClientId, Tokens};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredToken {
    pub resource: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub client: ClientId,
    pub tokens: Tokens,
    /// The private DPoP key the tokens are bound to (RFC 9449), base64url; absent for bearer
    /// tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File_ {
    #[serde(default)]
    entries: Vec<StoredToken>,
}

pub(super) struct Store {
    path: PathBuf,
}

fn lock_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

impl Store {
    pub fn new(path: &str) -> Store {
        Store {
            path: PathBuf::from(path),
        }
    }

    pub fn path(&self) -> String {
        self.path.display().to_string()
    }

    fn lock(&self) -> Result<File, String> {
        let f = crate::sys::fs::open_owner_only(
            OpenOptions::new().create(true).truncate(false).write(true),
            &lock_path(&self.path),
        )
        .map_err(|e| {
            format!(
                "`auth.store` ({}): cannot open its lock file: {e}",
                self.path()
            )
        })?;
        f.lock()
            .map_err(|e| format!("`auth.store` ({}): cannot lock it: {e}", self.path()))?;
        Ok(f)
    }

    fn read(&self) -> Result<File_, String> {
        match std::fs::read(&self.path) {
            Ok(b) if b.iter().all(u8::is_ascii_whitespace) => Ok(File_::default()),
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                format!(
                    "`auth.store` ({}) is not a token store ({e}); delete it to log in again",
                    self.path()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(File_::default()),
            Err(e) => Err(format!(
                "`auth.store` ({}) cannot be read: {e}",
                self.path()
            )),
        }
    }

    /// The entry for this resource (the server URL is covered by it) and, when configured,
    /// client id; the most recently written wins.
    pub fn find(
        &self,
        server: &url::Url,
        client_id: Option<&str>,
    ) -> Result<Option<StoredToken>, String> {
        let _l = self.lock()?;
        Ok(self.read()?.entries.into_iter().rev().find(|e| {
            super::flow::resource_covers(&e.resource, server)
                && client_id.is_none_or(|c| c == e.client.id)
        }))
    }

    /// Replaces the entry with the same resource, issuer and client id (or adds it).
    pub fn put(&self, entry: &StoredToken) -> Result<(), String> {
        let _l = self.lock()?;
        let mut f = self.read()?;
        f.entries.retain(|e| {
            !(e.resource == entry.resource
                && e.issuer == entry.issuer
                && e.client.id == entry.client.id)
        });
        f.entries.push(entry.clone());
        let text = serde_json::to_vec_pretty(&f).map_err(|e| e.to_string())?;
        let mut tmp = self.path.as_os_str().to_owned();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let write = || -> std::io::Result<()> {
            let mut t = crate::sys::fs::open_owner_only(
                OpenOptions::new().create(true).truncate(true).write(true),
                &tmp,
            )?;
            t.write_all(&text)?;
            t.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("`auth.store` ({}) cannot be written: {e}", self.path())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_mode_and_keys() {
        let dir = std::env::temp_dir().join(format!("tn-store-{}", std::process::id()));
        // A run that failed leaves its directory, and process ids come round again (soon under Wine).
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        let s = Store::new(path.to_str().unwrap());
        let server = url::Url::parse("http://localhost:1/mcp").unwrap();
        assert_eq!(s.find(&server, None).unwrap(), None);
        let mut e = StoredToken {
            resource: "http://localhost:1/mcp".into(),
            issuer: "http://localhost:2".into(),
            token_endpoint: "http://localhost:2/token".into(),
            client: ClientId {
                id: "c1".into(),
                secret: None,
                method: "none".into(),
                redirect_uri: None,
            },
            tokens: Tokens {
                access_token: "a1".into(),
                refresh_token: Some("r1".into()),
                expires_at: Some(1),
                lifetime: None,
                scope: None,
                token_type: None,
            },
            dpop_key: None,
        };
        s.put(&e).unwrap();
        e.tokens.access_token = "a2".into();
        s.put(&e).unwrap();
        // Mode 0600 on POSIX; on Windows one DACL entry, the current user's, not inherited
        // (not readable back under Wine: Unsupported there).
        for p in [path.clone(), lock_path(&path)] {
            match crate::sys::fs::is_owner_only(&p) {
                Err(e) if cfg!(windows) && e.kind() == std::io::ErrorKind::Unsupported => {}
                r => assert!(r.unwrap(), "{} is owner-only", p.display()),
            }
        }
        let got = s.find(&server, Some("c1")).unwrap().unwrap();
        assert_eq!(got.tokens.access_token, "a2");
        assert_eq!(s.find(&server, Some("other")).unwrap(), None);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"resource\"").count(), 1);
        std::fs::write(&path, "nope").unwrap();
        assert!(s.find(&server, None).unwrap_err().contains("delete it"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
