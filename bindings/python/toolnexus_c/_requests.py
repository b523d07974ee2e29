"""Requests that block in the library and carry an id of their own: tn_read_resource_ex and
tn_get_prompt_ex (c-api.md "Resources", "Prompts"). The library has no asynchronous form of
them, so:

- wait(): on the main thread, the tn_call_tool_ex machinery of _interrupt (the request runs on
  this thread and a SIGINT cancels it by its id, KeyboardInterrupt then raised as always); when
  the host has its own SIGINT (or SIGTERM, SIGALRM, ...) handler, the request runs on a worker
  thread while this one waits in slices, so that handler runs and, if it raises, cancels the
  request. Elsewhere (another thread, inside a resolver) the request simply runs on this thread.
- wait_async(): the request runs on a thread of its own, the coroutine awaits its outcome, and
  cancelling the awaiting task cancels the request by its id (TN_ERR_CANCELLED in the library;
  the task itself ends with asyncio.CancelledError).

A run is `run(call_id_ref)`: the _ex call through _ffi.call_out, with ctypes.byref(c_uint64) for
the id (written by the library before the request goes out, 0 again once it returned) or None.
"""

from __future__ import annotations

import asyncio
import ctypes
import queue
import threading
import time
from typing import Any, Callable, Optional, Tuple

from . import _ffi, _interrupt

Run = Callable[[Any], Optional[bytes]]

# How long a waiting main thread sleeps between looks at pending signals (as for calls).
_WAIT_SLICE = 0.1
# A cancel that comes before the library has published the id looks again this often.
_ID_POLL_S = 0.001


def _cancel_when_known(handle: Any, call_id: "ctypes.c_uint64", finished: threading.Event) -> None:
    """tn_call_cancel of the request once its id is known; nothing once it has finished. Quiet:
    a request that ended meanwhile (TN_ERR_NOT_FOUND) or a closed client is nothing to cancel."""

    def cancel() -> None:
        while call_id.value == 0:
            if finished.is_set():
                return
            time.sleep(_ID_POLL_S)
        try:
            _ffi.lib().tn_call_cancel(handle, call_id.value)
        except BaseException:
            pass

    if call_id.value != 0:
        cancel()
    elif not finished.is_set():
        threading.Thread(target=cancel, name="toolnexus-cancel", daemon=True).start()


def _on_thread(run: Run, call_id: "ctypes.c_uint64",
               deliver: Callable[[Tuple[Optional[bytes], Optional[BaseException]]], None],
               finished: threading.Event) -> None:
    """Starts run on a thread of its own; deliver gets (output, None) or (None, the error)."""

    def work() -> None:
        outcome: Tuple[Optional[bytes], Optional[BaseException]]
        try:
            outcome = (run(ctypes.byref(call_id)), None)
        except BaseException as e:  # the library's error, raised on this thread
            outcome = (None, e)
        finished.set()
        deliver(outcome)

    threading.Thread(target=work, name="toolnexus-request", daemon=True).start()


def wait(handle: Any, run: Run, in_resolver: bool) -> Optional[bytes]:
    """Runs the request for a synchronous caller (see the module's docstring)."""
    if in_resolver or threading.current_thread() is not threading.main_thread() or _interrupt.nothing_to_watch():
        return run(None)
    if _interrupt.fast_path_ok():
        try:
            out: Optional[bytes] = _interrupt.call(_ffi.lib().tn_call_cancel, handle,
                                                   lambda call_id: run(ctypes.byref(call_id)))
            return out
        except _interrupt.Unavailable:
            pass
    # The host's own signal handlers run while the request goes on: the sliced wait.
    q: "queue.SimpleQueue[Tuple[Optional[bytes], Optional[BaseException]]]" = queue.SimpleQueue()
    call_id = ctypes.c_uint64(0)
    finished = threading.Event()
    _on_thread(run, call_id, q.put, finished)
    try:
        while True:
            try:
                text, err = q.get(timeout=_WAIT_SLICE)
            except queue.Empty:
                continue
            if err is not None:
                raise err
            return text
    except BaseException:
        _cancel_when_known(handle, call_id, finished)
        raise


async def wait_async(handle: Any, run: Run) -> Optional[bytes]:
    """Runs the request on a thread of its own and awaits it; cancelling the awaiting task
    cancels the request."""
    loop = asyncio.get_running_loop()
    fut: "asyncio.Future[Optional[bytes]]" = loop.create_future()
    call_id = ctypes.c_uint64(0)
    finished = threading.Event()

    def settle(outcome: Tuple[Optional[bytes], Optional[BaseException]]) -> None:  # on the loop
        if fut.done():
            return
        text, err = outcome
        if err is not None:
            fut.set_exception(err)
        else:
            fut.set_result(text)

    def deliver(outcome: Tuple[Optional[bytes], Optional[BaseException]]) -> None:
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the loop is closed: nobody awaits any more
            pass

    _on_thread(run, call_id, deliver, finished)
    try:
        return await fut
    except asyncio.CancelledError:
        _cancel_when_known(handle, call_id, finished)
        raise
