//! The direct path's connections (contract §5, issue 18): where the server is, a pool of
//! kept-alive sockets, and which requests' replies are being read by which thread, so that a
//! request ended elsewhere (cancelled, failed, answered on another stream) stops its reader.

use super::direct::Exchange;
use crate::conn::lock;
use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Idle connections kept per server at most.
const MAX_IDLE: usize = 32;

/// Where a server is, and the connections to it.
pub(super) struct Direct {
    /// `host[:port]` as the URL has it: the `Host` header.
    pub(super) authority: String,
    host: url::Host<String>,
    port: u16,
    /// Path and query: the request target.
    pub(super) target: String,
    idle: Mutex<Vec<Arc<TcpStream>>>,
    pub(super) table: Mutex<Table>,
}

/// Requests whose reply is being read, and which of them are in a thread's hands.
#[derive(Default)]
pub(super) struct Table {
    /// Written, waiting for their caller to read on.
    pub(super) parked: HashMap<u64, Exchange>,
    /// Being written or read by some thread: the socket, to shut down when the request ends
    /// elsewhere (cancelled, failed, answered on another stream).
    pub(super) busy: HashMap<u64, Arc<TcpStream>>,
    /// Ended elsewhere while busy: the thread drops it when it is done.
    pub(super) ended: HashSet<u64>,
}

impl Direct {
    /// The direct path for `url` when it applies: plain `http` without userinfo, and no proxy
    /// (the config's `"proxy": ""`, or no proxy variable set).
    pub(super) fn for_url(url: &url::Url, net: &crate::config::NetSpec) -> Option<Direct> {
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let proxied = match net.proxy.as_deref() {
            Some("") => false,
            Some(_) => true,
            None => ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
                .iter()
                .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty())),
        };
        if proxied {
            return None;
        }
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
        Some(Direct {
            authority: authority.to_string(),
            host: url.host()?.to_owned(),
            port: url.port_or_known_default()?,
            target: if target.is_empty() { "/" } else { target }.to_string(),
            idle: Mutex::new(Vec::new()),
            table: Mutex::new(Table::default()),
        })
    }

    pub(super) fn open(&self, timeout: Duration) -> std::io::Result<TcpStream> {
        let addrs: Vec<SocketAddr> = match &self.host {
            url::Host::Ipv4(a) => vec![SocketAddr::from((*a, self.port))],
            url::Host::Ipv6(a) => vec![SocketAddr::from((*a, self.port))],
            url::Host::Domain(d) => (d.as_str(), self.port).to_socket_addrs()?.collect(),
        };
        let mut last = std::io::Error::new(ErrorKind::NotFound, "the host has no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    s.set_write_timeout(Some(timeout))?;
                    return Ok(s);
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    pub(super) fn take_idle(&self) -> Option<Arc<TcpStream>> {
        lock(&self.idle).pop()
    }

    pub(super) fn put_idle(&self, s: Arc<TcpStream>) {
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE {
            idle.push(s);
        }
    }

    /// Marks `id` as in this thread's hands (with its socket).
    pub(super) fn hold(&self, id: u64, sock: &Arc<TcpStream>) {
        lock(&self.table).busy.insert(id, sock.clone());
    }

    /// Gives `id` back: parked for its caller to read on, unless it ended meanwhile.
    pub(super) fn release(&self, id: u64, ex: Exchange) {
        let mut t = lock(&self.table);
        t.busy.remove(&id);
        if !t.ended.remove(&id) {
            t.parked.insert(id, ex);
        }
    }

    /// Forgets `id` (its socket is closed with the exchange).
    pub(super) fn forget(&self, id: u64) {
        let mut t = lock(&self.table);
        t.busy.remove(&id);
        t.ended.remove(&id);
    }

    /// Request `id` ended elsewhere: its reply is not read any further.
    pub(super) fn end(&self, id: u64) {
        let mut t = lock(&self.table);
        if let Some(s) = t.busy.get(&id) {
            let _ = s.shutdown(Shutdown::Both);
            t.ended.insert(id);
        } else {
            t.parked.remove(&id);
        }
    }

    /// Closes everything (the client is disconnecting).
    pub(super) fn close(&self) {
        let mut t = lock(&self.table);
        for (id, s) in t.busy.drain().collect::<Vec<_>>() {
            let _ = s.shutdown(Shutdown::Both);
            t.ended.insert(id);
        }
        t.parked.clear();
        lock(&self.idle).clear();
    }
}
