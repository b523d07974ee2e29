//! HTTP mode: the connection a request comes on, plain TCP or TLS (`--tls-cert`/`--tls-key`,
//! rustls on its ring provider).
//!
//! A [`Stream`] is read by its connection's thread and written by that thread and, for the
//! standalone GET stream, by others. Plain: the socket itself. TLS: one rustls
//! `ServerConnection` behind a mutex, shared by every clone; a reader never holds the lock
//! while it waits on the socket (it reads the raw bytes first, then decrypts under the lock),
//! so writers are not held up by a waiting reader. The handshake runs on the first reads.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The server's TLS settings from a PEM certificate chain and a PEM private key.
pub fn tls_config(cert: &str, key: &str) -> Result<Arc<ServerConfig>, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read certificates from {cert:?}: {e}"))?;
    if chain.is_empty() {
        return Err(format!("no certificate in {cert:?}"));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("cannot read a private key from {key:?}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("certificate and key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

pub enum Stream {
    Plain(TcpStream),
    Tls(Arc<Tls>),
}

pub struct Tls {
    sock: TcpStream,
    st: Mutex<TlsState>,
}

struct TlsState {
    conn: ServerConnection,
    /// Bytes read from the socket that rustls has not taken yet.
    raw: Vec<u8>,
    /// The socket read its end; `eof_told`: and rustls knows it (once it has taken `raw`).
    eof: bool,
    eof_told: bool,
}

impl Stream {
    /// `sock` as accepted: as is, or the server side of a TLS connection (handshake pending).
    pub fn new(sock: TcpStream, tls: Option<&Arc<ServerConfig>>) -> io::Result<Stream> {
        let _ = sock.set_nodelay(true);
        let Some(config) = tls else {
            return Ok(Stream::Plain(sock));
        };
        let mut conn = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
        conn.set_buffer_limit(None);
        Ok(Stream::Tls(Arc::new(Tls {
            sock,
            st: Mutex::new(TlsState {
                conn,
                raw: Vec::new(),
                eof: false,
                eof_told: false,
            }),
        })))
    }

    fn sock(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.sock,
        }
    }

    /// Another handle on the same connection (for a writer on another thread).
    pub fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Plain(s) => s.try_clone().map(Stream::Plain),
            Stream::Tls(t) => Ok(Stream::Tls(t.clone())),
        }
    }

    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.sock().set_read_timeout(d)
    }

    /// The connection is done with: TLS says so (close_notify); plain has nothing to say.
    pub fn close(&self) {
        if let Stream::Tls(t) = self {
            let mut st = t.lock();
            st.conn.send_close_notify();
            let _ = t.flush_tls(&mut st);
        }
    }
}

impl Tls {
    fn lock(&self) -> MutexGuard<'_, TlsState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write out whatever rustls has queued (handshake, tickets, records, alerts).
    fn flush_tls(&self, st: &mut TlsState) -> io::Result<()> {
        let mut sock = &self.sock;
        while st.conn.wants_write() {
            st.conn.write_tls(&mut sock)?;
        }
        Ok(())
    }

    /// Hand rustls the raw bytes it will take and process them.
    fn feed(&self, st: &mut TlsState) -> io::Result<()> {
        while !st.raw.is_empty() {
            let mut rest = &st.raw[..];
            let Ok(n) = st.conn.read_tls(&mut rest) else {
                break; // its plaintext buffer is full: read that first
            };
            st.raw.drain(..n);
            if let Err(e) = st.conn.process_new_packets() {
                // the alert; then not InvalidData (that is bad HTTP, which gets a 400)
                let _ = self.flush_tls(st);
                return Err(io::Error::other(e));
            }
        }
        Ok(())
    }

    /// Plaintext rustls has for `buf`; None when it has none yet. The peer's end (clean or
    /// not: most clients just close) reads as 0, as on a plain socket.
    fn take(st: &mut TlsState, buf: &mut [u8]) -> Option<io::Result<usize>> {
        match st.conn.reader().read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Some(Ok(0)),
            done => Some(done),
        }
    }

    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut raw = [0u8; 16 * 1024 + 512];
        loop {
            {
                let mut st = self.lock();
                self.feed(&mut st)?;
                if st.eof && !st.eof_told && st.raw.is_empty() {
                    st.eof_told = true;
                    let _ = st.conn.read_tls(&mut io::empty());
                    st.conn.process_new_packets().map_err(io::Error::other)?;
                }
                if let Some(done) = Self::take(&mut st, buf) {
                    return done;
                }
                if st.eof_told {
                    return Ok(0);
                }
                self.flush_tls(&mut st)?;
            }
            let n = loop {
                match (&self.sock).read(&mut raw) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            let mut st = self.lock();
            if n == 0 {
                st.eof = true;
            }
            st.raw.extend_from_slice(&raw[..n]);
        }
    }

    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        let mut st = self.lock();
        st.conn.writer().write_all(buf)?;
        self.flush_tls(&mut st)?;
        Ok(buf.len())
    }
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match *self {
            Stream::Plain(s) => {
                let mut s: &TcpStream = s;
                s.read(buf)
            }
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match *self {
            Stream::Plain(s) => {
                let mut s: &TcpStream = s;
                s.write(buf)
            }
            Stream::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
