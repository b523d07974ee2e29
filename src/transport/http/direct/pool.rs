//! The direct path's connections (contract §5, issues 18 and 22): where the server is, a pool
//! of kept-alive connections (TCP, or TLS on rustls with the same trust as the async path's
//! client), and which requests' replies are being read by which thread, so that a request
//! ended elsewhere (cancelled, failed, answered on another stream) stops its reader. Every
//! phase of opening and writing (resolve, connect, TLS handshake, write) ends by the request's
//! deadline, and a cancel interrupts each; every socket write goes through
//! [`crate::sys::net::send`], which cannot raise SIGPIPE.

use crate::sys::net;
use crate::util::lock;
use rustls::pki_types::ServerName;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a wait that a cancel cannot wake by shutting a socket down (name resolution, a
/// connect on platforms where a shutdown does not wake it) looks whether the request ended.
const SLICE: Duration = Duration::from_millis(50);

/// One connection to the server.
pub(crate) struct Sock {
    /// The TCP socket: timeouts are set and shutdowns done through it, from any thread.
    pub(crate) tcp: Arc<TcpStream>,
    tls: Option<Box<rustls::ClientConnection>>,
    /// The receive timeout last set on the socket.
    timeout: Option<Duration>,
    /// When it was put in the pool.
    idle_since: Instant,
}

/// A write that did not finish.
#[derive(Debug)]
pub(crate) struct WriteFailed {
    pub(crate) error: io::Error,
    /// Some byte went out on the socket: the server may have read part of the request, so it is
    /// never sent again (§6: a `tools/call` is never re-sent).
    pub(crate) sent_any: bool,
}

impl WriteFailed {
    pub(crate) fn timed_out(&self) -> bool {
        self.error.kind() == ErrorKind::TimedOut
    }
}

/// The socket as rustls writes to it: every send through [`net::send`] (never a plain `writev`:
/// no SIGPIPE), a full send buffer waited on until `deadline`. `write_vectored` is left to its
/// default, which sends the first buffer.
struct Out<'a> {
    tcp: &'a TcpStream,
    deadline: Instant,
    sent: &'a mut usize,
}

