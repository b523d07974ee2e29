"""Ctrl-C for a synchronous call on the main thread at the plain call's speed.

A plain call made on the main thread used to go through the asynchronous path (a library pool
thread, a ctypes callback into Python, a queue the main thread polled in slices so that its
signal handlers could run): about three times the latency of the same call from a worker
thread. Now the main thread makes the call itself with tn_call_tool_ex, which runs it on this
thread as tn_call_tool does and publishes its id first. Python's C-level signal handler writes
the signal's number to the wakeup fd (signal.set_wakeup_fd) even while the main thread is
inside the library; a watcher thread reads it and, for SIGINT, cancels the call in flight with
tn_call_cancel. The call then returns (its cancelled isError) and Python raises
KeyboardInterrupt on the main thread as it always does after a SIGINT.

Used only when SIGINT's handler is Python's default one (which raises KeyboardInterrupt) and
none of the signals a program handles to stop or to time out (SIGTERM, SIGHUP, SIGALRM, …) has a
Python handler: otherwise the sliced wait, where those handlers run while the call goes on and
cancel it if they raise. Other signals' Python handlers (SIGCHLD, SIGWINCH, …) run when the call
returns. The wakeup fd is ours only during the call: the one before (asyncio's, say, or none) is
put back at its end, and every byte read while we stood in for it is passed on to it.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import signal
import socket
import threading
import time
from typing import Any, Callable, List, Optional, Set, Tuple

# The call in flight: its client handle and where tn_call_tool_ex writes its id.
_Current = Tuple[Any, ctypes.c_uint64]


def _raw_getsignal() -> Callable[[int], Any]:
    # signal.getsignal wraps _signal's in an enum lookup that costs ~2 µs (an exception inside);
    # the raw handler is all we compare.
    try:
        raw: Callable[[int], Any] = getattr(importlib.import_module("_signal"), "getsignal")
        return raw
    except (ImportError, AttributeError):  # not CPython
        return signal.getsignal


_getsignal = _raw_getsignal()

# Signals whose Python handlers must run while a call waits (a program stops or times out on
# them): with one installed, the main thread waits in slices.
_PROMPT: List[int] = [getattr(signal, n) for n in
                      ("SIGTERM", "SIGHUP", "SIGALRM", "SIGQUIT", "SIGUSR1", "SIGUSR2",
                       "SIGVTALRM", "SIGPROF", "SIGBREAK") if hasattr(signal, n)]
_NOT_PYTHON = (signal.SIG_DFL, signal.SIG_IGN, None)

# A signal that comes before the call has published its id: the watcher looks again this often.
_ID_POLL_S = 0.001


def _forward(fd: int, data: bytes) -> None:
    """Passes signal bytes on to the wakeup fd we stood in for (a socket on Windows)."""
    try:
        os.write(fd, data)
        return
    except OSError:
        pass
    try:
        s = socket.socket(fileno=fd)
    except OSError:
        return
    try:
        s.send(data)
    except OSError:
        pass
    finally:
        s.detach()


class _Watch:
    """One watcher thread and its socket pair, for this process (remade after a fork)."""

    def __init__(self, cancel: Any) -> None:
        self.cancel = cancel  # cancel(handle, call_id) -> status; tn_call_cancel
        self.r, self.w = socket.socketpair()
        self.w.setblocking(False)
        self.wfd = self.w.fileno()
        # (the call in flight, or None; the wakeup fd we stand, or stood, in for, or -1),
        # swapped whole by the main thread (one store under the GIL).
        self.state: Tuple[Optional[_Current], int] = (None, -1)
        t = threading.Thread(target=self._run, name="toolnexus-sigwatch", daemon=True)
        t.start()

    def _run(self) -> None:
        while True:
            try:
                data = self.r.recv(512)
            except OSError:
                return
            if not data:
                return
            current, forward = self.state
            if forward >= 0:
                _forward(forward, data)
            if current is not None and signal.SIGINT in data:
                self._cancel(current)

    def _cancel(self, current: _Current) -> None:
        handle, call_id = current
        # The id is written before the request goes out; a SIGINT a few µs earlier waits for it
        # (or for the call to end, when current changes).
        while call_id.value == 0:
            if self.state[0] is not current:
                return
            time.sleep(_ID_POLL_S)
        try:
            self.cancel(handle, call_id.value)
        except BaseException:
            pass


class Unavailable(Exception):
    """The wakeup fd could not be installed: the caller waits the sliced way instead."""


_watch: Optional[_Watch] = None
_watch_lock = threading.Lock()
# Wakeup fds of watchers this process inherited through fork: never forwarded to.
_stale_fds: Set[int] = set()


def _after_fork() -> None:
    global _watch
    if _watch is not None:
        _stale_fds.add(_watch.wfd)
        # Forked mid-call: the parent's socket must not stay this process's wakeup fd.
        current, forward = _watch.state
        if current is not None:
            try:
                signal.set_wakeup_fd(forward)
            except (ValueError, OSError):
                pass
        _watch = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def nothing_to_watch() -> bool:
    """Whether a call on the main thread needs no watcher at all: SIGINT ignored or left to the
    system (a daemon started with nohup, say) and no signal in _PROMPT with a Python handler."""
    if _getsignal(signal.SIGINT) not in (signal.SIG_IGN, signal.SIG_DFL):
        return False
    for s in _PROMPT:
        if _getsignal(s) not in _NOT_PYTHON:
            return False
    return True


def fast_path_ok() -> bool:
    """Whether a call on the main thread may wait in the library: SIGINT's handler is Python's
    default (KeyboardInterrupt) and no signal in _PROMPT has a Python handler."""
    if _getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    for s in _PROMPT:
        if _getsignal(s) not in _NOT_PYTHON:
            return False
    return True


def call(cancel: Any, handle: Any, run: Any) -> Any:
    """run(call_id) makes the call (tn_call_tool_ex writing call_id) on this, the main, thread,
    while a SIGINT cancels it through cancel(handle, id). Raises Unavailable, before running
    anything, when no wakeup fd can be installed."""
    global _watch
    w = _watch
    if w is None:
        with _watch_lock:
            if _watch is None:
                _watch = _Watch(cancel)
            w = _watch
    wfd = w.wfd
    outer = w.state
    try:
        prev = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    except (ValueError, OSError) as e:  # not the main thread after all, or no wakeup fd here
        raise Unavailable(str(e)) from e
    nested = prev == wfd  # a call from a signal handler that ran inside another one's wait
    if nested:
        prev = outer[1]
    elif prev in _stale_fds:
        prev = -1
    call_id = ctypes.c_uint64(0)
    w.state = ((handle, call_id), prev)
    try:
        return run(call_id)
    finally:
        if nested:
            w.state = outer
        else:
            # Theirs (or none) again first; a byte the watcher reads after this still goes to
            # them, since the state keeps their fd until the next call replaces it.
            try:
                signal.set_wakeup_fd(prev)
            except (ValueError, OSError):
                pass
            w.state = (None, prev)
