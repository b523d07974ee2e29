//! The connection's reader thread and what it is handed (contract §5): every inbound message
//! of the async client (and every server request the direct client meets) is filed there, one
//! at a time, as a stdio reader files lines, so the resolver runs inline there and never on the
//! runtime or a caller's thread. The queue is bounded: past it, notifications are dropped and
//! counted, and anything else waits.

use crate::request::RequestError;
use crate::transport::Inbound;
use crate::util::lock;
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use tokio::sync::mpsc;

/// Messages queued for the reader thread at most; past it notifications are dropped and
/// counted, and other messages wait (the stream is read no further), as a stdio pipe does.
pub(super) const INBOX_CAPACITY: usize = 1024;

/// What the reader thread is handed.
pub(super) enum Inbox {
    /// A message (JSON text), and the request whose stream carried it.
    Message(String, Option<u64>),
    FailOne(u64, RequestError),
    FailAll(RequestError),
}

/// The reader thread, and what tells that it ended (its sender is dropped when it does).
pub(super) type Reader = (JoinHandle<()>, std::sync::mpsc::Receiver<()>);

thread_local! {
    /// Set on a connection's reader thread: the answers its inline resolvers give go out
    /// directly, before it reads on (as a stdio reader writes its answers).
    static ON_READER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is a connection's reader (its answers go out the direct way).
pub(super) fn on_reader_thread() -> bool {
    ON_READER.with(std::cell::Cell::get)
}

/// The sending end of a connection's inbox: what its HTTP clients file messages through.
pub(super) struct Filing {
    tx: Mutex<Option<mpsc::Sender<Inbox>>>,
    inbound: Weak<dyn Inbound>,
}

impl Filing {
    /// Hands a message to the reader thread. When it is behind by [`INBOX_CAPACITY`] messages,
    /// a notification is dropped (and counted); anything else waits for room.
    pub(super) async fn file(&self, item: Inbox) {
        let Some(tx) = lock(&self.tx).clone() else {
            return;
        };
        match tx.try_send(item) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(item)) => {
                if let Inbox::Message(text, _) = &item {
                    if is_notification(text) {
                        if let Some(conn) = self.inbound.upgrade() {
                            conn.dropped();
                        }
                        return;
                    }
                }
                let _ = tx.send(item).await;
            }
        }
    }

    /// [`Filing::file`] from a thread outside the runtime (the direct client): a server
    /// request is never dropped, so this waits for room when the reader is behind.
    pub(super) fn file_blocking(&self, item: Inbox) {
        let Some(tx) = lock(&self.tx).clone() else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(item)) = tx.try_send(item) {
            if tokio::runtime::Handle::try_current().is_err() {
                let _ = tx.blocking_send(item);
            }
        }
    }

    /// No more messages: the reader thread ends once it has filed what is queued.
    pub(super) fn close(&self) {
        lock(&self.tx).take();
    }
}

/// Whether `text` is a notification (a `method` and no `id`): the only kind of message that may
/// be dropped when the reader falls behind (§5).
fn is_notification(text: &str) -> bool {
    crate::json::scan::top_level(text.as_bytes())
        .is_some_and(|t| t.method.is_some() && t.id.is_none_or(|id| id == b"null"))
}

/// Starts server `server`'s reader thread, filing into `inbound`; the [`Filing`] end of its
/// queue, and the thread.
pub(super) fn start(server: &str, inbound: &Arc<dyn Inbound>) -> Result<(Filing, Reader), String> {
    let (tx, mut rx) = mpsc::channel::<Inbox>(INBOX_CAPACITY);
    let reader_conn = inbound.clone();
    let (ended_tx, ended_rx) = std::sync::mpsc::channel::<()>();
    let h = crate::util::spawn(format!("tn-http-{server}"), move || {
        let _ended = ended_tx;
        ON_READER.with(|a| a.set(true));
        let run = std::panic::AssertUnwindSafe(|| {
            while let Some(item) = rx.blocking_recv() {
                match item {
                    Inbox::Message(text, carrier) => reader_conn.message(text.as_bytes(), carrier),
                    Inbox::FailOne(id, f) => reader_conn.fail_one(id, f),
                    Inbox::FailAll(f) => reader_conn.fail_all(f),
                }
            }
        });
        if std::panic::catch_unwind(run).is_err() {
            reader_conn.fail_all(RequestError::Lost(
                "internal error: the reader thread panicked (a bug in toolnexus)".into(),
            ));
        }
    })
    .map_err(|e| format!("cannot start the reader thread: {e}"))?;
    let filing = Filing {
        tx: Mutex::new(Some(tx)),
        inbound: Arc::downgrade(inbound),
    };
    Ok((filing, (h, ended_rx)))
}