impl Write for Out<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        send_some(self.tcp, buf, self.deadline, self.sent)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sends some of `buf` (at least one byte unless it is empty), waiting while the send buffer is
/// full, at most until `deadline`.
fn send_some(
    tcp: &TcpStream,
    buf: &[u8],
    deadline: Instant,
    sent: &mut usize,
) -> io::Result<usize> {
    loop {
        match net::send(tcp, buf) {
            Ok(n) => {
                *sent += n;
                return Ok(n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::Error::new(
                        ErrorKind::TimedOut,
                        "the server did not take the request within the call's timeout",
                    ));
                }
                net::wait(tcp, true, left)?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The socket as rustls reads from it (one read, bounded by the socket's receive timeout).
struct In<'a>(&'a TcpStream);

impl Read for In<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

impl Sock {
    /// Bounds the next reads by about `left`: the socket option is changed only when the
    /// current one would overshoot `left` by more than a millisecond, or is far shorter (so
    /// most reads cost no extra system call; a read that returns early is simply repeated).
    pub(crate) fn read_timeout(&mut self, left: Duration) {
        let keep = self
            .timeout
            .is_some_and(|cur| cur <= left + Duration::from_millis(1) && cur * 2 >= left);
        if !keep && self.tcp.set_read_timeout(Some(left)).is_ok() {
            self.timeout = Some(left);
        }
    }

    /// Reads some of the reply: one read on the socket (bounded by [`Sock::read_timeout`]);
    /// over TLS, `WouldBlock` when the records that came hold no application data yet, so a
    /// server trickling records cannot keep one read going past the caller's deadline.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(c) = self.tls.as_mut() else {
            return (&*self.tcp).read(buf);
        };
        if let Some(n) = plaintext(c, buf)? {
            return Ok(n);
        }
        let eof = c.read_tls(&mut In(&self.tcp))? == 0;
        let processed = c.process_new_packets();
        // An alert or a key update rustls wants to send goes out (bounded, no SIGPIPE).
        let deadline = Instant::now() + self.timeout.unwrap_or(Duration::from_secs(1));
        let mut sent = 0;
        while c.wants_write() {
            if c.write_tls(&mut Out {
                tcp: &self.tcp,
                deadline,
                sent: &mut sent,
            })
            .is_err()
            {
                break;
            }
        }
        processed.map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
        match plaintext(c, buf)? {
            Some(n) => Ok(n),
            None if eof => Ok(0),
            None => Err(ErrorKind::WouldBlock.into()),
        }
    }

    /// Whether an idle connection is still usable: nothing waiting (or, for TLS, only records
    /// that leave it open, such as a session ticket).
    fn still_open(&mut self) -> bool {
        if let Some(c) = self.tls.as_mut() {
            // Plaintext rustls decrypted past the last reply, or a close_notify it processed,
            // is invisible to the socket: such a connection is not reused.
            if !matches!(plaintext(c, &mut [0u8; 1]), Ok(None)) {
                return false;
            }
        }
        match net::peek_idle(&self.tcp) {
            net::Idle::Quiet => true,
            net::Idle::Closed => false,
            net::Idle::Data => {
                let Some(c) = self.tls.as_mut() else {
                    return false; // plain HTTP: bytes nobody asked for
                };
                if self.tcp.set_nonblocking(true).is_err() {
                    return false;
                }
                let mut open = false;
                loop {
                    match c.read_tls(&mut In(&self.tcp)) {
                        Ok(0) => break,
                        Ok(_) => {
                            if c.process_new_packets().is_err() {
                                break;
                            }
                            let mut byte = [0u8; 1];
                            if !matches!(plaintext(c, &mut byte), Ok(None)) {
                                break; // application data nobody asked for, or a close
                            }
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            open = true;
                            break;
                        }
                        Err(_) => break,
                    }
                }
                self.tcp.set_nonblocking(false).is_ok() && open
            }
        }
    }

    /// Completes the TLS handshake (once, on a new connection) by `deadline`.
    fn handshake(&mut self, deadline: Instant) -> io::Result<()> {
        let Some(c) = self.tls.as_mut() else {
            return Ok(());
        };
        let mut sent = 0;
        loop {
            while c.wants_write() {
                c.write_tls(&mut Out {
                    tcp: &self.tcp,
                    deadline,
                    sent: &mut sent,
                })?;
            }
            if !c.is_handshaking() {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    "the TLS handshake did not finish within the call's timeout",
                ));
            }
            if !net::wait(&self.tcp, false, left)? {
                continue;
            }
            match c.read_tls(&mut In(&self.tcp)) {
                Ok(0) => {
                    return Err(io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "the server closed the connection during the TLS handshake",
                    ))
                }
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    continue
                }
                Err(e) => return Err(e),
            }
            if let Err(e) = c.process_new_packets() {
                // The alert telling the server why, then the error.
                let _ = c.write_tls(&mut Out {
                    tcp: &self.tcp,
                    deadline,
                    sent: &mut sent,
                });
                return Err(io::Error::new(ErrorKind::InvalidData, e));
            }
        }
    }

    /// Writes all of `bytes` by `deadline` (a shutdown from another thread ends it at once).
    pub(crate) fn write_all(&mut self, bytes: &[u8], deadline: Instant) -> Result<(), WriteFailed> {
        let mut sent = 0;
        let r = self.write_inner(bytes, deadline, &mut sent);
        r.map_err(|error| WriteFailed {
            error,
            sent_any: sent > 0,
        })
    }

    fn write_inner(
        &mut self,
        mut bytes: &[u8],
        deadline: Instant,
        sent: &mut usize,
    ) -> io::Result<()> {
        let tcp = &*self.tcp;
        let Some(c) = self.tls.as_mut() else {
            while !bytes.is_empty() {
                let n = send_some(tcp, bytes, deadline, sent)?;
                bytes = &bytes[n..];
            }
            return Ok(());
        };
        loop {
            // rustls takes what fits its buffer; the records it made go out before more.
            let n = c.writer().write(bytes)?;
            bytes = &bytes[n..];
            while c.wants_write() {
                c.write_tls(&mut Out {
                    tcp,
                    deadline,
                    sent,
                })?;
            }
            if bytes.is_empty() {
                return Ok(());
            }
        }
    }
}

