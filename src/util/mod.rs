//! The small helpers every layer uses, at the bottom of the house (docs/module-map.md): locking through a
//! poisoned mutex, starting a library thread (SIGPIPE blocked on it), cutting and masking text
//! for messages (§9), and the process-wide timer. Nothing here knows MCP.

pub(crate) mod secrets;
pub(crate) mod timer;

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks a mutex, going on through poisoning (the data is plain and stays consistent).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads a lock, going on through poisoning (as [`lock`]).
pub(crate) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|p| p.into_inner())
}

/// Writes a lock, going on through poisoning (as [`lock`]).
pub(crate) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|p| p.into_inner())
}

/// A map keyed by ids the library hands out itself (request ids, progress tokens, handle
/// tokens), hashed with [`IdHasher`].
pub(crate) type IdMap<V> =
    std::collections::HashMap<u64, V, std::hash::BuildHasherDefault<IdHasher>>;

/// A hasher for `u64` ids the library hands out itself (so no one can choose them to collide):
/// one multiply (Fibonacci hashing), where SipHash costs about a hundred instructions per
/// lookup on the per-call path (bench/README.md).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `u64` keys; anything else still hashes, byte by byte.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A pseudo-random fraction in [0, 1) for backoff jitter (a hash of the clock and a fresh
/// random state: no need for a real generator).
pub(crate) fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Milliseconds since the Unix epoch (0 on a clock set before it).
pub(crate) fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis().min(u64::MAX as u128) as u64)
        .unwrap_or(0)
}

/// Starts a library thread named `name` with SIGPIPE blocked on it for its whole life (a cdylib
/// does not ignore SIGPIPE the way a Rust executable does, c-api.md). Every thread the library
/// starts goes through here.
pub(crate) fn spawn<T: Send + 'static, F: FnOnce() -> T + Send + 'static>(
    name: impl Into<String>,
    f: F,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    spawn_sized(name, None, f)
}

/// [`spawn`] with a stack of `stack` bytes (threads that do little: the timer, the stderr drain).
pub(crate) fn spawn_sized<T: Send + 'static, F: FnOnce() -> T + Send + 'static>(
    name: impl Into<String>,
    stack: Option<usize>,
    f: F,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    let mut b = std::thread::Builder::new().name(name.into());
    if let Some(size) = stack {
        b = b.stack_size(size);
    }
    b.spawn(move || {
        crate::sys::block_sigpipe_on_this_thread();
        f()
    })
}

/// How much of a value (a uri, a name, a server's text) a message quotes: the one limit, so
/// that every message cuts alike.
pub(crate) const QUOTED: usize = 200;

/// `s` as a message quotes it: [`cut`] to [`QUOTED`] bytes.
pub(crate) fn quoted(s: &str) -> String {
    cut(s, QUOTED)
}

/// `s` cut to at most `max` bytes at a character boundary, with `…` when cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let end = (0..=max)
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}…", &s[..end])
}

/// A URL for a message: scheme, host, port and path, without userinfo, query or fragment (they
/// may hold secrets, §9).
pub(crate) fn redact(url: &url::Url) -> String {
    format!(
        "{}://{}{}{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port().map(|p| format!(":{p}")).unwrap_or_default(),
        url.path()
    )
}

/// Seconds since the Unix epoch (0 on a clock set before it): token expiry and JWT `iat`/`exp`
/// (§8).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted() {
        let u = url::Url::parse("https://u:p@h.test:8443/mcp?k=secret#f").unwrap();
        assert_eq!(redact(&u), "https://h.test:8443/mcp");
    }

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("ééé", 3), "é…");
        assert_eq!(cut("abc", 5), "abc");
    }
}
