//! What the host has listed of each server's resources, resource templates and prompts, and
//! how long it may be taken as fresh (MCP caching): in 2026-07-28 for the listing's `ttlMs`
//! (0 or absent: not at all); in the handshake era until the server says the list changed,
//! where it declares `listChanged`, else not at all. A change notice (or a server that came
//! back) makes the lists stale; with an event callback registered they are listed again on a
//! thread of their own and what changed is told (`resources`, `prompts` events). A walk that
//! fails keeps the listing held before (stale is better than none; the status says why).

use super::held::{Held, Until};
pub(crate) use super::held::{Kind, List};
use super::servers::Inner;
use crate::mapping::prompts::{self as mp, PromptIndex};
use crate::mapping::resources as mr;
use crate::session::{Era, Session, WalkError};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// The items of list `l` of server `idx` on `session`: the held listing while it is fresh,
/// else every page walked again (the held one when that fails). A server that does not declare
/// the capability has none (nothing is asked), nor does one that answers -32601.
pub(crate) fn get(inner: &Inner, idx: usize, session: &Arc<Session>, l: List) -> Arc<Vec<Value>> {
    let slot = &inner.slots[idx];
    {
        let st = slot.lock();
        if let Some(f) = st.catalog.fresh(l, Instant::now()) {
            return f;
        }
        // From inside this server's own inline resolver its reader could not read the
        // answer: the listing held is read instead (c-api.md "Re-entrancy").
        if crate::host::in_own_resolver(&session.conn) {
            return st.catalog.held(l).unwrap_or_default();
        }
    }
    let generation = slot.lock().catalog.generation[l.at()];
    if !session.declares(l.capability()) {
        // None declared (or no longer, after a restart): nothing is held from before.
        let mut st = slot.lock();
        if st.session.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            st.catalog.held[l.at()] = None;
            st.catalog.errors[l.at()] = None;
        }
        return Arc::default();
    }
    let walked = match l {
        List::Resources => session.list_resources(),
        List::Templates => session.list_resource_templates(),
        List::Prompts => session.list_prompts(),
    };
    let until_changed =
        session.era == Era::Legacy && session.declares(&format!("{}/listChanged", l.capability()));
    let mut st = slot.lock();
    let current = st.session.as_ref().is_some_and(|s| Arc::ptr_eq(s, session));
    let fresh_for = |ttl: Option<std::time::Duration>| match (session.era, ttl) {
        (Era::Modern, Some(t)) => Instant::now().checked_add(t).map_or(Until::Now, Until::At),
        (Era::Modern, None) => Until::Now,
        (Era::Legacy, _) if until_changed => Until::Changed,
        (Era::Legacy, _) => Until::Now,
    };
    let (items, mut until) = match walked {
        Ok(w) => (Arc::new(w.items), fresh_for(w.ttl)),
        // The server has no such method: an empty list, held by the same rules.
        Err(WalkError::NoMethod) => (Arc::default(), fresh_for(None)),
        Err(WalkError::Failed(why)) => {
            if current {
                st.catalog.errors[l.at()] = Some(why);
            }
            return st.catalog.held(l).unwrap_or_default();
        }
    };
    if st.catalog.generation[l.at()] != generation {
        // The server said the list changed while it was walked: what was walked may be from
        // before the change, so it is not taken as fresh.
        until = Until::Now;
    }
    if current {
        st.catalog.errors[l.at()] = None;
        st.catalog.held[l.at()] = Some(Held {
            items: items.clone(),
            until,
        });
    }
    items
}

/// Server `idx` said lists of `kind` changed (or came back): they are stale; with an event
/// callback registered they are listed again now, and what changed is told. Never waits.
pub(crate) fn changed(inner: &Arc<Inner>, idx: usize, kind: Kind) {
    if inner.is_closed() {
        return;
    }
    let slot = &inner.slots[idx];
    let mut st = slot.lock();
    st.catalog.stale(kind.lists());
    for l in kind.lists() {
        st.catalog.generation[l.at()] += 1;
    }
    if !inner.events.wanted() {
        return;
    }
    for l in kind.lists() {
        st.catalog.pending[l.at()] = true;
    }
    if st.catalog.relisting {
        return;
    }
    st.catalog.relisting = true;
    drop(st);
    let me = inner.clone();
    if !inner.spawn(format!("tn-relist-{}", slot.name), move || relist(&me, idx)) {
        slot.lock().catalog.relisting = false;
    }
}