/// Application data rustls has decrypted: Some(n) (0 at a clean close), None when there is
/// none yet.
fn plaintext(c: &mut rustls::ClientConnection, buf: &mut [u8]) -> io::Result<Option<usize>> {
    match c.reader().read(buf) {
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
        // A peer that closes without close_notify ends the stream all the same (a
        // close-delimited body is judged by what arrived).
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(Some(0)),
        Err(e) => Err(e),
    }
}

/// Why no connection was opened.
pub(crate) enum OpenError {
    /// The request ended elsewhere (or the transport is closing).
    Ended,
    /// The request's deadline passed.
    TimedOut,
    /// It could not be opened; `tls` when TLS failed.
    Failed { tls: bool },
}

/// Idle connections kept per server at most.
const MAX_IDLE: usize = 32;

/// Where a server is, and the connections to it.
pub(crate) struct DirectPool {
    /// `host[:port]` as the URL has it: the `Host` header.
    pub(crate) authority: String,
    host: url::Host<String>,
    port: u16,
    /// Path and query: the request target.
    pub(crate) target: String,
    /// For `https`: the TLS settings and the name the certificate must carry.
    tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    idle: Mutex<Vec<Sock>>,
    /// How long an idle connection is kept (`poolIdleTimeoutMs`): a server's own idle timeout
    /// closing it just as a request is written is the one race a reuse cannot see coming.
    idle_timeout: Duration,
    table: Mutex<Table>,
    /// Cleared after a TLS failure or a redirect: the async path keeps the server from then on.
    on: std::sync::atomic::AtomicBool,
    /// After a connection was refused, the async path takes the requests for a while (it tries
    /// and reports in its words). A connect that times out fails its own request only: each
    /// call waits at most its own timeout.
    paused_until: Mutex<Option<std::time::Instant>>,
}

/// What the direct client parks between its reads of a request's reply (its `Exchange`),
/// with the socket it reads: kept here without this file knowing what else it holds.
type ParkedExchange = (Arc<TcpStream>, Box<dyn Any + Send>);

