//! A child's pipes on Windows: named pipes (anonymous pipes cannot do overlapped I/O), our end
//! overlapped, the child's end an ordinary synchronous handle. Overlapped I/O is what bounds a
//! write to a child that stops reading (a deadline, then the write is cancelled) and what lets
//! one completion port wait for every child's stderr ([`super::poller`]).

use super::millis;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_BROKEN_PIPE, ERROR_HANDLE_EOF, ERROR_IO_INCOMPLETE,
    ERROR_IO_PENDING, ERROR_PIPE_BUSY, GENERIC_READ, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE,
    WAIT_OBJECT_0,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, ReadFile, WriteFile, FILE_FLAG_FIRST_PIPE_INSTANCE, FILE_FLAG_OVERLAPPED,
    FILE_WRITE_ATTRIBUTES, OPEN_EXISTING, PIPE_ACCESS_INBOUND, PIPE_ACCESS_OUTBOUND,
};
use windows_sys::Win32::System::Pipes::{
    CreateNamedPipeW, PeekNamedPipe, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS,
    PIPE_TYPE_BYTE, PIPE_WAIT,
};
use windows_sys::Win32::System::Threading::{CreateEventW, WaitForSingleObject, INFINITE};
use windows_sys::Win32::System::IO::{
    CancelIoEx, GetOverlappedResult, PostQueuedCompletionStatus, OVERLAPPED,
};

/// The pipe's buffer, each way (a Linux pipe's default).
const PIPE_BUFFER: u32 = 64 * 1024;
/// One read of a polled pipe (the stderr drain reads 8 KiB at a time too).
const POLLED_READ: usize = 8 * 1024;

/// See [`crate::sys::StdinWriter`].
pub struct StdinWriter {
    pipe: OwnedHandle,
    /// The event each write waits on (a manual-reset event; a write resets it as it starts).
    event: OwnedHandle,
}

/// See [`crate::sys::StdinProbe`]: a second handle to the child's read end.
pub struct StdinProbe(OwnedHandle);

/// See [`crate::sys::OutputPipe`].
pub struct OutputPipe {
    pipe: OwnedHandle,
    event: OwnedHandle,
    /// The overlapped read a poller waits on; None until the pipe is polled.
    polled: Mutex<Option<Polled>>,
    nonblocking: AtomicBool,
}

/// A pipe as two handles: (ours, overlapped; the child's, synchronous). Neither is inheritable:
/// std makes an inheritable duplicate of the child's for the one spawn it is given to, so no
/// other child started meanwhile can inherit it (and hold the pipe open).
fn pipe(ours_reads: bool) -> io::Result<(OwnedHandle, OwnedHandle)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let salt = {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    };
    let access = if ours_reads {
        PIPE_ACCESS_INBOUND
    } else {
        PIPE_ACCESS_OUTBOUND
    };
    for _ in 0..8 {
        let name = format!(
            r"\\.\pipe\toolnexus-{}-{}-{salt:016x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let wname = super::wide(name.as_ref());
        // SAFETY: `wname` is NUL-terminated UTF-16 that outlives the call; no security
        // attributes (NULL: not inheritable); the result is checked below.
        let ours = unsafe {
            CreateNamedPipeW(
                wname.as_ptr(),
                access | FILE_FLAG_FIRST_PIPE_INSTANCE | FILE_FLAG_OVERLAPPED,
                PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
                1,
                PIPE_BUFFER,
                PIPE_BUFFER,
                0,
                std::ptr::null(),
            )
        };
        if ours == INVALID_HANDLE_VALUE {
            let e = io::Error::last_os_error();
            // Someone else has this name (FILE_FLAG_FIRST_PIPE_INSTANCE): take the next one.
            if matches!(e.raw_os_error(), Some(c) if c == ERROR_ACCESS_DENIED as i32 || c == ERROR_PIPE_BUSY as i32)
            {
                continue;
            }
            return Err(e);
        }
        // SAFETY: a handle just created and owned by nobody else.
        let ours = unsafe { OwnedHandle::from_raw_handle(ours as RawHandle) };
        // The child may change its end's mode (FILE_WRITE_ATTRIBUTES), as std's pipes allow.
        let their_access = FILE_WRITE_ATTRIBUTES
            | if ours_reads {
                GENERIC_WRITE
            } else {
                GENERIC_READ
            };
        // SAFETY: as above; the file is the pipe just created, opened synchronously.
        let theirs = unsafe {
            CreateFileW(
                wname.as_ptr(),
                their_access,
                0,
                std::ptr::null(),
                OPEN_EXISTING,
                0,
                std::ptr::null_mut(),
            )
        };
        if theirs == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        let theirs = unsafe { OwnedHandle::from_raw_handle(theirs as RawHandle) };
        return Ok((ours, theirs));
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free pipe name (eight tries)",
    ))
}