/// The relisting thread of server `idx`: until no change arrived during the last listing.
fn relist(inner: &Arc<Inner>, idx: usize) {
    let slot = &inner.slots[idx];
    loop {
        let (session, lists) = {
            let mut st = slot.lock();
            let lists: Vec<List> = List::ALL
                .into_iter()
                .filter(|l| std::mem::take(&mut st.catalog.pending[l.at()]))
                .collect();
            match st.session.clone() {
                Some(s) if !lists.is_empty() && !inner.is_closed() && !s.conn.is_dead() => {
                    (s, lists)
                }
                _ => {
                    st.catalog.relisting = false;
                    return;
                }
            }
        };
        // Only a list the host has listed is listed again and compared; of one it never
        // listed the event says only that it changed.
        let mut e = inner.event("resources", idx);
        let mut told = false;
        let mut asked = false;
        for l in [List::Resources, List::Templates] {
            if !lists.contains(&l) {
                continue;
            }
            asked = true;
            let Some(before) = slot.lock().catalog.held(l) else {
                continue;
            };
            let after = get(inner, idx, &session, l);
            let c = mr::diff(&before, &after, l.key());
            if c.is_empty() {
                continue;
            }
            told = true;
            if l == List::Resources {
                c.into_members(&mut e);
            } else {
                let mut t = serde_json::Map::new();
                c.into_members(&mut t);
                e.insert("templates".into(), Value::Object(t));
            }
        }
        let never_listed = [List::Resources, List::Templates]
            .iter()
            .all(|l| slot.lock().catalog.held(*l).is_none());
        if told || (asked && never_listed) {
            if told && !e.contains_key("added") && e.contains_key("templates") {
                // Only the templates changed: the resources' members are empty.
                mr::Change::default().into_members(&mut e);
            }
            inner.send(idx, e);
        }
        if lists.contains(&List::Prompts) {
            let before = inner.prompt_index();
            if slot.lock().catalog.held(List::Prompts).is_none() {
                inner.send(idx, inner.event("prompts", idx));
                continue;
            }
            get(inner, idx, &session, List::Prompts);
            let after = rebuild_prompts(inner);
            let c = mp::diff(&before, &after, idx);
            if !c.is_empty() {
                let mut e = inner.event("prompts", idx);
                c.into_members(&mut e);
                inner.send(idx, e);
            }
        }
    }
}

/// Builds the prompt index again from every server's held prompts and swaps it in.
pub(crate) fn rebuild_prompts(inner: &Inner) -> Arc<PromptIndex> {
    let _one = crate::util::lock(&inner.prompts_rebuilding);
    // Connected servers only (a connection that just died included): a failed or restarting
    // server's prompts could not be got.
    let held: Vec<Option<Arc<Vec<Value>>>> = inner
        .slots
        .iter()
        .map(|s| {
            let st = s.lock();
            st.live_session()?;
            st.catalog.held(List::Prompts)
        })
        .collect();
    let sources: Vec<mp::Source<'_>> = inner
        .slots
        .iter()
        .zip(&held)
        .map(|(s, h)| mp::Source {
            name: &s.name,
            prompts: h.as_ref().map(|v| v.as_slice()),
        })
        .collect();
    let previous = inner.prompt_index();
    let index = Arc::new(mp::build(&sources, Some(&previous)));
    *crate::util::write(&inner.prompts) = index.clone();
    index
}

/// Subscribes server `idx`'s current session again to what the host subscribed to (a new HTTP
/// session of the handshake era holds none of the old one's), on a thread of its own (the
/// caller is a reader). What fails is a warning of the status.
pub(crate) fn subscribe_again(inner: &Arc<Inner>, idx: usize) {
    let slot = &inner.slots[idx];
    if slot.lock().subscribed.is_empty() {
        return;
    }
    let me = inner.clone();
    inner.spawn(format!("tn-resubscribe-{}", slot.name), move || {
        let slot = &me.slots[idx];
        let _one = crate::util::lock(&slot.subscribing);
        let (all, session) = {
            let st = slot.lock();
            (st.subscribed.clone(), st.session.clone())
        };
        let Some(session) = session else { return };
        for uri in &all {
            if let Err(e) = session.subscribe(uri, &all) {
                slot.lock().session_warnings.push(e.message);
            }
        }
    });
}
