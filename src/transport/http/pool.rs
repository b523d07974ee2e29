//! The direct path's connections (contract §5, issue 18): where the server is, a pool of
//! kept-alive connections (TCP, or TLS on rustls with the same trust as the async path's
//! client), and which requests' replies are being read by which thread, so that a request
//! ended elsewhere (cancelled, failed, answered on another stream) stops its reader.

use super::direct::Exchange;
use crate::conn::lock;
use rustls::pki_types::ServerName;
use std::collections::{HashMap, HashSet};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// One connection to the server.
pub(super) struct Sock {
    /// The TCP socket (for TLS a second handle on it): timeouts are set and shutdowns done
    /// through it, from any thread.
    pub(super) tcp: Arc<TcpStream>,
    tls: Option<Box<TlsStream>>,
    /// The receive timeout last set on the socket.
    timeout: Option<Duration>,
}

impl Sock {
    /// Bounds the next reads by about `left`: the socket option is changed only when the
    /// current one would overshoot `left` by more than a millisecond, or is far shorter (so
    /// most reads cost no extra system call; a read that returns early is simply repeated).
    pub(super) fn read_timeout(&mut self, left: Duration) {
        let keep = self
            .timeout
            .is_some_and(|cur| cur <= left + Duration::from_millis(1) && cur * 2 >= left);
        if !keep && self.tcp.set_read_timeout(Some(left)).is_ok() {
            self.timeout = Some(left);
        }
    }

    pub(super) fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.tls {
            None => (&*self.tcp).read(buf),
            // A peer that closes without close_notify ends the stream all the same (a
            // close-delimited body is judged by what arrived).
            Some(t) => match t.read(buf) {
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(0),
                r => r,
            },
        }
    }

    /// Whether an idle connection is still usable: nothing waiting (or, for TLS, only records
    /// that leave it open, such as a session ticket).
    fn still_open(&mut self) -> bool {
        use std::os::fd::AsRawFd;
        match crate::sys::peek_idle(self.tcp.as_raw_fd()) {
            crate::sys::Idle::Quiet => true,
            crate::sys::Idle::Closed => false,
            crate::sys::Idle::Data => {
                let Some(t) = self.tls.as_mut() else {
                    return false; // plain HTTP: bytes nobody asked for
                };
                if self.tcp.set_nonblocking(true).is_err() {
                    return false;
                }
                let mut buf = [0u8; 1];
                let open = matches!(t.read(&mut buf), Err(e) if e.kind() == ErrorKind::WouldBlock);
                self.tcp.set_nonblocking(false).is_ok() && open
            }
        }
    }

    pub(super) fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match &mut self.tls {
            None => (&*self.tcp).write_all(bytes),
            Some(t) => {
                t.write_all(bytes)?;
                t.flush()
            }
        }
    }
}

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
    /// For `https`: the TLS settings and the name the certificate must carry.
    tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    idle: Mutex<Vec<Sock>>,
    pub(super) table: Mutex<Table>,
    /// Cleared after a TLS failure or a redirect: the async path keeps the server from then on.
    on: std::sync::atomic::AtomicBool,
    /// After a connection could not be opened, the async path takes the requests for a while
    /// (it tries and reports in its words, and a black-holed host is not waited on twice).
    paused_until: Mutex<Option<std::time::Instant>>,
}

/// Requests whose reply is being read, and which of them are in a thread's hands.
#[derive(Default)]
pub(super) struct Table {
    /// Written, waiting for their caller to read on.
    pub(super) parked: HashMap<u64, Exchange>,
    /// In some thread's hands (being connected, written or read): the socket once there is one,
    /// to shut down when the request ends elsewhere (cancelled, failed, answered elsewhere).
    pub(super) busy: HashMap<u64, Option<Arc<TcpStream>>>,
    /// Ended elsewhere while busy: the thread stops and drops it.
    pub(super) ended: HashSet<u64>,
    /// Disconnecting: nothing is pooled or started any more.
    pub(super) closed: bool,
}

