//! The stderr drain's poller on POSIX: `polling` (epoll on Linux, kqueue on macOS), level-
//! triggered, so a pipe not read to the end is reported again on the next wait.

use super::pipe::OutputPipe;
use polling::{Event, Events, PollMode};
use std::io;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Mutex;

/// See [`crate::sys::Poller`].
pub struct Poller {
    poller: polling::Poller,
    /// The buffer `wait` fills (one waiter at a time: the drain's thread).
    events: Mutex<Events>,
}

/// How many events one wait takes in.
const EVENTS: NonZeroUsize = NonZeroUsize::new(64).unwrap();

impl Poller {
    pub fn new() -> io::Result<Poller> {
        Ok(Poller {
            poller: polling::Poller::new()?,
            events: Mutex::new(Events::with_capacity(EVENTS)),
        })
    }

    /// Adds `pipe`, readable or hung up (end of file reads as readable), reported with `token`.
    pub fn add(&self, pipe: &OutputPipe, token: usize) -> io::Result<()> {
        // SAFETY: `add` requires that the pipe be deleted from the poller before it is closed:
        // the drain removes every pipe ([`Poller::remove`]) before dropping it, except in a
        // process forked from the one that made the poller, which never uses that poller.
        unsafe {
            self.poller.add_with_mode(
                pipe.as_fd().as_raw_fd(),
                Event::readable(token),
                PollMode::Level,
            )
        }
    }

    /// Removes `pipe` (before it is closed).
    pub fn remove(&self, pipe: &OutputPipe) {
        let _ = self.poller.delete(pipe);
    }

    /// Waits (without a timeout) for events and appends their tokens to `tokens`.
    pub fn wait(&self, tokens: &mut Vec<usize>) -> io::Result<()> {
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        events.clear();
        self.poller.wait(&mut events, None)?;
        tokens.extend(events.iter().map(|e| e.key));
        Ok(())
    }
}
