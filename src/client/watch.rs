//! What one server's connections tell the client (docs/live-servers.md), as the connection's
//! [`Watcher`]: a changed tool list is listed again ([`super::refresh`]), as are changed
//! resource and prompt lists ([`super::catalog`]); a resource update is an event; a log message is
//! handed to the host's event callback at or above `logLevel`, a connection that failed is
//! brought back ([`super::restart`]). Called on the thread that read or failed (a reader), so
//! nothing here waits: work goes to threads of its own, events to the bounded queue.

use super::servers::Inner;
use crate::config::LogLevel;
use crate::conn::{Conn, RequestError, Watcher};
use serde_json::Value;
use std::sync::{Arc, Weak};

/// Watches the connections of server `idx` of a client.
pub(crate) struct SlotWatch {
    pub(crate) inner: Weak<Inner>,
    pub(crate) idx: usize,
}

impl SlotWatch {
    /// Whether `conn` is the server's current connection (not an old one, nor one being
    /// opened).
    fn is_current(inner: &Inner, idx: usize, conn: &Conn) -> bool {
        inner.slots[idx]
            .lock()
            .session
            .as_ref()
            .is_some_and(|s| std::ptr::eq(Arc::as_ptr(&s.conn), conn))
    }
}

impl Watcher for SlotWatch {
    fn notification(&self, conn: &Conn, method: &str, params: Option<Value>) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        if inner.is_closed() {
            return;
        }
        match method {
            "notifications/tools/list_changed" => super::refresh::request(&inner, self.idx),
            "notifications/subscriptions/acknowledged" => {
                // A listen acknowledged a second time was opened again after a break (the HTTP
                // transport reopens a stream that ended): changes may have been missed. A new
                // listen that replaced another (a subscription changed) is no break. The count
                // is the connection's, so the first acknowledgement counts even when it came
                // before the session was installed.
                let again = crate::conn::subscriptions::stamp(params.as_ref())
                    .is_some_and(|id| conn.listens.acks(id) > 1)
                    && Self::is_current(&inner, self.idx, conn);
                if again {
                    super::refresh::request(&inner, self.idx);
                    super::catalog::changed(&inner, self.idx, super::catalog::Kind::All);
                }
            }
            "notifications/message" => log(&inner, self.idx, params),
            "notifications/resources/updated" => updated(&inner, self.idx, params),
            "notifications/resources/list_changed" => {
                super::catalog::changed(&inner, self.idx, super::catalog::Kind::Resources)
            }
            "notifications/prompts/list_changed" => {
                super::catalog::changed(&inner, self.idx, super::catalog::Kind::Prompts)
            }
            _ => {}
        }
    }

    fn failed(&self, conn: &Conn, why: &RequestError) {
        if let Some(inner) = self.inner.upgrade() {
            super::restart::on_failed(&inner, self.idx, conn, why);
        }
    }

    fn renewed(&self, conn: &Conn) {
        if let Some(inner) = self.inner.upgrade() {
            if Self::is_current(&inner, self.idx, conn) {
                super::refresh::request(&inner, self.idx);
                // A new HTTP session holds none of the old one's subscriptions, and may list
                // other resources and prompts.
                super::catalog::changed(&inner, self.idx, super::catalog::Kind::All);
                super::catalog::subscribe_again(&inner, self.idx);
            }
        }
    }
}

/// A `notifications/message` (params `level`, `logger`, `data`) as a log event, when it is at
/// or above the configured `logLevel` (a server that ignored `logging/setLevel` is filtered
/// here; a level this client does not know is handed on).
fn log(inner: &Inner, idx: usize, params: Option<Value>) {
    if !inner.events.wanted() {
        return;
    }
    let Some(Value::Object(mut p)) = params else {
        return;
    };
    let level = p.get("level").and_then(Value::as_str).map(str::to_string);
    let floor = inner.slots[idx].spec.as_ref().and_then(|s| s.log_level);
    if let (Some(floor), Some(l)) = (floor, level.as_deref().and_then(LogLevel::parse)) {
        if l < floor {
            return;
        }
    }
    let mut e = inner.event("log", idx);
    e.insert("level".into(), level.map_or(Value::Null, Value::String));
    if let Some(l) = p.swap_remove("logger").filter(Value::is_string) {
        e.insert("logger".into(), l);
    }
    e.insert("data".into(), p.swap_remove("data").unwrap_or(Value::Null));
    inner.send(idx, e);
}

/// A `notifications/resources/updated` (params `uri`, perhaps a sub-resource of one subscribed
/// to) as a `resource_updated` event, when the host is subscribed to it (or to a resource it
/// is under): an update that races an unsubscribe, or arrives after it on another stream, is
/// not told.
fn updated(inner: &Inner, idx: usize, params: Option<Value>) {
    if !inner.events.wanted() {
        return;
    }
    let Some(uri) = params
        .as_ref()
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
    else {
        return;
    };
    let subscribed = inner.slots[idx].lock().subscribed.iter().any(|s| {
        uri == s
            || uri
                .strip_prefix(s.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    });
    if !subscribed {
        return;
    }
    let mut e = inner.event("resource_updated", idx);
    e.insert("uri".into(), Value::String(uri.to_string()));
    inner.send(idx, e);
}
