//! The direct path's socket calls on POSIX (rustix): `MSG_NOSIGNAL` on Linux, `SO_NOSIGPIPE` on
//! Apple platforms.

use crate::sys::types::Idle;
use std::io;
use std::net::TcpStream;
use std::time::Duration;

/// Makes `sock` unable to raise SIGPIPE where that is a property of the socket: on Apple
/// platforms `SO_NOSIGPIPE` (socket2 sets it on the sockets it creates; set again here so the
/// direct path does not depend on that). Elsewhere each send says `MSG_NOSIGNAL` instead.
#[cfg(target_vendor = "apple")]
pub fn no_sigpipe(sock: &socket2::Socket) -> io::Result<()> {
    rustix::net::sockopt::set_socket_nosigpipe(sock, true).map_err(io::Error::from)
}

/// See the Apple version: here every send carries `MSG_NOSIGNAL`.
#[cfg(not(target_vendor = "apple"))]
pub fn no_sigpipe(_sock: &socket2::Socket) -> io::Result<()> {
    Ok(())
}

/// Sends what it can of `buf` without blocking (a full send buffer is `WouldBlock`) and without
/// raising SIGPIPE: `MSG_NOSIGNAL` where it exists; on Apple platforms the socket carries
/// `SO_NOSIGPIPE` instead ([`no_sigpipe`]).
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

/// Peeks at `sock` (one system call, nothing consumed).
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

/// Whether a non-blocking connect is under way (`EINPROGRESS`).
pub fn connect_in_progress(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINPROGRESS)
}