/// A manual-reset event, not signalled, for one handle's overlapped operations.
fn event() -> io::Result<OwnedHandle> {
    // SAFETY: no attributes, no name; the result is checked.
    let h = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
    if h.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle just created and owned by nobody else.
    Ok(unsafe { OwnedHandle::from_raw_handle(h as RawHandle) })
}

fn raw(h: &OwnedHandle) -> HANDLE {
    h.as_raw_handle() as HANDLE
}

/// A pipe for a child's stdin: (read end for the child, write end for us, a second handle to
/// the read end that we keep). While we hold it the pipe always has a reader, so a write never
/// fails because the child closed its stdin (as on POSIX, a dead child is noticed by its
/// stdout), and it tells how much the child has not read yet.
pub(super) fn stdin_pipe() -> io::Result<(OwnedHandle, StdinWriter, StdinProbe)> {
    let (write, read) = pipe(false)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create the stdin pipe: {e}")))?;
    let keep = read.try_clone()?;
    Ok((
        read,
        StdinWriter {
            pipe: write,
            event: event()?,
        },
        StdinProbe(keep),
    ))
}

/// A pipe for a child's stdout or stderr: (our end, the child's end).
pub(super) fn output_pipe() -> io::Result<(OutputPipe, OwnedHandle)> {
    let (ours, theirs) = pipe(true)?;
    Ok((
        OutputPipe {
            pipe: ours,
            event: event()?,
            polled: Mutex::new(None),
            nonblocking: AtomicBool::new(false),
        },
        theirs,
    ))
}

/// How often a waiting writer looks at its `give_up` flag.
const GIVE_UP_CHECK: Duration = Duration::from_millis(50);

/// An overlapped operation on `pipe` that has been started: waits for it (each wait at most
/// `slice`, `keep_waiting` asked in between) and returns how many bytes it moved; when
/// `keep_waiting` says stop, the operation is cancelled (and waited for, so the buffer and the
/// OVERLAPPED are free again) and its error returned.
fn finish(
    pipe: &OwnedHandle,
    event: &OwnedHandle,
    ov: &mut OVERLAPPED,
    started: bool,
    mut keep_waiting: impl FnMut() -> io::Result<Duration>,
) -> io::Result<u32> {
    if !started {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(ERROR_IO_PENDING as i32) {
            return Err(e);
        }
        loop {
            let slice = match keep_waiting() {
                Ok(slice) => slice,
                Err(why) => {
                    // SAFETY: cancels only this operation (its OVERLAPPED), on our own handle.
                    unsafe { CancelIoEx(raw(pipe), ov) };
                    let mut n = 0u32;
                    // SAFETY: waits for the cancelled operation to end, so that the kernel no
                    // longer writes to `ov` or the buffer once we return.
                    unsafe { GetOverlappedResult(raw(pipe), ov, &mut n, 1) };
                    return Err(why);
                }
            };
            // SAFETY: a wait on our own event handle.
            if unsafe { WaitForSingleObject(raw(event), millis(slice)) } == WAIT_OBJECT_0 {
                break;
            }
        }
    }
    let mut n = 0u32;
    // SAFETY: the operation is complete (or completed synchronously); this only reads its
    // result from `ov`.
    if unsafe { GetOverlappedResult(raw(pipe), ov, &mut n, 1) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n)
}

