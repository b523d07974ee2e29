"""toolnexus_c: Python bindings (ctypes) for libtoolnexus, the Rust MCP client with a C ABI.

    import toolnexus_c as tn
    with tn.connect({"mcpServers": {...}}, resolver=lambda req: tn.accept({"name": "Ada"})) as c:
        print([t["name"] for t in c.tools()])
        print(c.call("forms_ask_name", {}).output)

The resolver gets a §10 Request (a dict: id, kind, prompt, url?, data?; `.json` holds the
exact text) and returns a §10 Answer: a dict (see accept/decline/cancel), a str of Answer JSON
sent verbatim, None (no answer: cancel), or a concurrent.futures.Future of one of those for an
answer given later from any thread, or SUSPEND to suspend an MRTR / -32042 question durably
(the call returns at once with result.pending; Client.resume finishes it, from any process
connected with the same config). If it raises, the server sees cancel and the traceback is
kept in Client.resolver_errors. Library errors raise ToolnexusError subclasses whose message is
the library's own (tn_last_error_message).

Calls the host controls (contract §7): `client.call(name, args, timeout_ms=…, on_progress=…)`
waits, and Ctrl-C (KeyboardInterrupt) while it waits cancels the call at the server;
`await client.call_async(name, args, timeout_ms=…, on_progress=…)` is the asyncio form, and
cancelling the awaiting task cancels the call at the server. on_progress gets a Progress on the
waiting thread (the event loop's thread for call_async), in order, before the result.

Long-lived hosts: `Client(config, on_event=fn)` hands fn every event as a dict
(`{"type": "status"|"tools"|"log", "server": …, …}`, docs/live-servers.md) on the library's
event thread, in order; `async for event in client.events(): …` is the asyncio form (call it in
a coroutine; the iteration ends when the client closes). Both may be used at once.

Resources, prompts and completions: `client.resources()`, `resource_templates()`,
`read_resource(server, uri)` (`content_bytes(content)` decodes a blob; `uri_template(t, values)`
expands a template), `subscribe(server, uri)` / `unsubscribe`, `prompts()`, `get_prompt(name,
{"arg": "value"})`, `complete(server, prompt_ref(name), argument, value, context)`. A read or a
prompt takes timeout_ms, stops on Ctrl-C on the main thread like a call, and has an asyncio form
(`read_resource_async`, `get_prompt_async`) that a cancelled task cancels. Their events:
`{"type": "resource_updated", "server", "uri"}` for a subscribed uri;
`{"type": "resources", "server", "added", "removed", "changed": [uri…], "templates": {"added",
"removed", "changed": [uriTemplate…]}}` and `{"type": "prompts", "server", "added", "removed",
"changed": [prompt host name…]}` when a server's lists change (the client lists them again
first, so resources() and prompts() already hold the new lists). Their failures raise NotFound,
ServerError, Timeout or Cancelled.

Not the `toolnexus` package on PyPI (the pure-Python port): this one drives the Rust library.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import concurrent.futures
import ctypes
import enum
import functools
import itertools
import json
import queue
import threading
import traceback
import weakref
from typing import Any, Callable, Deque, Dict, Final, List, Optional, Set, Tuple, Union

from . import _ffi, _interrupt, _requests
from ._ffi import (  # noqa: F401  (re-exported)
    Cancelled,
    Closed,
    ConfigError,
    Internal,
    InvalidArgument,
    InvalidJson,
    NotFound,
    Panic,
    Reentrant,
    ServerError,
    Timeout,
    ToolnexusError,
    library_path,
)

__all__ = [
    "connect", "Client", "ToolResult", "Progress", "Request", "EventStream", "EventHandler",
    "Answer", "Resolver", "JsonArg", "ProgressHandler",
    "accept", "decline", "cancel", "SUSPEND", "Suspend",
    "elicitation_to_request", "answer_to_result", "server_request_response", "sanitize_name",
    "tools_to_provider", "uri_template", "content_bytes", "prompt_ref", "resource_ref",
    "version", "library_path",
    "ToolnexusError", "InvalidArgument", "InvalidJson", "ConfigError", "NotFound", "Closed",
    "Reentrant", "Panic", "Internal", "ServerError", "Timeout", "Cancelled",
]

__version__ = "0.1.0"

CANCEL_ANSWER = b'{"ok":false,"reason":"cancelled"}'
_MAX_RESOLVER_ERRORS = 100
# How long a synchronous call on the main thread waits between looks at pending signals.
_WAIT_SLICE = 0.1

JsonArg = Union[str, bytes, bytearray, Dict[str, Any], List[Any]]
"""JSON given to the library: text (str/bytes, sent as is) or a value for json.dumps."""



class Suspend(enum.Enum):
    """The type of SUSPEND, its only value."""

    SUSPEND = "suspend"

    def __repr__(self) -> str:
        return "toolnexus_c.SUSPEND"


SUSPEND: Final = Suspend.SUSPEND
"""A resolver's return that suspends the question durably (contract §6): counts for an MRTR or
-32042 question (a modern server's); for a legacy elicitation or an OAuth login it is cancel.
The call then returns at once, not an error, with ToolResult.pending {"requests", "resume"};
Client.resume(pending["resume"], answers) continues it, from any thread or another process
connected with the same config. Returned at once only: a Future that completes with it is cancel."""

Answer = Union[Dict[str, Any], str, bytes, None, Suspend, "concurrent.futures.Future[Any]"]
"""What a resolver returns: an Answer dict, Answer JSON text, None (cancel), SUSPEND, or a
Future of an Answer dict / text / None."""


def version() -> str:
    """The library's version, e.g. "0.1.0"."""
    v: bytes = _ffi.lib().tn_version()
    return v.decode("utf-8")


# ---------------------------------------------------------------- answers


def accept(data: Optional[Dict[str, Any]] = None, id: Optional[str] = None) -> Dict[str, Any]:  # noqa: A002
    """An accepting Answer: {"ok": true, "data": data?} (the §10 field is called id)."""
    a: Dict[str, Any] = {"ok": True}
    if id is not None:
        a["id"] = id
    if data is not None:
        a["data"] = data
    return a


def decline(id: Optional[str] = None) -> Dict[str, Any]:  # noqa: A002
    """A declining Answer: the server sees {"action":"decline"}."""
    a: Dict[str, Any] = {"ok": False, "reason": "declined"}
    if id is not None:
        a["id"] = id
    return a


def cancel(id: Optional[str] = None) -> Dict[str, Any]:  # noqa: A002
    """A cancelling Answer: the server sees {"action":"cancel"}."""
    a: Dict[str, Any] = {"ok": False, "reason": "cancelled"}
    if id is not None:
        a["id"] = id
    return a


class Request(Dict[str, Any]):
    """A §10 Request as a dict ({"id", "kind", "prompt", "url"?, "data"?, ...});
    `.json` is the exact text the library produced."""

    __slots__ = ("json",)
    json: str


Resolver = Callable[[Request], Answer]
"""A resolver: gets a §10 Request, returns an Answer (see the module's docstring)."""

# Set while this thread runs a resolver: a synchronous call made there uses tn_call_tool, which
# refuses (TN_ERR_REENTRANT) what would deadlock instead of waiting for it.
_in_resolver = threading.local()


def _timeout_options(timeout_ms: Optional[int]) -> Optional[bytes]:
    """The options_json of a call with its own timeout, or None."""
    if timeout_ms is None:
        return None
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise TypeError("timeout_ms must be an int (milliseconds), got %s" % type(timeout_ms).__name__)
    return _json_text({"timeoutMs": timeout_ms}, "options")


def _json_text(value: JsonArg, what: str) -> bytes:
    """JSON text for the library: str/bytes verbatim, anything else through json.dumps."""
    if isinstance(value, (str, bytes, bytearray)):
        return _ffi.text_arg(value, what)
    return _ffi.text_arg(json.dumps(value, ensure_ascii=False, separators=(",", ":")), what)


# ---------------------------------------------------------------- the resolver bridge


class _Bridge:
    """Turns a Python resolver into a tn_resolver_fn. Holds the CFUNCTYPE object (it must live
    as long as the library may call it) and never references the Client, so an unclosed Client
    can still be collected (its __del__ disconnects). Nothing raised ever reaches C."""

    def __init__(self, fn: Resolver, deferrable: bool) -> None:
        if not callable(fn):
            raise TypeError("resolver must be callable, got %s" % type(fn).__name__)
        self.fn = fn
        self.deferrable = deferrable
        self.errors: Deque[str] = collections.deque(maxlen=_MAX_RESOLVER_ERRORS)
        self.c = _ffi.RESOLVER(self._trampoline)

    def _note(self, text: str) -> None:
        try:
            self.errors.append(text)
        except BaseException:
            pass

    def _trampoline(self, user_data: Optional[int], request_json: bytes, responder: Optional[int]) -> int:
        outer = getattr(_in_resolver, "active", False)
        try:
            req = Request(json.loads(request_json.decode("utf-8")))
            req.json = request_json.decode("utf-8")
            _in_resolver.active = True
            try:
                value = self.fn(req)
            finally:
                _in_resolver.active = outer
            if value is SUSPEND:
                return _ffi.TN_SUSPEND
            if isinstance(value, concurrent.futures.Future):
                if self.deferrable:
                    value.add_done_callback(functools.partial(self._future_done, responder))
                    return _ffi.TN_DEFERRED
                # The pure function's responder dies when we return: only a finished future counts.
                if not value.done():
                    self._note("resolver returned a Future that is not done; "
                               "server_request_response answers synchronously: cancel")
                    return _ffi.RESOLVER_FAILED
                value = value.result()  # raises what the future raised: cancel
                if value is SUSPEND:
                    return _ffi.TN_SUSPEND  # the library makes it cancel for a legacy request
            if value is None:
                return _ffi.TN_RESOLVED  # no answer: the server sees cancel
            return _ffi.TN_RESOLVED if self._answer(responder, value) else _ffi.RESOLVER_FAILED
        except BaseException:  # never let anything escape into C
            try:
                self._note(traceback.format_exc())
            except BaseException:
                pass
            return _ffi.RESOLVER_FAILED

    def _answer(self, responder: Optional[int], value: Answer) -> bool:
        text = _json_text(value, "answer")  # type: ignore[arg-type]  # a Future never gets here
        status = _ffi.lib().tn_responder_answer(responder, text)
        if status == _ffi.TN_OK:
            return True
        self._note("tn_responder_answer refused %r: %s" % (text, _ffi.error_for(status)))
        return False

    def _future_done(self, responder: Optional[int], fut: "concurrent.futures.Future[Any]") -> None:
        # Runs on whichever thread completed the future (or at once, if it was already done).
        try:
            value = None
            if fut.cancelled():
                self._note("deferred answer: the future was cancelled")
            elif (exc := fut.exception()) is not None:
                self._note("deferred answer raised:\n" + "".join(
                    traceback.format_exception(type(exc), exc, exc.__traceback__)))
            else:
                value = fut.result()
                if value is SUSPEND:
                    self._note("deferred answer: SUSPEND counts only when the resolver returns it; cancel")
                    value = None
            if value is not None and self._answer(responder, value):
                return
            status = _ffi.lib().tn_responder_answer(responder, CANCEL_ANSWER)
            if status not in (_ffi.TN_OK, Closed.status):
                self._note("cancelling a deferred answer failed: %s" % _ffi.error_for(status))
        except BaseException:
            try:
                self._note(traceback.format_exc())
                _ffi.lib().tn_responder_answer(responder, CANCEL_ANSWER)
            except BaseException:
                pass


# ---------------------------------------------------------------- pure functions (§4)


def elicitation_to_request(params: JsonArg) -> str:
    """MCP elicitation/create params (JSON text, or a dict) -> the §10 Request JSON text."""
    return _text(_ffi.call_out(_ffi.lib().tn_elicitation_to_request, _json_text(params, "params")))


def answer_to_result(answer: JsonArg) -> str:
    """A §10 Answer (JSON text, or a dict) -> the MCP ElicitResult JSON text."""
    return _text(_ffi.call_out(_ffi.lib().tn_answer_to_result, _json_text(answer, "answer")))


def server_request_response(message: JsonArg, resolver: Optional[Resolver] = None) -> Optional[str]:
    """One inbound JSON-RPC message (text, or a dict) -> the reply JSON text, or None when the
    message is not a server request. The resolver runs synchronously; a Future it returns
    counts only if it is already done (else: cancel)."""
    bridge = None if resolver is None else _Bridge(resolver, deferrable=False)
    out = _ffi.call_out(
        _ffi.lib().tn_server_request_response,
        _ffi.NULL_RESOLVER if bridge is None else bridge.c,
        None,
        _json_text(message, "message"),
    )
    return None if out is None else out.decode("utf-8")


def sanitize_name(name: str) -> str:
    """A tool or server name -> its §0.1 sanitized form."""
    out = _text(_ffi.call_out(_ffi.lib().tn_sanitize_name, _json_text(json.dumps(name, ensure_ascii=False), "name")))
    value: str = json.loads(out)
    return value


def tools_to_provider(tools: JsonArg, style: str) -> List[Dict[str, Any]]:
    """A JSON array of tools (as Client.tools() lists them; a list, or its JSON text) in a model
    provider's function-calling shape: style "openai", "anthropic" or "gemini"."""
    out: List[Dict[str, Any]] = json.loads(_text(_ffi.call_out(
        _ffi.lib().tn_tools_to_provider, _json_text(tools, "tools"), _ffi.text_arg(style, "style"))))
    return out


def uri_template(template: str, values: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """An RFC 6570 URI template's variables, and its expansion (levels 1-4) when values are
    given: {"variables": [name, ...], "uri"?: str}. Values are strings, numbers, booleans, lists
    or dicts (explode modifiers apply). For a resource template picker: fill the variables, then
    Client.read_resource(server, result["uri"]). A malformed template raises InvalidArgument."""
    request: Dict[str, Any] = {"template": template}
    if values is not None:
        request["values"] = values
    return _json_object(_ffi.call_out(_ffi.lib().tn_uri_template, _json_text(request, "request")))


def content_bytes(content: Dict[str, Any]) -> bytes:
    """The bytes of one resource content (an element of read_resource()'s "contents", or an
    embedded resource's "resource" in a prompt message): a blob's base64 decoded, a text's
    UTF-8. Raises ValueError for anything else, or a blob that is not base64."""
    blob = content.get("blob")
    if isinstance(blob, str):
        try:
            return base64.b64decode(blob, validate=True)
        except binascii.Error as e:
            raise ValueError("the blob of %r is not base64: %s" % (content.get("uri"), e)) from e
    text = content.get("text")
    if isinstance(text, str):
        return text.encode("utf-8")
    raise ValueError("not a resource content (no \"text\" or \"blob\"): %r" % (content,))


def prompt_ref(name: str) -> Dict[str, Any]:
    """A completion ref to a prompt, by the server's name for it (a prompt's "prompt")."""
    return {"type": "ref/prompt", "name": name}


def resource_ref(uri: str) -> Dict[str, Any]:
    """A completion ref to a resource template (its "uriTemplate") or a resource uri."""
    return {"type": "ref/resource", "uri": uri}


def _json_object(out: Optional[bytes]) -> Dict[str, Any]:
    """An out-string the library always fills with a JSON object, parsed."""
    value: Dict[str, Any] = json.loads(_text(out))
    return value


def _text(out: Optional[bytes]) -> str:
    """An out-string the library always fills, as str."""
    if out is None:
        raise Internal("the library returned no string", Internal.status)
    return out.decode("utf-8")


# ---------------------------------------------------------------- the client


class ToolResult:
    """A §0.1 ToolResult: .output (str), .is_error (bool), .metadata (dict or None), .json (text)."""

    __slots__ = ("output", "is_error", "metadata", "json")
    output: str
    is_error: bool
    metadata: Optional[Dict[str, Any]]
    json: str

    def __init__(self, text: str) -> None:
        d = json.loads(text)
        self.json = text
        self.output = d.get("output", "")
        self.is_error = bool(d.get("isError", False))
        self.metadata = d.get("metadata")

    @property
    def pending(self) -> Optional[Dict[str, Any]]:
        """A suspended call's metadata.pending: {"requests": [§10 Request, …], "resume": "tn1.…"}
        (give Client.resume the "resume" token and an answer per Request id), else None. A call
        that became a task and whose wait ended while it works also carries "task"
        ({"taskId", "status"}): Client.resume(pending["resume"], {}) collects it."""
        p = None if self.metadata is None else self.metadata.get("pending")
        return p if isinstance(p, dict) else None

    def __repr__(self) -> str:
        return "ToolResult(output=%r, is_error=%r%s)" % (
            self.output, self.is_error, "" if self.metadata is None else ", metadata=%r" % (self.metadata,))


class Progress:
    """One notifications/progress for a call: .progress (a number), .total (a number or None),
    .message (str or None), .json (the library's text). A call that became a task
    also reports each status change: .task {"taskId", "status", "statusMessage"?} and .resume,
    the token that collects the task later (Client.resume(token, {})), else both None."""

    __slots__ = ("progress", "total", "message", "json", "task", "resume")
    progress: float
    total: Optional[float]
    message: Optional[str]
    json: str
    task: Optional[Dict[str, Any]]
    resume: Optional[str]

    def __init__(self, text: str) -> None:
        d = json.loads(text)
        self.json = text
        self.progress = d.get("progress", 0)
        self.total = d.get("total")
        self.message = d.get("message")
        self.task = d.get("task")
        self.resume = d.get("resume")

    def __repr__(self) -> str:
        return "Progress(progress=%r, total=%r, message=%r)" % (self.progress, self.total, self.message)


ProgressHandler = Callable[[Progress], None]
"""on_progress: called with each Progress of the call, in order, before the result."""


# ---------------------------------------------------------------- asynchronous calls (§7)
#
# One pair of C callbacks for every call, alive as long as the module: user_data is a key into
# _pending, whose entry (what to do with the outcome) lives until done fires. Nothing raised
# ever reaches C. The callbacks only hand the outcome over (a queue, or the event loop); the
# host's code (on_progress) runs on the waiting thread, never on a library thread.

# deliver(kind, payload): kind "progress" with the progress JSON text, or "done" with a
# (ToolResult text or None, the error or None) pair. Runs on a library thread.
_Deliver = Callable[[str, Any], None]


class _Pending:
    __slots__ = ("deliver", "id")

    def __init__(self, deliver: _Deliver) -> None:
        self.deliver = deliver
        self.id = ctypes.c_uint64(0)  # written by tn_call_tool_async before done can fire


_pending: Dict[int, _Pending] = {}
_pending_lock = threading.Lock()
_keys = itertools.count(1)
_callback_errors: Deque[str] = collections.deque(maxlen=_MAX_RESOLVER_ERRORS)


def _note_callback_error() -> None:
    try:
        _callback_errors.append(traceback.format_exc())
    except BaseException:
        pass


def _on_done(user_data: Optional[int], status: int, result: Optional[bytes]) -> None:
    try:
        with _pending_lock:
            p = _pending.pop(user_data or 0, None)
        if p is None:
            return
        if status == _ffi.TN_OK and result is not None:
            p.deliver("done", (result.decode("utf-8"), None))
        else:
            # The library set the last error on this thread before calling done.
            p.deliver("done", (None, _ffi.error_for(status if status != _ffi.TN_OK else Internal.status)))
    except BaseException:
        _note_callback_error()


def _on_progress(user_data: Optional[int], progress: Optional[bytes]) -> None:
    try:
        with _pending_lock:
            p = _pending.get(user_data or 0)
        if p is not None and progress is not None:
            p.deliver("progress", progress.decode("utf-8"))
    except BaseException:
        _note_callback_error()


_DONE_C = _ffi.DONE(_on_done)
_PROGRESS_C = _ffi.PROGRESS(_on_progress)


def _outcome(payload: Tuple[Optional[str], Optional[BaseException]]) -> ToolResult:
    text, err = payload
    if err is not None:
        raise err
    assert text is not None
    return ToolResult(text)


# A starter begins one asynchronous call (tn_call_tool_async or tn_call_tool_resume_async):
# (options JSON or None, with progress?, user_data key, where the call id goes) -> the tn_status.
# It is built before anything is registered, so that bad arguments raise first.
_Starter = Callable[[Optional[bytes], bool, int, "ctypes.c_uint64"], int]


EventHandler = Callable[[Dict[str, Any]], None]
# Events an EventStream holds for a slow iterator at most; past it they are dropped (counted).
_STREAM_QUEUE: Final = 1024
_END: Final = object()


class EventStream:
    """`async for event in client.events()`: the client's events (dicts), in order, on the event
    loop that iterates; the iteration ends when the client closes (or with aclose()). Events
    that find the stream `_STREAM_QUEUE` behind are dropped and counted in `dropped`."""

    def __init__(self, client: "Client", loop: asyncio.AbstractEventLoop) -> None:
        self._client = weakref.ref(client)
        self._loop = loop
        self._queue: "asyncio.Queue[Any]" = asyncio.Queue()
        self.dropped = 0
        self._ended = False

    def _put(self, event: Any) -> None:  # on the loop's thread
        if event is _END:
            self._ended = True
            self._queue.put_nowait(_END)
        elif self._queue.qsize() >= _STREAM_QUEUE:
            self.dropped += 1
        else:
            self._queue.put_nowait(event)

    def _push(self, event: Any) -> None:  # on the library's event thread (or close's)
        try:
            self._loop.call_soon_threadsafe(self._put, event)
        except RuntimeError:  # the loop is closed: nobody iterates any more
            pass

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Dict[str, Any]:
        if self._ended and self._queue.empty():
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is _END:
            raise StopAsyncIteration
        e: Dict[str, Any] = event
        return e

    async def aclose(self) -> None:
        """Stops this stream (the client and its other streams go on)."""
        client = self._client()
        if client is not None:
            client._streams.discard(self)
        self._put(_END)


class Client:
    """A connected tn_client. Safe to use from many threads; close() (or `with`) disconnects.

    on_event: called with each event (a dict) on the library's event thread, one at
    a time; what it raises is kept in event_errors. events(): the same as an async iterator.
    Event types: "status", "tools", "log" (docs/live-servers.md), and "resource_updated",
    "resources", "prompts" (see the module's docstring for their members)."""

    _handle: Optional[int] = None

    def __init__(self, config: JsonArg, resolver: Optional[Resolver] = None, *,
                 on_event: Optional[EventHandler] = None) -> None:
        self._bridge = None if resolver is None else _Bridge(resolver, deferrable=True)
        self._lock = threading.Lock()
        self._closing = False
        self._on_event = on_event
        self._streams: Set[EventStream] = set()
        self._event_c: Optional[Any] = None
        self._event_errors: Deque[str] = collections.deque(maxlen=_MAX_RESOLVER_ERRORS)
        out = ctypes.c_void_p()
        status = _ffi.lib().tn_connect(
            _json_text(config, "config"),
            _ffi.NULL_RESOLVER if self._bridge is None else self._bridge.c,
            None,
            ctypes.byref(out),
        )
        if status != _ffi.TN_OK:
            raise _ffi.error_for(status)
        self._handle = out.value
        if on_event is not None:
            try:
                self._listen()
            except BaseException:
                self.close()
                raise

    def _listen(self) -> None:
        """Registers this client's one event callback with the library (once)."""
        with self._lock:
            if self._event_c is not None:
                return
            me = weakref.ref(self)

            def on_event(_ud: Optional[int], event_json: Optional[bytes]) -> None:  # event thread
                c = me()
                if c is not None and event_json is not None:
                    c._dispatch(event_json)

            self._event_c = _ffi.EVENT(on_event)
        status = _ffi.lib().tn_set_event_callback(self._h(), self._event_c, None)
        if status != _ffi.TN_OK:
            err = _ffi.error_for(status)
            with self._lock:
                self._event_c = None
            raise err

    def _dispatch(self, event_json: bytes) -> None:
        try:
            event = json.loads(event_json.decode("utf-8"))
            if self._on_event is not None:
                self._on_event(event)
        except BaseException:  # never into the library
            self._event_errors.append(traceback.format_exc())
            return
        for s in list(self._streams):
            s._push(event)

    def events(self) -> EventStream:
        """`async for event in client.events()`: call it in a coroutine (the stream delivers on
        that coroutine's event loop). Events from the moment it is called."""
        stream = EventStream(self, asyncio.get_running_loop())
        self._streams.add(stream)
        self._listen()
        return stream

    @property
    def event_errors(self) -> List[str]:
        """What on_event raised (tracebacks), most recent last."""
        return list(self._event_errors)

    def _h(self) -> int:
        h = self._handle
        if h is None:
            raise Closed("the client is closed", Closed.status)
        return h

    def tools_json(self) -> str:
        """The tools as the library's JSON text (an array sorted by name)."""
        return _text(_ffi.call_out(_ffi.lib().tn_list_tools, self._h()))

    def tools(self) -> List[Dict[str, Any]]:
        """[{"name", "description", "inputSchema", "source", "server", "remoteName", ...}], sorted by name."""
        tools: List[Dict[str, Any]] = json.loads(self.tools_json())
        return tools

    def statuses_json(self) -> str:
        return _text(_ffi.call_out(_ffi.lib().tn_server_statuses, self._h()))

    def statuses(self) -> Dict[str, Any]:
        """{"servers": {name: {"status": "connected"|"disabled"|"failed", "error"?: ...}}}."""
        statuses: Dict[str, Any] = json.loads(self.statuses_json())
        return statuses

    def skills(self) -> Dict[str, Any]:
        """Skills (SEP-2640): {"servers": {name: {"skills": [entry, ...], "warnings"?: [...]} or
        {"error": "..."}}} for each connected server that offers them; each entry as the server
        listed it ({"uri", "frontmatter", "resources"}). No skill file is read."""
        listing: Dict[str, Any] = json.loads(_text(_ffi.call_out(_ffi.lib().tn_list_skills, self._h())))
        return listing

    def get_skill(self, server: str, uri: str) -> Dict[str, Any]:
        """Loads one skill of `server`, its SKILL.md checked against its entry (size, SHA-256,
        frontmatter): {"server", "uri", "frontmatter", "resources", "mimeType"?, "text"}. A
        mismatch, an unknown skill or server, or a server without skills raises NotFound, whose
        message says which."""
        skill: Dict[str, Any] = json.loads(_text(_ffi.call_out(
            _ffi.lib().tn_get_skill, self._h(), _ffi.text_arg(server, "server"), _ffi.text_arg(uri, "uri"))))
        return skill

    def read_skill_file(self, server: str, skill_uri: str, file: str) -> Dict[str, Any]:
        """One file of a skill get_skill loaded, by URI or by its path in the skill, checked against
        the entry: {"server", "skill", "uri", "mimeType"?, "text" | "blob" (base64)}. A file the
        entry does not list raises NotFound without a request."""
        f: Dict[str, Any] = json.loads(_text(_ffi.call_out(
            _ffi.lib().tn_read_skill_file, self._h(), _ffi.text_arg(server, "server"),
            _ffi.text_arg(skill_uri, "skill_uri"), _ffi.text_arg(file, "file"))))
        return f

    def tasks(self, server: str) -> Dict[str, Any]:
        """Tasks (MCP 2025-11-25): {"server", "tasks": [Task, ...]}, every page of server's
        tasks/list. A server that lists none, an unknown one, or one of the 2026-07-28 era raises
        NotFound saying why."""
        listing: Dict[str, Any] = json.loads(_text(_ffi.call_out(
            _ffi.lib().tn_list_tasks, self._h(), _ffi.text_arg(server, "server"))))
        return listing

    def tools_for(self, style: str) -> List[Dict[str, Any]]:
        """The connected tools in a model provider's function-calling shape: style "openai",
        "anthropic" or "gemini" (another raises InvalidArgument); input schemas verbatim."""
        tools: List[Dict[str, Any]] = json.loads(_text(_ffi.call_out(
            _ffi.lib().tn_tools_for, self._h(), _ffi.text_arg(style, "style"))))
        return tools

    # ------------------------------------------------------------ resources

    def resources(self) -> List[Dict[str, Any]]:
        """Every connected server's resources, all pages, sorted by server then uri:
        [{"server", "uri", "name", "title"?, "description"?, "mimeType"?, "size"?,
        "annotations"?, "icons"?, "_meta"?}], each as the server listed it. A server whose
        listing failed keeps the one held before (its status's "listErrors" says why)."""
        listing: List[Dict[str, Any]] = json.loads(_text(_ffi.call_out(_ffi.lib().tn_list_resources, self._h())))
        return listing

    def resource_templates(self) -> List[Dict[str, Any]]:
        """Every connected server's resource templates, sorted by server then uriTemplate:
        [{"server", "uriTemplate", "name", ...}]. uri_template() expands one."""
        listing: List[Dict[str, Any]] = json.loads(_text(_ffi.call_out(
            _ffi.lib().tn_list_resource_templates, self._h())))
        return listing

    def read_resource(self, server: str, uri: str, *, timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """Reads uri from server: {"contents": [{"uri", "mimeType"?, "text"} | {"uri",
        "mimeType"?, "blob": base64}, ...], "_meta"?} as sent (content_bytes() decodes a blob).
        A question the server asks on the way goes to the resolver.

        Raises NotFound (unknown server or uri), ServerError (a result over maxResultBytes, or
        another failure of the server), Timeout (no answer within timeout_ms, else the server's
        timeout). On the main thread Ctrl-C cancels the read at the server and raises
        KeyboardInterrupt, as for call()."""
        h = self._h()
        s, u = _ffi.text_arg(server, "server"), _ffi.text_arg(uri, "uri")
        options = _timeout_options(timeout_ms)
        lib = _ffi.lib()
        if options is None and not self._watchable():
            return _json_object(_ffi.call_out(lib.tn_read_resource, h, s, u))
        return _json_object(_requests.wait(
            h, lambda call_id: _ffi.call_out(lib.tn_read_resource_ex, h, s, u, options, call_id),
            getattr(_in_resolver, "active", False)))

    async def read_resource_async(self, server: str, uri: str, *,
                                  timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """The asyncio form of read_resource(): the read runs on a thread of its own without
        blocking the event loop; cancelling the awaiting task cancels it at the server."""
        h = self._h()
        s, u = _ffi.text_arg(server, "server"), _ffi.text_arg(uri, "uri")
        options = _timeout_options(timeout_ms)
        lib = _ffi.lib()
        return _json_object(await _requests.wait_async(
            h, lambda call_id: _ffi.call_out(lib.tn_read_resource_ex, h, s, u, options, call_id)))

    def subscribe(self, server: str, uri: str) -> None:
        """Subscribes to uri on server (resources/subscribe; in MCP 2026-07-28 a new
        subscriptions/listen, acknowledged before this returns). Its updates come as
        {"type": "resource_updated", "server", "uri"} events (on_event, events()). Kept across
        restarts. A server that offers no subscriptions raises NotFound."""
        _ffi.call_status(_ffi.lib().tn_subscribe_resource, self._h(),
                         _ffi.text_arg(server, "server"), _ffi.text_arg(uri, "uri"))

    def unsubscribe(self, server: str, uri: str) -> None:
        """Ends the subscription to uri on server: no resource_updated event of it comes once
        this returns. A uri not subscribed to raises NotFound."""
        _ffi.call_status(_ffi.lib().tn_unsubscribe_resource, self._h(),
                         _ffi.text_arg(server, "server"), _ffi.text_arg(uri, "uri"))

    # ------------------------------------------------------------ prompts and completions

    def prompts(self) -> List[Dict[str, Any]]:
        """Every connected server's prompts, sorted by host name: [{"name": host name (made as
        tool names are, e.g. "fx_greet"), "server", "prompt": the server's name, "title"?,
        "description"?, "arguments": [{"name", "title"?, "description"?, "required"?}]}]."""
        listing: List[Dict[str, Any]] = json.loads(_text(_ffi.call_out(_ffi.lib().tn_list_prompts, self._h())))
        return listing

    def get_prompt(self, name: str, arguments: Optional[Union[Dict[str, str], str, bytes]] = None, *,
                   timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """Gets the prompt of host name `name` with arguments (a dict of strings, its JSON text,
        or None): {"description"?, "messages": [{"role", "content": {...}}, ...]}, every content
        block as the server sent it. A question the server asks on the way goes to the resolver.

        Raises NotFound (no prompt of that name), ServerError (arguments the server refuses, a
        missing required one, another failure), Timeout. On the main thread Ctrl-C cancels it
        and raises KeyboardInterrupt, as for call()."""
        h = self._h()
        n = _ffi.text_arg(name, "name")
        a = None if arguments is None else _json_text(arguments, "arguments")
        options = _timeout_options(timeout_ms)
        lib = _ffi.lib()
        if options is None and not self._watchable():
            return _json_object(_ffi.call_out(lib.tn_get_prompt, h, n, a))
        return _json_object(_requests.wait(
            h, lambda call_id: _ffi.call_out(lib.tn_get_prompt_ex, h, n, a, options, call_id),
            getattr(_in_resolver, "active", False)))

    async def get_prompt_async(self, name: str, arguments: Optional[Union[Dict[str, str], str, bytes]] = None,
                               *, timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """The asyncio form of get_prompt(), as read_resource_async() is of read_resource()."""
        h = self._h()
        n = _ffi.text_arg(name, "name")
        a = None if arguments is None else _json_text(arguments, "arguments")
        options = _timeout_options(timeout_ms)
        lib = _ffi.lib()
        return _json_object(await _requests.wait_async(
            h, lambda call_id: _ffi.call_out(lib.tn_get_prompt_ex, h, n, a, options, call_id)))

    def complete(self, server: str, ref: Dict[str, Any], argument: str, value: str,
                 context: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """completion/complete on server: the values the server proposes for `argument` of ref,
        given what is typed so far (value) and the other arguments already chosen (context, sent
        as context.arguments). ref is {"type": "ref/prompt", "name": <the server's prompt name,
        a prompt's "prompt">} (prompt_ref()) or {"type": "ref/resource", "uri": <a template>}
        (resource_ref()). Returns the server's completion object, {"values": [...], "total"?,
        "hasMore"?} ({"values": []} from a server without completions). An unknown server
        raises NotFound; a refusal of the server ServerError."""
        request: Dict[str, Any] = {"server": server, "ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            request["context"] = {"arguments": context}
        return self.complete_request(request)

    def complete_request(self, request: JsonArg) -> Dict[str, Any]:
        """complete() with the library's whole request, {"server", "ref", "argument": {"name",
        "value"}, "context"?: {"arguments": {...}}} (a dict, or its JSON text)."""
        return _json_object(_ffi.call_out(_ffi.lib().tn_complete, self._h(), _json_text(request, "request")))

    def _watchable(self) -> bool:
        """Whether a plain request made here waits where a signal must be able to stop it: on the
        main thread, outside a resolver (else it runs as is, as call() does)."""
        return (threading.current_thread() is threading.main_thread()
                and not getattr(_in_resolver, "active", False))

    def call(
        self,
        name: str,
        args: Optional[JsonArg] = None,
        *,
        timeout_ms: Optional[int] = None,
        on_progress: Optional[ProgressHandler] = None,
    ) -> ToolResult:
        """Calls a tool by its listed name with args (a dict, JSON text, or None) -> ToolResult.
        Tool errors, timeouts and dead servers are results with is_error=True; an unknown name
        raises NotFound, a closed client Closed.

        timeout_ms: this call's timeout (idle: progress restarts it), instead of the server's.
        on_progress: called on this thread with each Progress, in order, before the return.
        KeyboardInterrupt (Ctrl-C) while waiting, or an exception raised by on_progress,
        cancels the call at the server and propagates."""
        if on_progress is None:
            # Nothing to deliver here: the call runs on this thread (woken by the reader; it
            # refuses, with Reentrant, a call from an inline resolver to its own server instead
            # of deadlocking). On the main thread, tn_call_tool_ex, so that a SIGINT cancels it
            # (as fast as from a worker thread); elsewhere no signal can come.
            h = self._h()
            cname = _ffi.text_arg(name, "name")
            a = None if args is None else _json_text(args, "args")
            options = _timeout_options(timeout_ms)
            lib = _ffi.lib()
            if (threading.current_thread() is not threading.main_thread()
                    or getattr(_in_resolver, "active", False)):
                if options is None:
                    return ToolResult(_text(_ffi.call_out(lib.tn_call_tool, h, cname, a)))
                return ToolResult(_text(_ffi.call_out(lib.tn_call_tool_ex, h, cname, a, options, None)))
            if _interrupt.nothing_to_watch():
                return ToolResult(_text(_ffi.call_out(lib.tn_call_tool_ex, h, cname, a, options, None)))
            if _interrupt.fast_path_ok():
                try:
                    return ToolResult(_text(_interrupt.call(
                        lib.tn_call_cancel, h,
                        lambda call_id: _ffi.call_out(lib.tn_call_tool_ex, h, cname, a, options,
                                                      ctypes.byref(call_id)))))
                except _interrupt.Unavailable:
                    pass
            # The host's own SIGINT (or SIGTERM, SIGALRM, …) handler runs while the call goes
            # on, and cancels it if it raises: the sliced wait.
        return self._wait(self._starter(name, args), timeout_ms, on_progress)

    async def call_async(
        self,
        name: str,
        args: Optional[JsonArg] = None,
        *,
        timeout_ms: Optional[int] = None,
        on_progress: Optional[ProgressHandler] = None,
    ) -> ToolResult:
        """The asyncio form of call(): starts the call and returns its ToolResult when it ends,
        without blocking the event loop. Cancelling the awaiting task cancels the call at the
        server. on_progress runs on the event loop's thread; if it raises, the call is
        cancelled and the exception propagates here. Errors as for call()."""
        return await self._await(self._starter(name, args), timeout_ms, on_progress)

    def resume(
        self,
        token: str,
        answers: Optional[JsonArg] = None,
        *,
        timeout_ms: Optional[int] = None,
        on_progress: Optional[ProgressHandler] = None,
    ) -> ToolResult:
        """Continues a suspended call (contract §6): token is its result's pending["resume"],
        answers {"<Request id>": Answer, …} (a dict of accept()/decline()/cancel() dicts, or its
        JSON text; a Request left out is cancel). Any client connected with the same config may
        resume it, in this process or another. Returns the call's ToolResult, which may carry
        another pending. A malformed token, or a key that is no Request id of it, raises
        InvalidArgument; its server unknown to this client, failed or disabled raises NotFound.
        timeout_ms and on_progress as for call()."""
        plain = timeout_ms is None and on_progress is None
        if plain and (getattr(_in_resolver, "active", False)
                      or threading.current_thread() is not threading.main_thread()):
            t, a = self._resume_args(token, answers)
            return ToolResult(_text(_ffi.call_out(_ffi.lib().tn_call_tool_resume, self._h(), t, a)))
        return self._wait(self._resume_starter(token, answers), timeout_ms, on_progress)

    async def resume_async(
        self,
        token: str,
        answers: Optional[JsonArg] = None,
        *,
        timeout_ms: Optional[int] = None,
        on_progress: Optional[ProgressHandler] = None,
    ) -> ToolResult:
        """The asyncio form of resume(), as call_async() is of call()."""
        return await self._await(self._resume_starter(token, answers), timeout_ms, on_progress)

    def _starter(self, name: str, args: Optional[JsonArg]) -> _Starter:
        h = self._h()
        cname = _ffi.text_arg(name, "name")
        a = None if args is None else _json_text(args, "args")

        def start(options: Optional[bytes], progress: bool, key: int, call_id: "ctypes.c_uint64") -> int:
            status: int = _ffi.lib().tn_call_tool_async(
                h, cname, a, options, _DONE_C, _PROGRESS_C if progress else _ffi.NULL_PROGRESS, key,
                ctypes.byref(call_id))
            return status
        return start

    @staticmethod
    def _resume_args(token: str, answers: Optional[JsonArg]) -> Tuple[bytes, Optional[bytes]]:
        return _ffi.text_arg(token, "token"), None if answers is None else _json_text(answers, "answers")

    def _resume_starter(self, token: str, answers: Optional[JsonArg]) -> _Starter:
        h = self._h()
        t, a = self._resume_args(token, answers)

        def start(options: Optional[bytes], progress: bool, key: int, call_id: "ctypes.c_uint64") -> int:
            status: int = _ffi.lib().tn_call_tool_resume_async(
                h, t, a, options, _DONE_C, _PROGRESS_C if progress else _ffi.NULL_PROGRESS, key,
                ctypes.byref(call_id))
            return status
        return start

    def _wait(self, starter: _Starter, timeout_ms: Optional[int],
              on_progress: Optional[ProgressHandler]) -> ToolResult:
        """Starts a call and waits on this thread, delivering progress here; KeyboardInterrupt
        or what on_progress raises cancels the call and propagates."""
        q: "queue.SimpleQueue[Tuple[str, Any]]" = queue.SimpleQueue()
        p = self._start(starter, timeout_ms, on_progress is not None, lambda kind, payload: q.put((kind, payload)))
        try:
            while True:
                try:
                    # In slices, so that a signal handler (Ctrl-C) runs while we wait.
                    kind, payload = q.get(timeout=_WAIT_SLICE)
                except queue.Empty:
                    continue
                if kind == "done":
                    return _outcome(payload)
                if on_progress is not None:
                    on_progress(Progress(payload))
        except BaseException:
            self._cancel(p)
            raise

    async def _await(self, starter: _Starter, timeout_ms: Optional[int],
                     on_progress: Optional[ProgressHandler]) -> ToolResult:
        loop = asyncio.get_running_loop()
        fut: "asyncio.Future[ToolResult]" = loop.create_future()
        box: List[_Pending] = []

        def on_loop(kind: str, payload: Any) -> None:  # on the event loop's thread
            if fut.done():  # the task was cancelled, or on_progress raised
                return
            if kind == "done":
                try:
                    fut.set_result(_outcome(payload))
                except Exception as e:  # noqa: BLE001 - the library's error, for the awaiting task
                    fut.set_exception(e)
                return
            if on_progress is None:
                return
            try:
                on_progress(Progress(payload))
            except Exception as e:  # noqa: BLE001 - it propagates to the awaiting task
                self._cancel(box[0])
                fut.set_exception(e)
            except BaseException:
                self._cancel(box[0])
                fut.cancel()
                raise

        def deliver(kind: str, payload: Any) -> None:  # on a library thread
            try:
                loop.call_soon_threadsafe(on_loop, kind, payload)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

        box.append(self._start(starter, timeout_ms, on_progress is not None, deliver))
        try:
            return await fut
        except asyncio.CancelledError:
            self._cancel(box[0])
            raise

    def _start(self, starter: _Starter, timeout_ms: Optional[int], progress: bool,
               deliver: _Deliver) -> _Pending:
        """Runs the starter (tn_call_tool_async or tn_call_tool_resume_async); raises what it
        refused (then done never fires)."""
        options = _timeout_options(timeout_ms)
        p = _Pending(deliver)
        key = next(_keys)
        with _pending_lock:
            _pending[key] = p
        status = starter(options, progress, key, p.id)
        if status != _ffi.TN_OK:
            err = _ffi.error_for(status)  # right after the call, on this thread
            with _pending_lock:
                _pending.pop(key, None)
            raise err
        return p

    def _cancel(self, p: _Pending) -> None:
        """tn_call_cancel, quietly: a call that already ended (TN_ERR_NOT_FOUND) or a closed
        client has nothing left to cancel."""
        h = self._handle
        if h is not None:
            try:
                _ffi.lib().tn_call_cancel(h, p.id.value)
            except BaseException:
                _note_callback_error()

    @property
    def resolver_errors(self) -> List[str]:
        """Why recent elicitations became cancel on the Python side (tracebacks, refusals)."""
        return [] if self._bridge is None else list(self._bridge.errors)

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        """Disconnects (idempotent). Calls in flight on other threads (and awaiting tasks)
        return promptly. Called from inside this client's resolver it does nothing and raises
        Reentrant."""
        with self._lock:
            h = self._handle
            if h is None or self._closing:
                return
            self._closing = True
        lib = _ffi.lib()
        lib.tn_disconnect(h)
        message = _ffi.last_error_message()  # tn_disconnect is void: an error is left here
        if message is not None:
            with self._lock:
                self._closing = False
            raise Reentrant(message, Reentrant.status)
        with self._lock:
            self._handle = None
        # Disconnect waited for the event callback: no event comes after this.
        for s in list(self._streams):
            s._push(_END)
        self._streams.clear()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except BaseException:
            pass


def connect(config: JsonArg, resolver: Optional[Resolver] = None, *,
            on_event: Optional[EventHandler] = None) -> Client:
    """Connects every server of an MCP config (a dict, or JSON text) and returns a Client.
    Per-server failures do not raise (see statuses()); an unusable config raises."""
    return Client(config, resolver, on_event=on_event)
