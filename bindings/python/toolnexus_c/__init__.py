"""toolnexus_c: Python bindings (ctypes) for libtoolnexus, the Rust MCP client with a C ABI.

    import toolnexus_c as tn
    with tn.connect({"mcpServers": {...}}, resolver=lambda req: tn.accept({"name": "Ada"})) as c:
        print([t["name"] for t in c.tools()])
        print(c.call("forms_ask_name", {}).output)

The resolver gets a §10 Request (a dict: id, kind, prompt, url?, data?; `.json` holds the
exact text) and returns a §10 Answer: a dict (see accept/decline/cancel), a str of Answer JSON
sent verbatim, None (no answer: cancel), or a concurrent.futures.Future of one of those for an
answer given later from any thread. If it raises, the server sees cancel and the traceback is
kept in Client.resolver_errors. Library errors raise ToolnexusError subclasses whose message is
the library's own (tn_last_error_message).

Not the `toolnexus` package on PyPI (the pure-Python port): this one drives the Rust library.
"""

import collections
import concurrent.futures
import ctypes
import functools
import json
import threading
import traceback

from . import _ffi
from ._ffi import (  # noqa: F401  (re-exported)
    Closed,
    ConfigError,
    Internal,
    InvalidArgument,
    InvalidJson,
    NotFound,
    Panic,
    Reentrant,
    ToolnexusError,
    library_path,
)

__all__ = [
    "connect", "Client", "ToolResult", "Request",
    "accept", "decline", "cancel",
    "elicitation_to_request", "answer_to_result", "server_request_response", "sanitize_name",
    "version", "library_path",
    "ToolnexusError", "InvalidArgument", "InvalidJson", "ConfigError", "NotFound", "Closed",
    "Reentrant", "Panic", "Internal",
]

__version__ = "0.1.0"

CANCEL_ANSWER = b'{"ok":false,"reason":"cancelled"}'
_MAX_RESOLVER_ERRORS = 100


def version():
    """The library's version, e.g. "0.1.0"."""
    return _ffi.lib().tn_version().decode("utf-8")


# ---------------------------------------------------------------- answers


def accept(data=None, id=None):  # noqa: A002 - the §10 field is called id
    """An accepting Answer: {"ok": true, "data": data?}."""
    a = {"ok": True}
    if id is not None:
        a["id"] = id
    if data is not None:
        a["data"] = data
    return a


def decline(id=None):  # noqa: A002
    """A declining Answer: the server sees {"action":"decline"}."""
    a = {"ok": False, "reason": "declined"}
    if id is not None:
        a["id"] = id
    return a


def cancel(id=None):  # noqa: A002
    """A cancelling Answer: the server sees {"action":"cancel"}."""
    a = {"ok": False, "reason": "cancelled"}
    if id is not None:
        a["id"] = id
    return a


class Request(dict):
    """A §10 Request as a dict ({"id", "kind", "prompt", "url"?, "data"?, ...});
    `.json` is the exact text the library produced."""

    __slots__ = ("json",)


def _json_text(value, what):
    """JSON text for the library: str/bytes verbatim, anything else through json.dumps."""
    if isinstance(value, (str, bytes, bytearray)):
        return _ffi.text_arg(value, what)
    return _ffi.text_arg(json.dumps(value, ensure_ascii=False, separators=(",", ":")), what)


# ---------------------------------------------------------------- the resolver bridge


class _Bridge:
    """Turns a Python resolver into a tn_resolver_fn. Holds the CFUNCTYPE object (it must live
    as long as the library may call it) and never references the Client, so an unclosed Client
    can still be collected (its __del__ disconnects). Nothing raised ever reaches C."""

    def __init__(self, fn, deferrable):
        if not callable(fn):
            raise TypeError("resolver must be callable, got %s" % type(fn).__name__)
        self.fn = fn
        self.deferrable = deferrable
        self.errors = collections.deque(maxlen=_MAX_RESOLVER_ERRORS)
        self.c = _ffi.RESOLVER(self._trampoline)

    def _note(self, text):
        try:
            self.errors.append(text)
        except BaseException:
            pass

    def _trampoline(self, user_data, request_json, responder):
        try:
            req = Request(json.loads(request_json.decode("utf-8")))
            req.json = request_json.decode("utf-8")
            value = self.fn(req)
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
            if value is None:
                return _ffi.TN_RESOLVED  # no answer: the server sees cancel
            return _ffi.TN_RESOLVED if self._answer(responder, value) else _ffi.RESOLVER_FAILED
        except BaseException:  # never let anything escape into C
            try:
                self._note(traceback.format_exc())
            except BaseException:
                pass
            return _ffi.RESOLVER_FAILED

    def _answer(self, responder, value):
        text = _json_text(value, "answer")
        status = _ffi.lib().tn_responder_answer(responder, text)
        if status == _ffi.TN_OK:
            return True
        self._note("tn_responder_answer refused %r: %s" % (text, _ffi.error_for(status)))
        return False

    def _future_done(self, responder, fut):
        # Runs on whichever thread completed the future (or at once, if it was already done).
        try:
            value = None
            if fut.cancelled():
                self._note("deferred answer: the future was cancelled")
            elif fut.exception() is not None:
                exc = fut.exception()
                self._note("deferred answer raised:\n" + "".join(
                    traceback.format_exception(type(exc), exc, exc.__traceback__)))
            else:
                value = fut.result()
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


