//! Sockets for the direct HTTP path (contract §5, issue 22): a send that can never raise
//! SIGPIPE in the host (the direct path writes on the host's own thread, where SIGPIPE is not
//! blocked, and rustls writes through it too), waits bounded by a deadline, a connect that a
//! cancel can interrupt, and a look at an idle kept-alive connection. A shutdown of the socket
//! from another thread wakes every wait here.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends what it can of `buf` without blocking (a full send buffer is `WouldBlock`) and without
/// raising SIGPIPE: `MSG_NOSIGNAL` where it exists; on Apple platforms the socket carries
/// `SO_NOSIGPIPE` (set by socket2 when it is created, and by std for its own sockets).
#[cfg(unix)]
pub fn send(sock: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    use rustix::net::SendFlags;
    #[cfg(not(any(target_vendor = "apple", target_os = "haiku")))]
    let flags = SendFlags::NOSIGNAL | SendFlags::DONTWAIT;
    #[cfg(any(target_vendor = "apple", target_os = "haiku"))]
    let flags = SendFlags::DONTWAIT;
    loop {
        match rustix::net::send(sock, buf, flags) {
            Err(rustix::io::Errno::INTR) => continue,
            r => return r.map_err(io::Error::from),
        }
    }
}

/// Whether `sock` turned readable (`write`: writable), waiting at most `within`.
#[cfg(unix)]
pub fn wait(sock: &TcpStream, write: bool, within: Duration) -> io::Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let flags = if write { PollFlags::OUT } else { PollFlags::IN };
    let mut fds = [PollFd::new(sock, flags)];
    let timeout = Timespec {
        tv_sec: within.as_secs().min(i32::MAX as u64 / 1000) as _,
        tv_nsec: within.subsec_nanos() as _,
    };
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What an idle kept-alive socket holds, looked at without blocking or consuming (§5: a
/// connection the server closed while it sat in the pool is not written to).
#[derive(Debug, PartialEq)]
pub enum Idle {
    /// Nothing to read: still open.
    Quiet,
    /// Bytes are waiting (for TLS, perhaps a session ticket or a close alert).
    Data,
    /// The peer closed it, or it failed.
    Closed,
}

/// Peeks at `sock` (one system call, nothing consumed).
#[cfg(unix)]
pub fn peek_idle(sock: &TcpStream) -> Idle {
    use rustix::net::RecvFlags;
    let mut byte = [0u8; 1];
    match rustix::net::recv(sock, &mut byte, RecvFlags::PEEK | RecvFlags::DONTWAIT) {
        Ok((0, _)) => Idle::Closed,
        Ok(_) => Idle::Data,
        Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => Idle::Quiet,
        Err(_) => Idle::Closed,
    }
}

/// Starts connecting to `addr` without blocking. The socket exists (and can be shut down from
/// another thread to end the attempt) before [`finish_connect`] waits for it.
pub fn start_connect(addr: &SocketAddr) -> io::Result<TcpStream> {
    let sock = Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    sock.set_nonblocking(true)?;
    match sock.connect(&SockAddr::from(*addr)) {
        Ok(()) => {}
        Err(e) if in_progress(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(sock.into())
}

fn in_progress(e: &io::Error) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        return true;
    }
    e.kind() == io::ErrorKind::WouldBlock
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
