//! The direct path's socket calls on Windows (docs/windows.md): there is no SIGPIPE (a send to a
//! closed connection fails with an error), no `MSG_DONTWAIT` and no `MSG_PEEK` without
//! blocking, so a send or a peek that must not block puts the socket in non-blocking mode for
//! that one call (std's `set_nonblocking`, `FIONBIO`) and back; waits are `WSAPoll`. The
//! direct path uses a socket from one thread at a time (a shutdown from another thread only
//! wakes it), so the mode switch is seen by no other call.

use crate::sys::types::Idle;
use std::io::{self, Write};
use std::net::TcpStream;
use std::os::windows::io::AsRawSocket;
use std::time::Duration;
use windows_sys::Win32::Networking::WinSock::{
    WSAPoll, POLLRDNORM, POLLWRNORM, SOCKET, SOCKET_ERROR, WSAEINPROGRESS, WSAPOLLFD,
};

/// Nothing to set: Windows has no SIGPIPE (the POSIX face's macOS sets `SO_NOSIGPIPE`).
pub fn no_sigpipe(_sock: &socket2::Socket) -> io::Result<()> {
    Ok(())
}

/// Runs `f` with `sock` non-blocking, then makes it blocking again.
fn nonblocking<T>(sock: &TcpStream, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    sock.set_nonblocking(true)?;
    let r = f();
    let back = sock.set_nonblocking(false);
    let r = r?;
    back?;
    Ok(r)
}

/// Sends what it can of `buf` without blocking (a full send buffer is `WouldBlock`).
pub fn send(sock: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    nonblocking(sock, || loop {
        match (&*sock).write(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    })
}

/// Whether `sock` turned readable (`write`: writable), waiting at most `within`. A socket that
/// failed or was shut down counts as ready (the next call on it tells how).
pub fn wait(sock: &TcpStream, write: bool, within: Duration) -> io::Result<bool> {
    let mut fd = WSAPOLLFD {
        fd: sock.as_raw_socket() as SOCKET,
        events: if write { POLLWRNORM } else { POLLRDNORM },
        revents: 0,
    };
    let ms = within.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: one valid WSAPOLLFD for an open socket (we borrow it), its count given.
    let n = unsafe { WSAPoll(&mut fd, 1, ms) };
    if n == SOCKET_ERROR {
        return Err(io::Error::last_os_error());
    }
    Ok(n > 0)
}

/// Peeks at `sock` (nothing consumed).
pub fn peek_idle(sock: &TcpStream) -> Idle {
    let mut byte = [0u8; 1];
    match nonblocking(sock, || sock.peek(&mut byte)) {
        Ok(0) => Idle::Closed,
        Ok(_) => Idle::Data,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
        {
            Idle::Quiet
        }
        Err(_) => Idle::Closed,
    }
}

/// Whether a non-blocking connect is under way (`WSAEWOULDBLOCK`, which std reports as
/// `WouldBlock`, or `WSAEINPROGRESS`).
pub fn connect_in_progress(e: &io::Error) -> bool {
    e.raw_os_error() == Some(WSAEINPROGRESS)
}