/// Requests whose reply is being read, and which of them are in a thread's hands.
#[derive(Default)]
pub(crate) struct Table {
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

impl DirectPool {
    /// The direct path for `url` when it applies: `http` or `https` without userinfo, and no
    /// proxy (the config's `"proxy": ""`, or no proxy variable for the scheme set).
    pub(crate) fn for_url(
        url: &url::Url,
        net: &crate::config::NetSpec,
        idle_timeout: Duration,
    ) -> Option<DirectPool> {
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
                Some((crate::net::tls::http1(net).ok()?, name))
            }
            _ => None,
        };
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
        Some(DirectPool {
            authority: authority.to_string(),
            host: url.host()?.to_owned(),
            port: url.port_or_known_default()?,
            target: if target.is_empty() { "/" } else { target }.to_string(),
            tls,
            idle: Mutex::new(Vec::new()),
            idle_timeout,
            table: Mutex::new(Table::default()),
            on: std::sync::atomic::AtomicBool::new(true),
            paused_until: Mutex::new(None),
        })
    }

    /// Whether request `id` ended elsewhere (or the transport is closing).
    pub(crate) fn ended(&self, id: Option<u64>) -> bool {
        let t = lock(&self.table);
        t.closed || id.is_some_and(|id| t.ended.contains(&id))
    }

    /// A new connection for request `id` (None: an answer or notification of ours), resolved,
    /// connected and (for TLS) handshaken by `deadline`; its socket is attached to `id` as soon
    /// as it exists, so a cancel shuts it down whatever phase it is in.
    pub(crate) fn open(&self, deadline: Instant, id: Option<u64>) -> Result<Sock, OpenError> {
        let addrs = self.resolve(deadline, id)?;
        let mut failed = false;
        for (i, addr) in addrs.iter().enumerate() {
            let left = deadline.saturating_duration_since(Instant::now());
            // A fair share of what is left for each address still to try.
            let until = Instant::now() + left / (addrs.len() - i) as u32;
            match self.connect(addr, until, deadline, id) {
                Ok(tcp) => return self.secure(tcp, deadline, id),
                Err(OpenError::Failed { .. }) => failed = true,
                Err(e) => return Err(e),
            }
        }
        if failed || addrs.is_empty() {
            return Err(OpenError::Failed { tls: false });
        }
        Err(OpenError::TimedOut)
    }

    /// The server's addresses, resolved on a thread of its own so that the wait ends by
    /// `deadline` (or the request's end); a resolution that outlives it finishes unobserved.
    fn resolve(&self, deadline: Instant, id: Option<u64>) -> Result<Vec<SocketAddr>, OpenError> {
        let name = match &self.host {
            url::Host::Ipv4(a) => return Ok(vec![SocketAddr::from((*a, self.port))]),
            url::Host::Ipv6(a) => return Ok(vec![SocketAddr::from((*a, self.port))]),
            url::Host::Domain(d) => (d.clone(), self.port),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        crate::util::spawn("tn-resolve", move || {
            let _ = tx.send(name.to_socket_addrs().map(|a| a.collect::<Vec<_>>()));
        })
        .map_err(|_| OpenError::Failed { tls: false })?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(OpenError::TimedOut);
            }
            match rx.recv_timeout(left.min(SLICE)) {
                Ok(Ok(addrs)) => return Ok(addrs),
                Ok(Err(_)) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(OpenError::Failed { tls: false })
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.ended(id) {
                        return Err(OpenError::Ended);
                    }
                }
            }
        }
    }

    /// Connects to `addr`, trying until `until` (at most `deadline`).
    fn connect(
        &self,
        addr: &SocketAddr,
        until: Instant,
        deadline: Instant,
        id: Option<u64>,
    ) -> Result<Arc<TcpStream>, OpenError> {
        let tcp = Arc::new(net::start_connect(addr).map_err(|_| OpenError::Failed { tls: false })?);
        if id.is_some_and(|id| !self.attach(id, &tcp)) {
            return Err(OpenError::Ended);
        }
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(if Instant::now() >= deadline {
                    OpenError::TimedOut
                } else {
                    OpenError::Failed { tls: false }
                });
            }
            match net::finish_connect(&tcp, left.min(SLICE)) {
                Ok(true) => return Ok(tcp),
                Ok(false) if self.ended(id) => return Err(OpenError::Ended),
                Ok(false) => {}
                Err(_) if self.ended(id) => return Err(OpenError::Ended),
                Err(_) => return Err(OpenError::Failed { tls: false }),
            }
        }
    }

    /// The connection over `tcp`: for `https`, TLS handshaken by `deadline`.
    fn secure(
        &self,
        tcp: Arc<TcpStream>,
        deadline: Instant,
        id: Option<u64>,
    ) -> Result<Sock, OpenError> {
        let mut sock = Sock {
            tcp,
            tls: None,
            timeout: None,
            idle_since: Instant::now(),
        };
        let Some((config, name)) = &self.tls else {
            return Ok(sock);
        };
        let conn = rustls::ClientConnection::new(config.clone(), name.clone())
            .map_err(|_| OpenError::Failed { tls: true })?;
        sock.tls = Some(Box::new(conn));
        match sock.handshake(deadline) {
            Ok(()) => Ok(sock),
            Err(_) if self.ended(id) => Err(OpenError::Ended),
            Err(e) if e.kind() == ErrorKind::TimedOut => Err(OpenError::TimedOut),
            Err(e) => Err(OpenError::Failed {
                tls: crate::net::tls_failure(&e).is_some(),
            }),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.on.load(std::sync::atomic::Ordering::Relaxed)
            && lock(&self.paused_until).is_none_or(|t| std::time::Instant::now() >= t)
    }

    /// The async path keeps the server from now on.
    pub(crate) fn disable(&self) {
        self.on.store(false, std::sync::atomic::Ordering::Relaxed);
        lock(&self.idle).clear();
    }

    /// The async path takes the requests for `d`.
    pub(crate) fn pause(&self, d: Duration) {
        *lock(&self.paused_until) = Some(std::time::Instant::now() + d);
    }

    /// A pooled connection that is still open (§5): one the server closed while it sat in the
    /// pool is dropped here rather than written to, so a request is never sent twice; one idle
    /// for longer than `poolIdleTimeoutMs` is dropped too.
    pub(crate) fn take_idle(&self) -> Option<Sock> {
        loop {
            let mut s = lock(&self.idle).pop()?;
            if s.idle_since.elapsed() < self.idle_timeout && s.still_open() {
                return Some(s);
            }
        }
    }

    pub(crate) fn put_idle(&self, mut s: Sock) {
        // The table's lock, then the pool's, as close() takes them: nothing is pooled after it.
        let table = lock(&self.table);
        let mut idle = lock(&self.idle);
        let now = Instant::now();
        idle.retain(|s| now.duration_since(s.idle_since) < self.idle_timeout);
        if !table.closed && idle.len() < MAX_IDLE {
            s.idle_since = now;
            idle.push(s);
        }
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
    pub(crate) fn take_parked<E: 'static>(&self, id: u64) -> Option<Option<Box<E>>> {
        let mut t = lock(&self.table);
        let (tcp, ex) = t.parked.remove(&id)?;
        if t.ended.remove(&id) {
            return Some(None);
        }
        t.busy.insert(id, Some(tcp));
        Some(ex.downcast::<E>().ok())
    }

    /// Gives `id` back: parked for its caller to read on (`ex`, reading `tcp`), unless it ended
    /// meanwhile.
    pub(crate) fn release<E: Send + 'static>(&self, id: u64, tcp: &Arc<TcpStream>, ex: Box<E>) {
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

    /// Closes everything (the client is disconnecting).
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
        lock(&self.idle).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn direct(url: &str, idle: Duration) -> DirectPool {
        let net = crate::config::NetSpec {
            proxy: Some(String::new()),
            ..Default::default()
        };
        DirectPool::for_url(&url::Url::parse(url).unwrap(), &net, idle).unwrap()
    }

    #[test]
    #[cfg_attr(miri, ignore = "sockets")]
    fn idle_connections_expire() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", l.local_addr().unwrap());
        let d = direct(&url, Duration::from_millis(100));
        let far = Instant::now() + Duration::from_secs(5);
        let s = d.open(far, None).ok().unwrap();
        let _server_side = l.accept().unwrap();
        d.put_idle(s);
        assert!(d.take_idle().is_some(), "a fresh idle connection is reused");
        let s = d.open(far, None).ok().unwrap();
        let _server_side2 = l.accept().unwrap();
        d.put_idle(s);
        std::thread::sleep(Duration::from_millis(150));
        assert!(d.take_idle().is_none(), "an expired one is dropped");
    }

    #[test]
    #[cfg_attr(miri, ignore = "sockets")]
    fn a_cancel_ends_a_connect_that_hangs() {
        // A listener whose accept queue is full: a new connect's SYN goes unanswered.
        let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        l.listen(0).unwrap();
        let addr = l.local_addr().unwrap().as_socket().unwrap();
        let mut fill = Vec::new();
        for _ in 0..8 {
            if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
                fill.push(s);
            }
        }
        let d = Arc::new(direct(
            &format!("http://{addr}/mcp"),
            Duration::from_secs(90),
        ));
        // The deadline ends it.
        let t0 = Instant::now();
        let r = d.open(t0 + Duration::from_millis(300), Some(1));
        assert!(matches!(r, Err(OpenError::TimedOut)), "times out");
        assert!(t0.elapsed() < Duration::from_secs(2));
        // A cancel ends it.
        assert!(d.claim(2));
        let d2 = d.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            d2.end(2);
        });
        let t0 = Instant::now();
        let r = d.open(t0 + Duration::from_secs(20), Some(2));
        canceller.join().unwrap();
        assert!(matches!(r, Err(OpenError::Ended)), "ends on the cancel");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}
