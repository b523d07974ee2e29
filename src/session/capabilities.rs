//! What a server declared it offers (its `initialize` result's or DiscoverResult's
//! `capabilities`): the Skills extension, resources (and their subscriptions and list changes),
//! prompts, completions. A 2026-07-28 server whose probe was answered with an error has told
//! nothing yet: it is asked with `server/discover` when first needed, until it answers.

use super::{modern, Era, Session};
use crate::conn::RequestError;
use crate::util::lock;
use serde_json::Value;

impl Session {
    /// Notes the capabilities of an `initialize` result or a DiscoverResult.
    pub(super) fn learned_capabilities(&self, result: &Value) {
        if let Some(c) = result.get("capabilities") {
            *lock(&self.capabilities) = Some(c.clone());
        }
    }

    /// The server's capabilities (None: unknown; a server that told none is `Null`).
    pub(super) fn known_capabilities(&self) -> Option<Value> {
        if let Some(c) = lock(&self.capabilities).as_ref() {
            return Some(c.clone());
        }
        if self.era != Era::Modern {
            return None;
        }
        let caps = match self.value("server/discover", "", None) {
            Ok(v) if modern::is_discover_result(&v) => v.get("capabilities").cloned(),
            // The server answered, and told nothing: it is not asked again.
            Ok(_) | Err(RequestError::Rpc(_)) => None,
            // No answer (a timeout, a lost connection): asked again next time.
            Err(_) => return None,
        };
        let caps = caps.unwrap_or(Value::Null);
        *lock(&self.capabilities) = Some(caps.clone());
        Some(caps)
    }

    /// Whether the capabilities hold `pointer` (`/resources`, `/resources/subscribe`), as an
    /// object or `true`.
    pub(crate) fn declares(&self, pointer: &str) -> bool {
        self.known_capabilities()
            .as_ref()
            .and_then(|c| c.pointer(pointer))
            .is_some_and(|v| v.is_object() || v.as_bool() == Some(true))
    }
}