def elicitation_to_request(params):
    """MCP elicitation/create params (JSON text, or a dict) -> the §10 Request JSON text."""
    return _ffi.call_out(_ffi.lib().tn_elicitation_to_request, _json_text(params, "params")).decode("utf-8")


def answer_to_result(answer):
    """A §10 Answer (JSON text, or a dict) -> the MCP ElicitResult JSON text."""
    return _ffi.call_out(_ffi.lib().tn_answer_to_result, _json_text(answer, "answer")).decode("utf-8")


def server_request_response(message, resolver=None):
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


def sanitize_name(name):
    """A tool or server name -> its §0.1 sanitized form."""
    out = _ffi.call_out(_ffi.lib().tn_sanitize_name, _json_text(json.dumps(name, ensure_ascii=False), "name"))
    return json.loads(out.decode("utf-8"))


# ---------------------------------------------------------------- the client


class ToolResult:
    """A §0.1 ToolResult: .output (str), .is_error (bool), .metadata (dict or None), .json (text)."""

    __slots__ = ("output", "is_error", "metadata", "json")

    def __init__(self, text):
        d = json.loads(text)
        self.json = text
        self.output = d.get("output", "")
        self.is_error = bool(d.get("isError", False))
        self.metadata = d.get("metadata")

    def __repr__(self):
        return "ToolResult(output=%r, is_error=%r%s)" % (
            self.output, self.is_error, "" if self.metadata is None else ", metadata=%r" % (self.metadata,))


class Client:
    """A connected tn_client. Safe to use from many threads; close() (or `with`) disconnects."""

    _handle = None

    def __init__(self, config, resolver=None):
        self._bridge = None if resolver is None else _Bridge(resolver, deferrable=True)
        self._lock = threading.Lock()
        self._closing = False
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

    def _h(self):
        h = self._handle
        if h is None:
            raise Closed("the client is closed", Closed.status)
        return h

    def tools_json(self):
        """The tools as the library's JSON text (an array sorted by name)."""
        return _ffi.call_out(_ffi.lib().tn_list_tools, self._h()).decode("utf-8")

    def tools(self):
        """[{"name", "description", "inputSchema", "source", "server", "remoteName", ...}], sorted by name."""
        return json.loads(self.tools_json())

    def statuses_json(self):
        return _ffi.call_out(_ffi.lib().tn_server_statuses, self._h()).decode("utf-8")

    def statuses(self):
        """{"servers": {name: {"status": "connected"|"disabled"|"failed", "error"?: ...}}}."""
        return json.loads(self.statuses_json())

    def call(self, name, args=None):
        """Calls a tool by its listed name with args (a dict, JSON text, or None) -> ToolResult.
        Tool errors, timeouts and dead servers are results with is_error=True; an unknown name
        raises NotFound, a closed client Closed."""
        a = None if args is None else _json_text(args, "args")
        out = _ffi.call_out(_ffi.lib().tn_call_tool, self._h(), _ffi.text_arg(name, "name"), a)
        return ToolResult(out.decode("utf-8"))

    @property
    def resolver_errors(self):
        """Why recent elicitations became cancel on the Python side (tracebacks, refusals)."""
        return [] if self._bridge is None else list(self._bridge.errors)

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        """Disconnects (idempotent). Calls in flight on other threads return promptly. Called
        from inside this client's resolver it does nothing and raises Reentrant."""
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except BaseException:
            pass


def connect(config, resolver=None):
    """Connects every server of an MCP config (a dict, or JSON text) and returns a Client.
    Per-server failures do not raise (see statuses()); an unusable config raises."""
    return Client(config, resolver)