/// An OVERLAPPED for one operation that signals `event`.
fn overlapped(event: &OwnedHandle) -> OVERLAPPED {
    // SAFETY: OVERLAPPED is plain data; all zero is its documented initial state.
    let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
    ov.hEvent = raw(event);
    ov
}

impl StdinWriter {
    /// Writes `a` then `b` (a message and its newline); a full pipe is waited on until
    /// `deadline`, and not at all once `give_up` is set: then the write is cancelled.
    pub fn write_all(
        &self,
        a: &[u8],
        b: &[u8],
        deadline: Instant,
        give_up: &AtomicBool,
    ) -> io::Result<()> {
        for mut part in [a, b] {
            while !part.is_empty() {
                let n = self.write_some(part, deadline, give_up)? as usize;
                part = &part[n.min(part.len())..];
            }
        }
        Ok(())
    }

    fn write_some(&self, buf: &[u8], deadline: Instant, give_up: &AtomicBool) -> io::Result<u32> {
        let len = buf.len().min(u32::MAX as usize) as u32;
        let mut ov = overlapped(&self.event);
        // SAFETY: `buf` and `ov` stay valid until the operation has ended: `finish` returns
        // only once it completed or was cancelled and waited for.
        let started = unsafe {
            WriteFile(
                raw(&self.pipe),
                buf.as_ptr(),
                len,
                std::ptr::null_mut(),
                &mut ov,
            )
        } != 0;
        finish(&self.pipe, &self.event, &mut ov, started, || {
            if give_up.load(Ordering::Acquire) {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the connection is closing",
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the server is not reading its stdin",
                ));
            }
            Ok(left.min(GIVE_UP_CHECK))
        })
    }
}

impl StdinProbe {
    /// How many bytes written to the pipe its reader has not read yet.
    pub fn unread_bytes(&self) -> io::Result<u64> {
        let mut avail = 0u32;
        // SAFETY: no buffer (size 0); only the count is written, to a local.
        let ok = unsafe {
            PeekNamedPipe(
                raw(&self.0),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                &mut avail,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::from(avail))
    }
}

/// A polled pipe's one read, on the heap so that its address stays put while the kernel
/// writes to it (the OutputPipe may move; this does not).
struct Polled {
    op: *mut PolledRead,
    state: ReadState,
    /// The poller's port and this pipe's token there, to wake the drain when bytes are left
    /// with no read under way (the drain stopped early; see [`OutputPipe::read_polled`]).
    port: OwnedHandle,
    token: usize,
}

struct PolledRead {
    ov: OVERLAPPED,
    buf: [u8; POLLED_READ],
}

#[derive(Clone, Copy, PartialEq)]
enum ReadState {
    /// No read started.
    Idle,
    /// A read is under way.
    Pending,
    /// A read completed: bytes `from..to` of the buffer are not consumed yet.
    Ready { from: usize, to: usize },
    /// The pipe ended (every writer closed it).
    Ended,
}

// SAFETY: the raw pointer is to a heap block this value owns alone; it is only used under the
// OutputPipe's mutex.
unsafe impl Send for Polled {}

fn is_end(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(c) if c == ERROR_BROKEN_PIPE as i32 || c == ERROR_HANDLE_EOF as i32)
}

