//! What comes in, filed (architecture principle 2: the reader owns the id match): a response
//! to its waiter as the raw line, a server request to who answers them, a notification to the
//! watcher, lines that are not JSON objects counted and skipped (§5). `Conn` is the transport's
//! [`Inbound`] sink.

use super::{Conn, RequestError, Response};
use crate::json::rpc::{self, LineKind};
use crate::transport::Inbound;
use crate::util::lock;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Conn {
    /// Files one inbound line, which arrived on the stream of request `carrier` (HTTP: an
    /// elicitation there pauses that call's timer only) or on none: a response goes to its
    /// waiter as the raw line with what the one validating pass noted of it ([`rpc::line_kind`]:
    /// `id`, `method`, where `result` and `error` are, a common result's text parts); a
    /// server request goes to who answers them ([`ServerRequests`]); anything else is ignored.
    /// Lines that are not JSON objects are counted and skipped (§5).
    pub(crate) fn on_line_carried(self: &Arc<Self>, line: &[u8], carrier: Option<u64>) {
        // What was done before the sends this line answers happens-before filing it (`sent`).
        self.sent.load(Ordering::Acquire);
        match rpc::line_kind(line) {
            LineKind::Response(id, members) => {
                // `line_kind` validated the JSON; a line that is not UTF-8 is skipped and
                // counted too (§5), even when it names one of our ids.
                let Ok(text) = std::str::from_utf8(line) else {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let waiter = lock(&self.pending).waiters.remove(&id);
                match waiter {
                    Some(w) => {
                        let line = text.to_string();
                        self.finish(id, &w, Ok(Response { line, members }));
                    }
                    // A listen's only answer before its end: an error refusing it.
                    None => self.listens.answered(id, || {
                        rpc::result_value(text)
                            .err()
                            .map(|e| RequestError::Rpc(e).explain(std::time::Duration::ZERO))
                    }),
                }
            }
            // Only the members acted on are built ([`rpc::Envelope`]); UTF-8 is checked
            // first, as parsing the whole line into a Value did (§5: such lines are skipped).
            LineKind::Message => match std::str::from_utf8(line)
                .ok()
                .and_then(|text| serde_json::from_str::<rpc::Envelope>(text).ok())
            {
                // Classified by `method` first: servers number their own requests.
                Some(e) => match (e.method, e.id) {
                    (Some(Value::String(method)), Some(id)) => {
                        self.answering
                            .on_request(self, id, &method, e.params, carrier);
                    }
                    (Some(Value::String(method)), None) if method == "notifications/progress" => {
                        self.on_progress(e.params);
                    }
                    (Some(Value::String(method)), None) => {
                        if !self.listens.file(&method, e.params.as_ref()) {
                            return;
                        }
                        if let Some(w) = self.watcher.get() {
                            w.notification(self, &method, e.params);
                        }
                    }
                    _ => {}
                },
                None => {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                }
            },
            LineKind::Other => {}
            LineKind::Invalid => {
                self.skipped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// What the transports file here (they know this trait, not the connection).
impl Inbound for Conn {
    fn message(&self, line: &[u8], carrier: Option<u64>) {
        if let Some(me) = self.me.upgrade() {
            me.on_line_carried(line, carrier);
        }
    }

    fn fail_all(&self, why: RequestError) {
        self.fail(why);
    }

    fn fail_one(&self, id: u64, why: RequestError) {
        self.fail_request(id, why);
    }

    fn dropped(&self) {
        self.count_dropped();
    }

    fn is_pending(&self, id: u64) -> bool {
        Conn::is_pending(self, id)
    }

    fn is_paused(&self, id: u64) -> bool {
        Conn::is_paused(self, id)
    }
}
