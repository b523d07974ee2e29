//! One connection of the direct path (contract §5): a TCP socket, or TLS over it on rustls,
//! opened (resolve, connect, handshake) and written by a deadline that a cancel can end at any
//! phase; every write through [`crate::sys::net::send`], which cannot raise SIGPIPE.

use crate::sys::net;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a wait that a cancel cannot wake by shutting a socket down (name resolution, a
/// connect on platforms where a shutdown does not wake it) looks whether the request ended.
pub(super) const SLICE: Duration = Duration::from_millis(50);

/// One connection to the server.
pub(crate) struct Sock {
    /// The TCP socket: timeouts are set and shutdowns done through it, from any thread.
    pub(crate) tcp: Arc<TcpStream>,
    pub(super) tls: Option<Box<rustls::ClientConnection>>,
    /// The receive timeout last set on the socket.
    timeout: Option<Duration>,
    /// When it was put in the pool.
    pub(super) idle_since: Instant,
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
    /// A connection over `tcp`, plain until [`Sock::handshake`] puts TLS on it.
    pub(super) fn over(tcp: Arc<TcpStream>) -> Sock {
        Sock {
            tcp,
            tls: None,
            timeout: None,
            idle_since: Instant::now(),
        }
    }

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
    pub(super) fn still_open(&mut self) -> bool {
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
    pub(super) fn handshake(&mut self, deadline: Instant) -> io::Result<()> {
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
