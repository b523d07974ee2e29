//! A transport for unit tests (no process, no socket): it records what is sent and files the
//! lines a script answers with on a thread of its own, as a server's reader would. Test-only.

use super::{Inbound, Outgoing, Transport};
use crate::util::lock;
use serde_json::Value;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

/// What the fake server answers to one sent text: the lines it writes back, in order;
/// `"sleep:N"` stands for the server taking N ms.
pub(crate) type Script = Box<dyn Fn(&str) -> Vec<String> + Send + Sync>;

pub(crate) struct Fake {
    pub(crate) sent: Mutex<Vec<String>>,
    script: Script,
    inbound: OnceLock<Weak<dyn Inbound>>,
}

impl Fake {
    pub(crate) fn new(script: impl Fn(&str) -> Vec<String> + Send + Sync + 'static) -> Arc<Fake> {
        Arc::new(Fake {
            sent: Mutex::default(),
            script: Box::new(script),
            inbound: OnceLock::new(),
        })
    }

    /// Where the fake's lines are filed (the connection).
    pub(crate) fn file_into(&self, inbound: &Arc<dyn Inbound>) {
        let _ = self.inbound.set(Arc::downgrade(inbound));
    }

    /// The messages sent, parsed.
    pub(crate) fn sent_values(&self) -> Vec<Value> {
        lock(&self.sent)
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect()
    }
}

/// The `id` of a sent request, if it has one.
pub(crate) fn id_of(text: &str) -> Option<u64> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("id")?
        .as_u64()
}

impl Transport for Fake {
    fn send(&self, msg: &Outgoing<'_>) -> Result<(), String> {
        lock(&self.sent).push(msg.text.to_string());
        let lines = (self.script)(msg.text);
        if let Some(inbound) = self.inbound.get().and_then(Weak::upgrade) {
            std::thread::spawn(move || {
                for l in lines {
                    match l.strip_prefix("sleep:").and_then(|n| n.parse().ok()) {
                        Some(ms) => std::thread::sleep(Duration::from_millis(ms)),
                        None => inbound.message(l.as_bytes(), None),
                    }
                }
            });
        }
        Ok(())
    }

    fn shutdown(&self, _grace: Duration) {}
}