impl Direct {
    /// The direct path for `url` when it applies: `http` or `https` without userinfo, and no
    /// proxy (the config's `"proxy": ""`, or no proxy variable for the scheme set).
    pub(super) fn for_url(url: &url::Url, net: &crate::config::NetSpec) -> Option<Direct> {
        if !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let vars = match url.scheme() {
            "http" => ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"],
            "https" => ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"],
            _ => return None,
        };
        let proxied = match net.proxy.as_deref() {
            Some("") => false,
            Some(_) => true,
            None => vars
                .iter()
                .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty())),
        };
        if proxied {
            return None;
        }
        let tls = match url.scheme() {
            "https" => {
                let name = match url.host()? {
                    url::Host::Domain(d) => ServerName::try_from(d.to_string()).ok()?,
                    url::Host::Ipv4(a) => ServerName::IpAddress(std::net::IpAddr::V4(a).into()),
                    url::Host::Ipv6(a) => ServerName::IpAddress(std::net::IpAddr::V6(a).into()),
                };
                Some((super::tls::config(net).ok()?, name))
            }
            _ => None,
        };
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
        Some(Direct {
            authority: authority.to_string(),
            host: url.host()?.to_owned(),
            port: url.port_or_known_default()?,
            target: if target.is_empty() { "/" } else { target }.to_string(),
            tls,
            idle: Mutex::new(Vec::new()),
            table: Mutex::new(Table::default()),
            on: std::sync::atomic::AtomicBool::new(true),
            paused_until: Mutex::new(None),
        })
    }

    /// A new connection (TLS set up on its first write).
    pub(super) fn open(&self, timeout: Duration) -> std::io::Result<Sock> {
        let tcp = self.connect(timeout)?;
        let Some((config, name)) = &self.tls else {
            return Ok(Sock {
                tcp: Arc::new(tcp),
                tls: None,
                timeout: None,
            });
        };
        // Bounds the handshake, done on the first write.
        tcp.set_read_timeout(Some(timeout))?;
        let handle = Arc::new(tcp.try_clone()?);
        let conn = rustls::ClientConnection::new(config.clone(), name.clone())
            .map_err(std::io::Error::other)?;
        Ok(Sock {
            tcp: handle,
            tls: Some(Box::new(rustls::StreamOwned::new(conn, tcp))),
            timeout: Some(timeout),
        })
    }

    fn connect(&self, timeout: Duration) -> std::io::Result<TcpStream> {
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

    pub(super) fn enabled(&self) -> bool {
        self.on.load(std::sync::atomic::Ordering::Relaxed)
            && lock(&self.paused_until).is_none_or(|t| std::time::Instant::now() >= t)
    }

    /// The async path keeps the server from now on.
    pub(super) fn disable(&self) {
        self.on.store(false, std::sync::atomic::Ordering::Relaxed);
        lock(&self.idle).clear();
    }

    /// The async path takes the requests for `d`.
    pub(super) fn pause(&self, d: Duration) {
        *lock(&self.paused_until) = Some(std::time::Instant::now() + d);
    }

    /// A pooled connection that is still open (§5): one the server closed while it sat in the
    /// pool is dropped here rather than written to, so a request is never sent twice.
    pub(super) fn take_idle(&self) -> Option<Sock> {
        loop {
            let mut s = lock(&self.idle).pop()?;
            if s.still_open() {
                return Some(s);
            }
        }
    }

    pub(super) fn put_idle(&self, s: Sock) {
        let closed = lock(&self.table).closed;
        let mut idle = lock(&self.idle);
        if !closed && idle.len() < MAX_IDLE {
            idle.push(s);
        }
    }

    /// Takes request `id` into this thread's hands before anything is sent; false when the
    /// transport is closing.
    pub(super) fn claim(&self, id: u64) -> bool {
        let mut t = lock(&self.table);
        if t.closed {
            return false;
        }
        t.busy.insert(id, None);
        true
    }

    /// Request `id`'s socket, once there is one; false when the request ended meanwhile
    /// (nothing is written then).
    pub(super) fn attach(&self, id: u64, sock: &Arc<TcpStream>) -> bool {
        let mut t = lock(&self.table);
        if t.ended.contains(&id) || t.closed {
            return false;
        }
        t.busy.insert(id, Some(sock.clone()));
        true
    }

    /// Takes parked request `id` into this thread's hands; None when it is not on the direct
    /// path, Some(None) when it ended meanwhile.
    pub(super) fn take_parked(&self, id: u64) -> Option<Option<Exchange>> {
        let mut t = lock(&self.table);
        let ex = t.parked.remove(&id)?;
        if t.ended.remove(&id) {
            return Some(None);
        }
        t.busy.insert(id, Some(ex.sock.tcp.clone()));
        Some(Some(ex))
    }

    /// Gives `id` back: parked for its caller to read on, unless it ended meanwhile.
    pub(super) fn release(&self, id: u64, ex: Exchange) {
        let mut t = lock(&self.table);
        t.busy.remove(&id);
        if !t.ended.remove(&id) && !t.closed {
            t.parked.insert(id, ex);
        }
    }

    /// Forgets `id`; true when it ended elsewhere meanwhile (then nothing more is started for
    /// it).
    pub(super) fn forget(&self, id: u64) -> bool {
        let mut t = lock(&self.table);
        t.busy.remove(&id);
        t.ended.remove(&id) || t.closed
    }

    /// Request `id` ended elsewhere: its reply is not read any further.
    pub(super) fn end(&self, id: u64) {
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

    /// Closes everything (the client is disconnecting).
    pub(super) fn close(&self) {
        let mut t = lock(&self.table);
        t.closed = true;
        for (id, s) in t.busy.drain().collect::<Vec<_>>() {
            if let Some(s) = s {
                let _ = s.shutdown(Shutdown::Both);
            }
            t.ended.insert(id);
        }
        t.parked.clear();
        lock(&self.idle).clear();
    }
}
