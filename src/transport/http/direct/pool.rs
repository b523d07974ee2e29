//! The direct path's connections (contract §5): where the server is, a pool
//! of kept-alive connections (TCP, or TLS on rustls with the same trust as the async path's
//! client), and which requests' replies are being read by which thread, so that a request
//! ended elsewhere (cancelled, failed, answered on another stream) stops its reader. Every
//! phase of opening and writing (resolve, connect, TLS handshake, write) ends by the request's
//! deadline, and a cancel interrupts each; every socket write goes through
//! [`crate::sys::net::send`], which cannot raise SIGPIPE.

use super::inflight::InFlight;
use super::socket::{OpenError, Sock, SLICE};
use crate::sys::net;
use crate::util::lock;
use rustls::pki_types::ServerName;
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Idle connections kept per server at most.
const MAX_IDLE: usize = 32;

/// Where a server is, and the connections to it.
pub(crate) struct DirectPath {
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
    /// Which requests' replies are being read, by which thread.
    pub(crate) inflight: InFlight,
    /// Cleared after a TLS failure or a redirect: the async path keeps the server from then on.
    on: std::sync::atomic::AtomicBool,
    /// After a connection was refused, the async path takes the requests for a while (it tries
    /// and reports in its words). A connect that times out fails its own request only: each
    /// call waits at most its own timeout.
    paused_until: Mutex<Option<std::time::Instant>>,
}

impl DirectPath {
    /// The direct path for `url` when it applies: `http` or `https` without userinfo, and no
    /// proxy (the config's `"proxy": ""`, or no proxy variable for the scheme set).
    pub(crate) fn for_url(
        url: &url::Url,
        net: &crate::config::NetSpec,
        idle_timeout: Duration,
    ) -> Option<DirectPath> {
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
        Some(DirectPath {
            authority: authority.to_string(),
            host: url.host()?.to_owned(),
            port: url.port_or_known_default()?,
            target: if target.is_empty() { "/" } else { target }.to_string(),
            tls,
            idle: Mutex::new(Vec::new()),
            idle_timeout,
            inflight: InFlight::default(),
            on: std::sync::atomic::AtomicBool::new(true),
            paused_until: Mutex::new(None),
        })
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
                    if self.inflight.ended(id) {
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
        if id.is_some_and(|id| !self.inflight.attach(id, &tcp)) {
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
                Ok(false) if self.inflight.ended(id) => return Err(OpenError::Ended),
                Ok(false) => {}
                Err(_) if self.inflight.ended(id) => return Err(OpenError::Ended),
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
        let mut sock = Sock::over(tcp);
        let Some((config, name)) = &self.tls else {
            return Ok(sock);
        };
        let conn = rustls::ClientConnection::new(config.clone(), name.clone())
            .map_err(|_| OpenError::Failed { tls: true })?;
        sock.tls = Some(Box::new(conn));
        match sock.handshake(deadline) {
            Ok(()) => Ok(sock),
            Err(_) if self.inflight.ended(id) => Err(OpenError::Ended),
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
        // Under the in-flight table's lock, which close() takes first: nothing is pooled after
        // it.
        self.inflight.unless_closed(|| {
            let mut idle = lock(&self.idle);
            let now = Instant::now();
            idle.retain(|s| now.duration_since(s.idle_since) < self.idle_timeout);
            if idle.len() < MAX_IDLE {
                s.idle_since = now;
                idle.push(s);
            }
        });
    }

    /// Closes everything (the client is disconnecting).
    pub(crate) fn close(&self) {
        self.inflight.close();
        lock(&self.idle).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn direct(url: &str, idle: Duration) -> DirectPath {
        let net = crate::config::NetSpec {
            proxy: Some(String::new()),
            ..Default::default()
        };
        DirectPath::for_url(&url::Url::parse(url).unwrap(), &net, idle).unwrap()
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
        assert!(d.inflight.claim(2));
        let d2 = d.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            d2.inflight.end(2);
        });
        let t0 = Instant::now();
        let r = d.open(t0 + Duration::from_secs(20), Some(2));
        canceller.join().unwrap();
        assert!(matches!(r, Err(OpenError::Ended)), "ends on the cancel");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}
