//! Which requests' replies are being read, and by which thread (the direct path, contract §5):
//! a request written and parked for its caller to read on, one in a thread's hands with its
//! socket, one that ended elsewhere (cancelled, failed, answered on another stream) stopped by
//! shutting its socket down.

use super::exchange::Exchange;
use crate::util::lock;
use std::collections::{HashMap, HashSet};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::Mutex;

/// What the direct client parks between its reads of a request's reply, with the socket it
/// reads.
type ParkedExchange = (Arc<TcpStream>, Box<Exchange>);

/// Requests whose reply is being read, and which of them are in a thread's hands.
#[derive(Default)]
struct Table {
    /// Written, waiting for their caller to read on.
    parked: HashMap<u64, ParkedExchange>,
    /// In some thread's hands (being connected, written or read): the socket once there is one,
    /// to shut down when the request ends elsewhere (cancelled, failed, answered elsewhere).
    busy: HashMap<u64, Option<Arc<TcpStream>>>,
    /// Ended elsewhere while busy: the thread stops and drops it.
    ended: HashSet<u64>,
    /// Disconnecting: nothing is pooled or started any more.
    closed: bool,
}

/// The direct path's requests in flight, one server's.
#[derive(Default)]
pub(crate) struct InFlight {
    table: Mutex<Table>,
}

impl InFlight {
    /// Whether request `id` ended elsewhere (or the transport is closing).
    pub(crate) fn ended(&self, id: Option<u64>) -> bool {
        let t = lock(&self.table);
        t.closed || id.is_some_and(|id| t.ended.contains(&id))
    }

    /// Takes request `id` into this thread's hands before anything is sent; false when the
    /// transport is closing.
    pub(crate) fn claim(&self, id: u64) -> bool {
        let mut t = lock(&self.table);
        if t.closed {
            return false;
        }
        t.busy.insert(id, None);
        true
    }

    /// Request `id`'s socket, once there is one; false when the request ended meanwhile
    /// (nothing is written then).
    pub(crate) fn attach(&self, id: u64, sock: &Arc<TcpStream>) -> bool {
        let mut t = lock(&self.table);
        if t.ended.contains(&id) || t.closed {
            return false;
        }
        t.busy.insert(id, Some(sock.clone()));
        true
    }

    /// Takes parked request `id` into this thread's hands; None when it is not on the direct
    /// path, Some(None) when it ended meanwhile.
    pub(crate) fn take_parked(&self, id: u64) -> Option<Option<Box<Exchange>>> {
        let mut t = lock(&self.table);
        let (tcp, ex) = t.parked.remove(&id)?;
        if t.ended.remove(&id) {
            return Some(None);
        }
        t.busy.insert(id, Some(tcp));
        Some(Some(ex))
    }

    /// Gives `id` back: parked for its caller to read on (`ex`, reading `tcp`), unless it ended
    /// meanwhile.
    pub(crate) fn release(&self, id: u64, tcp: &Arc<TcpStream>, ex: Box<Exchange>) {
        let mut t = lock(&self.table);
        t.busy.remove(&id);
        if !t.ended.remove(&id) && !t.closed {
            t.parked.insert(id, (tcp.clone(), ex));
        }
    }

    /// Forgets `id`; true when it ended elsewhere meanwhile (then nothing more is started for
    /// it).
    pub(crate) fn forget(&self, id: u64) -> bool {
        let mut t = lock(&self.table);
        t.busy.remove(&id);
        t.ended.remove(&id) || t.closed
    }

    /// Request `id` ended elsewhere: its reply is not read any further, and whatever phase it
    /// is in (connecting, writing, reading) ends.
    pub(crate) fn end(&self, id: u64) {
        let mut t = lock(&self.table);
        if let Some(s) = t.busy.get(&id) {
            if let Some(s) = s {
                let _ = s.shutdown(Shutdown::Both);
            }
            t.ended.insert(id);
        } else {
            t.parked.remove(&id);
        }
    }

    /// Ends every request in a thread's hands and forgets the parked ones (disconnecting):
    /// nothing is pooled or started any more.
    pub(crate) fn close(&self) {
        let mut t = lock(&self.table);
        t.closed = true;
        for (id, s) in t.busy.drain().collect::<Vec<_>>() {
            if let Some(s) = s {
                let _ = s.shutdown(Shutdown::Both);
            }
            t.ended.insert(id);
        }
        t.parked.clear();
    }

    /// Runs `f` under the table's lock unless the transport is closing (so that nothing is
    /// pooled once [`InFlight::close`] ran).
    pub(crate) fn unless_closed(&self, f: impl FnOnce()) {
        let t = lock(&self.table);
        if !t.closed {
            f();
        }
    }
}
