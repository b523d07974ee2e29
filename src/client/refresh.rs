//! Keeping tool lists fresh (docs/live-servers.md): a server that says its list changed
//! (`notifications/tools/list_changed`, in MCP 2026-07-28 on the `subscriptions/listen`
//! subscription) is listed again, every page as at connect, on a thread of its own (never the
//! reader that carried the notice: it must read the answer); changes that arrive meanwhile
//! coalesce into one more listing. A modern listing with a `ttlMs` is listed again when the
//! tool list is next asked for after it ran out, and not before unless the server said it
//! changed. The new listing replaces the old one in the index whole ([`Inner::rebuild`]).

use super::servers::{note_listing, Inner, Phase};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lists server `idx`'s tools again soon (a change was announced); never waits.
pub(crate) fn request(inner: &Arc<Inner>, idx: usize) {
    if inner.is_closed() {
        return;
    }
    let slot = &inner.slots[idx];
    let mut st = slot.lock();
    match st.phase {
        Phase::Connected => {}
        Phase::Opening => {
            st.changed_while_opening = true;
            return;
        }
        // A server that comes back is listed anew anyway.
        _ => return,
    }
    if st.refreshing {
        st.refresh_again = true;
        return;
    }
    st.refreshing = true;
    drop(st);
    let me = inner.clone();
    if !inner.spawn(format!("tn-refresh-{}", slot.name), move || run(&me, idx)) {
        let mut st = slot.lock();
        st.refreshing = false;
        st.refresh_error = Some("no thread to list the tools again".into());
    }
}

/// The refresh thread of server `idx`: lists until no change arrived during the last listing.
fn run(inner: &Arc<Inner>, idx: usize) {
    let slot = &inner.slots[idx];
    loop {
        let session = {
            let mut st = slot.lock();
            st.refresh_again = false;
            match (&st.phase, st.session.clone()) {
                (Phase::Connected, Some(s)) if !inner.is_closed() && !s.conn.is_dead() => s,
                _ => {
                    st.refreshing = false;
                    st.refreshes += 1;
                    slot.changed.notify_all();
                    return;
                }
            }
        };
        let listed = session.list_tools();
        let mut st = slot.lock();
        let current = st
            .session
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &session));
        let installed = match listed {
            // Only onto the session it was listed on (a restart may have come between).
            Ok(listing) if current => {
                note_listing(&mut st, listing);
                true
            }
            Ok(_) => false,
            Err(e) => {
                // The old listing stays (stale is better than none), and is tried again once
                // as long again has passed.
                st.refresh_error = Some(e.message);
                st.fresh_until = st.ttl.and_then(|t| Instant::now().checked_add(t));
                false
            }
        };
        drop(st);
        if installed {
            inner.rebuild();
        }
        let mut st = slot.lock();
        if st.refresh_again && !inner.is_closed() {
            continue;
        }
        st.refreshing = false;
        st.refreshes += 1;
        slot.changed.notify_all();
        return;
    }
}

/// Before the tool list is read (MCP 2026-07-28 caching): every connected server
/// whose listing's `ttlMs` ran out is listed again, and waited for within its `timeout`;
/// not from inside a server's own inline resolver, whose reader could not read the answer (the
/// stale list is read then, and the listing goes on in the background).
pub(crate) fn ensure_fresh(inner: &Arc<Inner>) {
    let now = Instant::now();
    let mut waits: Vec<(usize, u64, Duration)> = Vec::new();
    for (idx, slot) in inner.slots.iter().enumerate() {
        let st = slot.lock();
        let stale =
            matches!(st.phase, Phase::Connected) && st.fresh_until.is_some_and(|t| t <= now);
        if !stale {
            continue;
        }
        let own = st
            .session
            .as_ref()
            .is_some_and(|s| crate::host::in_own_resolver(&s.conn));
        let done = st.refreshes;
        let timeout = slot.spec.as_ref().map_or(Duration::ZERO, |s| s.timeout);
        drop(st);
        {
            // Stale until the new listing is in: asked once, not once per reader.
            let mut st = slot.lock();
            st.fresh_until = None;
        }
        request(inner, idx);
        if !own {
            waits.push((idx, done, timeout));
        }
    }
    for (idx, done, timeout) in waits {
        let slot = &inner.slots[idx];
        let deadline = Instant::now() + timeout;
        let mut st = slot.lock();
        while st.refreshes == done && !inner.is_closed() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = slot.wait(st, left);
        }
    }
}
