//! `tn_client` handles (c-api.md "Connecting and calling"): a handle is a registry token, so a
//! call racing `tn_disconnect` finds the client gone (`TN_ERR_CLOSED`) instead of freed memory,
//! and the client itself lives until the last in-flight call has returned.

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::util::IdMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

/// Opaque client handle.
#[allow(non_camel_case_types)]
pub struct tn_client {
    _private: [u8; 0],
}

static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

fn registry() -> &'static RwLock<IdMap<Arc<Client>>> {
    static R: OnceLock<RwLock<IdMap<Arc<Client>>>> = OnceLock::new();
    R.get_or_init(|| RwLock::new(IdMap::default()))
}

/// Registers a client and returns its handle.
pub fn register(client: Client) -> *mut tn_client {
    let token = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    registry()
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(token, Arc::new(client));
    token as usize as *mut tn_client
}

/// The client behind a handle, or an error naming what was wrong.
pub fn lookup(handle: *const tn_client) -> Result<Arc<Client>> {
    if handle.is_null() {
        return Err(Error::invalid_argument("`client` is NULL"));
    }
    registry()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&(handle as usize as u64))
        .cloned()
        .ok_or_else(|| Error::new(ErrorKind::Closed, "the client is disconnected"))
}

/// Disconnects (contract §3, architecture "Shutdown order"); idempotent.
pub fn disconnect(handle: *mut tn_client) -> Result<()> {
    if handle.is_null() {
        return Ok(());
    }
    let key = handle as usize as u64;
    let reentrant = match registry()
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
    {
        Some(c) if c.in_own_resolver() => Some("inline resolvers"),
        Some(c) if c.in_own_callback() => {
            Some("callbacks (a call's done or progress, or the event callback)")
        }
        Some(_) => None,
        None => return Ok(()),
    };
    if let Some(place) = reentrant {
        return Err(Error::new(
            ErrorKind::Reentrant,
            format!("tn_disconnect from inside one of this client's {place} would deadlock; the client stays connected"),
        ));
    }
    let Some(client) = registry()
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&key)
    else {
        return Ok(()); // another thread is disconnecting it
    };
    client.close_begin();
    // Callers woke with TN_ERR_CLOSED; one blocked writing to a stuck child leaves once the
    // shutdown below kills it.
    wait_for_calls(&client, Duration::from_millis(200));
    client.close_finish();
    wait_for_calls(&client, Duration::from_secs(5));
    Ok(())
}

fn wait_for_calls(client: &Arc<Client>, within: Duration) {
    let deadline = Instant::now() + within;
    while Arc::strong_count(client) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}