impl OutputPipe {
    /// Reads once into the spare capacity of `buf`, appending, waiting until bytes come;
    /// returns how many came (0 at end of file). The buffer is never zeroed first (see the
    /// POSIX implementation for why).
    pub fn read_appending(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let spare = buf.spare_capacity_mut();
        let len = spare.len().min(u32::MAX as usize) as u32;
        let ptr = spare.as_mut_ptr().cast::<u8>();
        let n = self.read_blocking(ptr, len)? as usize;
        // SAFETY: the kernel initialised the first `n` bytes of the spare capacity (n <= len).
        unsafe { buf.set_len(buf.len() + n) };
        Ok(n)
    }

    /// Reads once into `buf`: waiting until bytes come, or (once [`Self::set_nonblocking`]
    /// was called and the pipe was given to a poller) `WouldBlock` while its read is pending.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        if self.nonblocking.load(Ordering::Acquire) {
            return self.read_polled(buf);
        }
        let len = buf.len().min(u32::MAX as usize) as u32;
        Ok(self.read_blocking(buf.as_mut_ptr(), len)? as usize)
    }

    /// Makes reads return `WouldBlock` instead of waiting (for the stderr drain, whose poller
    /// starts the pipe's overlapped read).
    pub fn set_nonblocking(&self) -> io::Result<()> {
        self.nonblocking.store(true, Ordering::Release);
        Ok(())
    }

    /// One overlapped read into `ptr..ptr+len`, waited for.
    fn read_blocking(&self, ptr: *mut u8, len: u32) -> io::Result<u32> {
        let mut ov = overlapped(&self.event);
        // SAFETY: the caller's buffer of `len` bytes and `ov` stay valid until the read ended:
        // `finish` waits without a limit here.
        let started =
            unsafe { ReadFile(raw(&self.pipe), ptr, len, std::ptr::null_mut(), &mut ov) } != 0;
        match finish(&self.pipe, &self.event, &mut ov, started, || {
            Ok(Duration::from_millis(u64::from(INFINITE - 1)))
        }) {
            Err(e) if is_end(&e) => Ok(0),
            r => r,
        }
    }

    pub(super) fn raw(&self) -> HANDLE {
        raw(&self.pipe)
    }

    /// Starts the overlapped read a poller waits for (its completion is the pipe's readiness).
    pub(super) fn start_polling(&self, port: &OwnedHandle, token: usize) -> io::Result<()> {
        let mut polled = super::lock(&self.polled);
        if polled.is_none() {
            let port = port.try_clone()?;
            let op = Box::new(PolledRead {
                // SAFETY: OVERLAPPED is plain data, all zero to start with; no event (the
                // completion goes to the port).
                ov: unsafe { std::mem::zeroed() },
                buf: [0; POLLED_READ],
            });
            *polled = Some(Polled {
                op: Box::into_raw(op),
                state: ReadState::Idle,
                port,
                token,
            });
        }
        let p = polled.as_mut().expect("set above");
        if p.state == ReadState::Idle {
            self.start_read(p)?;
        }
        Ok(())
    }

    /// Starts a read into the polled buffer; it may complete at once.
    fn start_read(&self, p: &mut Polled) -> io::Result<()> {
        // SAFETY: `p.op` is our live heap block, not in use by the kernel (state Idle); the
        // kernel may write to its OVERLAPPED and buffer until the read completes, which only
        // `poll_result` (or the drop's cancel) observes.
        let started = unsafe {
            let op = p.op;
            (*op).ov = std::mem::zeroed();
            ReadFile(
                raw(&self.pipe),
                std::ptr::addr_of_mut!((*op).buf).cast(),
                POLLED_READ as u32,
                std::ptr::null_mut(),
                std::ptr::addr_of_mut!((*op).ov),
            )
        } != 0;
        if started {
            p.state = ReadState::Pending;
            return self.poll_result(p);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(ERROR_IO_PENDING as i32) {
            p.state = ReadState::Pending;
            Ok(())
        } else if is_end(&e) {
            p.state = ReadState::Ended;
            Ok(())
        } else {
            Err(e)
        }
    }

    /// Whether the pending read has completed (no wait): then its bytes are Ready.
    fn poll_result(&self, p: &mut Polled) -> io::Result<()> {
        let mut n = 0u32;
        // SAFETY: `p.op` is live; no wait, only a look at the operation's status.
        let done = unsafe {
            GetOverlappedResult(raw(&self.pipe), std::ptr::addr_of!((*p.op).ov), &mut n, 0)
        } != 0;
        if done {
            p.state = if n == 0 {
                ReadState::Idle
            } else {
                ReadState::Ready {
                    from: 0,
                    to: n as usize,
                }
            };
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(ERROR_IO_INCOMPLETE as i32) {
            Ok(())
        } else if is_end(&e) {
            p.state = ReadState::Ended;
            Ok(())
        } else {
            p.state = ReadState::Idle;
            Err(e)
        }
    }

    /// The drain's read: the bytes of the completed read, then the next read is started, so
    /// that a completion always follows (the poller is level-triggered: if the drain stops
    /// reading with bytes left, or the next read has completed at once, a wake-up is posted).
    fn read_polled(&self, out: &mut [u8]) -> io::Result<usize> {
        let mut polled = super::lock(&self.polled);
        let Some(p) = polled.as_mut() else {
            return Err(io::ErrorKind::WouldBlock.into());
        };
        let r = self.take_polled(p, out);
        if r.as_ref().is_ok_and(|n| *n > 0) {
            if p.state == ReadState::Idle {
                // Keep a read under way; an error shows at the next read.
                let _ = self.start_read(p);
            }
            if p.state != ReadState::Pending {
                // SAFETY: posts an empty packet with our token to the port we hold open.
                unsafe { PostQueuedCompletionStatus(raw(&p.port), 0, p.token, std::ptr::null()) };
            }
        }
        r
    }

    fn take_polled(&self, p: &mut Polled, out: &mut [u8]) -> io::Result<usize> {
        for _ in 0..2 {
            match p.state {
                ReadState::Pending => self.poll_result(p)?,
                ReadState::Idle => self.start_read(p)?,
                _ => {}
            }
            match p.state {
                ReadState::Ready { from, to } => {
                    let n = (to - from).min(out.len());
                    // SAFETY: the read completed: the kernel no longer writes to the buffer,
                    // whose bytes from..to it filled.
                    let src = unsafe { &(&(*p.op).buf)[from..from + n] };
                    out[..n].copy_from_slice(src);
                    p.state = if from + n == to {
                        ReadState::Idle
                    } else {
                        ReadState::Ready { from: from + n, to }
                    };
                    return Ok(n);
                }
                ReadState::Ended => return Ok(0),
                ReadState::Pending => return Err(io::ErrorKind::WouldBlock.into()),
                // A read that completed empty: start the next one.
                ReadState::Idle => {}
            }
        }
        Err(io::ErrorKind::WouldBlock.into())
    }

    /// Ends the polled read, if one is under way, and waits until the kernel is done with it.
    pub(super) fn stop_polling(&self) {
        let mut polled = super::lock(&self.polled);
        if let Some(p) = polled.as_mut() {
            if p.state == ReadState::Pending {
                // SAFETY: cancels this pipe's read (its OVERLAPPED) and waits for it to end,
                // so the heap block is no longer the kernel's.
                unsafe {
                    let ov = std::ptr::addr_of_mut!((*p.op).ov);
                    CancelIoEx(raw(&self.pipe), ov);
                    let mut n = 0u32;
                    GetOverlappedResult(raw(&self.pipe), ov, &mut n, 1);
                }
                p.state = ReadState::Ended;
            }
        }
    }
}

impl Drop for OutputPipe {
    fn drop(&mut self) {
        self.stop_polling();
        if let Some(p) = super::lock(&self.polled).take() {
            // SAFETY: no read is under way (stop_polling waited for it): the block is ours alone.
            drop(unsafe { Box::from_raw(p.op) });
        }
    }
}
