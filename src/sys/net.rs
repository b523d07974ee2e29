//! Sockets for the direct HTTP path (contract §5): a send that can never raise
//! SIGPIPE in the host (the direct path writes on the host's own thread, where SIGPIPE is not
//! blocked, and rustls writes through it too), waits bounded by a deadline, a connect that a
//! cancel can interrupt, and a look at an idle kept-alive connection. A shutdown of the socket
//! from another thread wakes every wait here. The connect is written once over socket2; the
//! send, the wait and the peek are the platform's (`unix/net.rs`).

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends what it can of `buf` without blocking (a full send buffer is `WouldBlock`) and without
/// raising SIGPIPE.
pub use super::imp::net::send;

/// Whether `sock` turned readable (`write`: writable), waiting at most `within`.
pub use super::imp::net::wait;

/// Peeks at an idle `sock` (one system call, nothing consumed).
pub use super::imp::net::peek_idle;

pub use super::types::Idle;

/// Starts connecting to `addr` without blocking. The socket exists (and can be shut down from
/// another thread to end the attempt) before [`finish_connect`] waits for it.
pub fn start_connect(addr: &SocketAddr) -> io::Result<TcpStream> {
    let sock = Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    super::imp::net::no_sigpipe(&sock)?;
    sock.set_nonblocking(true)?;
    match sock.connect(&SockAddr::from(*addr)) {
        Ok(()) => {}
        Err(e) if in_progress(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(sock.into())
}

fn in_progress(e: &io::Error) -> bool {
    super::imp::net::connect_in_progress(e) || e.kind() == io::ErrorKind::WouldBlock
}

/// Waits at most `within` for a connect [`start_connect`] began: Ok(true) when connected (the
/// socket is blocking again, with Nagle off), Ok(false) when not yet.
pub fn finish_connect(sock: &TcpStream, within: Duration) -> io::Result<bool> {
    if !wait(sock, true, within)? {
        return Ok(false);
    }
    if let Some(e) = sock.take_error()? {
        return Err(e);
    }
    // Writable without an error, yet not connected: the attempt was shut down (a cancel).
    sock.peer_addr().map_err(|_| {
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "the connection attempt was ended",
        )
    })?;
    sock.set_nonblocking(false)?;
    sock.set_nodelay(true)?;
    Ok(true)
}
