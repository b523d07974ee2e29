"""Shared ctypes loader for libtoolnexus, used by the Python tests.

The library is found at $TOOLNEXUS_LIB, else at ../../target/debug/libtoolnexus.so
relative to this directory (tests/python). It is loaded with ctypes.CDLL (never
PyDLL: callbacks from library threads must take the GIL themselves).

Conventions (shared/docs/c-api.md):
- Owned out-strings are declared as c_void_p, copied with ctypes.string_at and
  released with tn_string_free (never free); see call_out().
- tn_last_error_message() is borrowed and valid until the next tn_ call on the
  same thread: read it right after the failing call; see last_error().
- A resolver is a RESOLVER (CFUNCTYPE) object that must stay alive as long as
  the library may call it; Resolver wraps a Python function, catches every
  exception inside the callback and keeps the CFUNCTYPE object alive.

Every function of c-api.md plus tn_sanitize_name gets argtypes/restype. A
symbol the library does not export is left out (listed in missing_symbols());
using it raises AttributeError.
"""

import ctypes
import functools
import os
import threading
import traceback
from ctypes import CFUNCTYPE, POINTER, byref, c_char_p, c_int32, c_void_p

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIB = os.path.normpath(os.path.join(HERE, "..", "..", "target", "debug", "libtoolnexus.so"))

# Status codes (append-only, never renumbered).
TN_OK = 0
TN_ERR_INVALID_ARGUMENT = 1
TN_ERR_INVALID_JSON = 2
TN_ERR_CONFIG = 3
TN_ERR_NOT_FOUND = 4
TN_ERR_CLOSED = 5
TN_ERR_REENTRANT = 6
TN_ERR_PANIC = 7
TN_ERR_INTERNAL = 8
TN_ERR_SERVER = 9
TN_ERR_TIMEOUT = 10
TN_ERR_CANCELLED = 11

# Resolver return values.
TN_RESOLVED = 0
TN_DEFERRED = 1
TN_SUSPEND = 0x53555350
# What a Resolver returns when its Python function raised (anything but
# TN_RESOLVED / TN_DEFERRED means "failed": the server sees cancel).
RESOLVER_FAILED = -1

# int32_t (*tn_resolver_fn)(void *user_data, const char *request_json, tn_responder *responder)
RESOLVER = CFUNCTYPE(c_int32, c_void_p, c_char_p, c_void_p)

_OUT = POINTER(c_void_p)

# void (*tn_call_done_fn)(void *user_data, tn_status status, const char *result_json)
DONE = CFUNCTYPE(None, c_void_p, c_int32, c_char_p)
# void (*tn_progress_fn)(void *user_data, const char *progress_json)
PROGRESS = CFUNCTYPE(None, c_void_p, c_char_p)

# void (*tn_event_fn)(void *user_data, const char *event_json)
EVENT = CFUNCTYPE(None, c_void_p, c_char_p)

# A NULL resolver (where the C API allows resolver == NULL).
NULL_RESOLVER = RESOLVER()


class ResolverParam:
    """argtype for tn_resolver_fn parameters: accepts None (NULL), a Resolver,
    or a RESOLVER object."""

    @classmethod
    def from_param(cls, obj):
        if obj is None:
            return NULL_RESOLVER
        if isinstance(obj, Resolver):
            return obj.c
        return RESOLVER.from_param(obj)


# name -> (restype, argtypes)
SIGNATURES = {
    "tn_version": (c_char_p, []),
    "tn_status_str": (c_char_p, [c_int32]),
    "tn_last_error_message": (c_char_p, []),
    "tn_string_free": (None, [c_void_p]),
    "tn_responder_answer": (c_int32, [c_void_p, c_char_p]),
    "tn_elicitation_to_request": (c_int32, [c_char_p, _OUT]),
    "tn_answer_to_result": (c_int32, [c_char_p, _OUT]),
    "tn_server_request_response": (c_int32, [ResolverParam, c_void_p, c_char_p, _OUT]),
    "tn_connect": (c_int32, [c_char_p, ResolverParam, c_void_p, _OUT]),
    "tn_list_tools": (c_int32, [c_void_p, _OUT]),
    "tn_server_statuses": (c_int32, [c_void_p, _OUT]),
    "tn_call_tool": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_disconnect": (None, [c_void_p]),
    "tn_sanitize_name": (c_int32, [c_char_p, _OUT]),
    "tn_call_tool_async": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, DONE, PROGRESS, c_void_p,
                                     POINTER(ctypes.c_uint64)]),
    "tn_call_cancel": (c_int32, [c_void_p, ctypes.c_uint64]),
    "tn_call_tool_resume": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_tools_for": (c_int32, [c_void_p, c_char_p, _OUT]),
    "tn_tools_to_provider": (c_int32, [c_char_p, c_char_p, _OUT]),
    "tn_list_skills": (c_int32, [c_void_p, _OUT]),
    "tn_get_skill": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_read_skill_file": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, _OUT]),
    "tn_set_event_callback": (c_int32, [c_void_p, EVENT, c_void_p]),
    "tn_list_tasks": (c_int32, [c_void_p, c_char_p, _OUT]),
    "tn_call_tool_ex": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, POINTER(ctypes.c_uint64), _OUT]),
    "tn_list_resources": (c_int32, [c_void_p, _OUT]),
    "tn_list_resource_templates": (c_int32, [c_void_p, _OUT]),
    "tn_read_resource": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_read_resource_ex": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, POINTER(ctypes.c_uint64), _OUT]),
    "tn_subscribe_resource": (c_int32, [c_void_p, c_char_p, c_char_p]),
    "tn_unsubscribe_resource": (c_int32, [c_void_p, c_char_p, c_char_p]),
    "tn_list_prompts": (c_int32, [c_void_p, _OUT]),
    "tn_get_prompt": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_get_prompt_ex": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, POINTER(ctypes.c_uint64), _OUT]),
    "tn_complete": (c_int32, [c_void_p, c_char_p, _OUT]),
    "tn_uri_template": (c_int32, [c_char_p, _OUT]),
    # Debug-only test hook (c-api.md "Debug-only"): panics inside the guard, returns
    # TN_ERR_PANIC. Exported by debug builds alone; missing from a release build.
    "tn_debug_force_panic": (c_int32, [c_char_p]),
}

_missing = []

# Stored into every out-pointer before a call: the library must set *out to
# NULL on entry, so this address must never come back.
_SENTINEL_BUF = ctypes.create_string_buffer(1)
_SENTINEL = ctypes.addressof(_SENTINEL_BUF)


class ContractError(AssertionError):
    """The library broke an out-pointer convention of c-api.md."""


def lib_path():
    return os.environ.get("TOOLNEXUS_LIB") or DEFAULT_LIB


@functools.lru_cache(maxsize=None)
def lib():
    """The loaded library (loaded once), with every known signature declared."""
    path = lib_path()
    if not os.path.exists(path):
        raise OSError(
            "libtoolnexus not found at %s (build it with `cargo build`, or set TOOLNEXUS_LIB)" % path
        )
    handle = ctypes.CDLL(path)
    for name, (restype, argtypes) in SIGNATURES.items():
        try:
            fn = getattr(handle, name)
        except AttributeError:
            _missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return handle


def missing_symbols():
    """Names from SIGNATURES that the loaded library does not export."""
    lib()
    return list(_missing)


def _arg(x):
    return x.encode("utf-8") if isinstance(x, str) else x


def call_out(fn, *args):
    """Calls fn(*args, &out) for a function whose last parameter is `char **out`.

    Returns (status, bytes) when the library produced a string (copied, then
    freed with tn_string_free) or (status, None) when *out stayed NULL. str
    arguments are passed as UTF-8. Raises ContractError when *out was not set
    to NULL on entry, or is non-NULL with a non-OK status (it is not freed
    then). After a non-OK status no other tn_ call has been made, so
    last_error() still gives that call's message.
    """
    out = c_void_p(_SENTINEL)
    status = fn(*[_arg(a) for a in args], byref(out))
    ptr = out.value
    if ptr == _SENTINEL:
        raise ContractError("%s returned %d but did not set *out to NULL on entry" % (fn.__name__, status))
    if ptr is None:
        return status, None
    if status != TN_OK:
        raise ContractError("%s returned %d but set *out (must stay NULL on error)" % (fn.__name__, status))
    try:
        return status, ctypes.string_at(ptr)
    finally:
        lib().tn_string_free(ptr)


def last_error():
    """tn_last_error_message() for this thread, as str, or None."""
    msg = lib().tn_last_error_message()
    return None if msg is None else msg.decode("utf-8", "replace")


def status_str(code):
    s = lib().tn_status_str(code)
    return None if s is None else s.decode("utf-8", "replace")


def version():
    return lib().tn_version().decode("utf-8", "replace")


def answer(responder, answer_json):
    """tn_responder_answer(responder, answer_json) -> status."""
    return lib().tn_responder_answer(responder, _arg(answer_json))


# Resolvers pinned for the life of the process (e.g. one given to tn_connect
# whose client is never disconnected).
_pinned = set()
_pinned_lock = threading.Lock()


class Resolver:
    """Wraps fn(request_json: bytes, responder: int) -> int as a RESOLVER.

    Pass the Resolver itself (or .c; None means NULL) where the C API takes a
    resolver. Every
    exception raised by fn (BaseException included) is caught inside the
    callback, recorded in .errors (formatted tracebacks) and turned into
    RESOLVER_FAILED: nothing ever propagates into C. The CFUNCTYPE object lives
    as long as this Resolver; pin() keeps it alive for the whole process.
    """

    def __init__(self, fn):
        self.fn = fn
        self.errors = []
        self.c = RESOLVER(self._trampoline)

    def _trampoline(self, user_data, request_json, responder):
        try:
            rc = int(self.fn(request_json, responder))
            if not -(2 ** 31) <= rc < 2 ** 31:
                raise ValueError("resolver return value %d does not fit int32_t" % rc)
            return rc
        except BaseException:  # never let anything escape into C
            try:
                self.errors.append(traceback.format_exc())
            except BaseException:
                pass
            return RESOLVER_FAILED

    def pin(self):
        with _pinned_lock:
            _pinned.add(self)
        return self

    def unpin(self):
        with _pinned_lock:
            _pinned.discard(self)


# ---------------------------------------------------------------- a client wrapper (tests)


class ConnectError(Exception):
    """tn_connect returned an error: .status and .message (tn_last_error_message)."""

    def __init__(self, status, message):
        super().__init__("tn_connect: %d %s" % (status, message))
        self.status = status
        self.message = message


def connect_raw(config):
    """tn_connect(config, NULL, NULL, &client) -> (status, handle or None, last error or None).

    Checks the out-pointer convention (NULL on entry, set only on success)."""
    out = c_void_p(_SENTINEL)
    status = lib().tn_connect(_arg(config), None, None, byref(out))
    msg = last_error() if status != TN_OK else None
    if out.value == _SENTINEL:
        raise ContractError("tn_connect returned %d but did not set *client_out to NULL on entry" % status)
    if status != TN_OK and out.value is not None:
        raise ContractError("tn_connect returned %d but set *client_out" % status)
    return status, out.value, msg


class Client:
    """A tn_client from tn_connect. `config` is JSON text, or an object turned into JSON.

    The resolver (a Resolver or None) is kept referenced by this object for as long as it
    lives, so its CFUNCTYPE object outlives the client. disconnect() is idempotent on the
    Python side (tn_disconnect is called once); use `with Client(...) as c:` or close().
    """

    def __init__(self, config, resolver=None):
        import json

        if not isinstance(config, (str, bytes)):
            config = json.dumps(config)
        self.config = config
        self.resolver = resolver
        out = c_void_p(_SENTINEL)
        status = lib().tn_connect(_arg(config), resolver, None, byref(out))
        if status != TN_OK:
            raise ConnectError(status, last_error())
        if out.value in (None, _SENTINEL):
            raise ContractError("tn_connect returned TN_OK without a client")
        self.handle = out.value
        self._closed = False
        self._lock = threading.Lock()

    def call(self, name, args=None):
        """tn_call_tool -> (status, text): the ToolResult JSON text on TN_OK, else the
        thread's last error message (read right after the call)."""
        status, out = call_out(lib().tn_call_tool, self.handle, name, args)
        if status == TN_OK:
            return status, out.decode("utf-8")
        return status, last_error() or ""

    def start(self, name, args=None, options=None, progress=True):
        """tn_call_tool_async -> an AsyncCall (status != TN_OK: its `status` and `error`)."""
        return AsyncCall(self, name, args, options, progress)

    def resume(self, token, answers):
        """tn_call_tool_resume -> (status, ToolResult text or the last error message)."""
        status, out = call_out(lib().tn_call_tool_resume, self.handle, token, answers)
        if status == TN_OK:
            return status, out.decode("utf-8")
        return status, last_error() or ""

    def cancel(self, call_id):
        """tn_call_cancel -> (status, last error message)."""
        status = lib().tn_call_cancel(self.handle, call_id)
        return status, (last_error() or "") if status != TN_OK else ""

    def result(self, name, args=None):
        """tn_call_tool that must return TN_OK: the ToolResult JSON text."""
        status, text = self.call(name, args)
        if status != TN_OK:
            raise AssertionError("tn_call_tool(%s) -> %d: %s" % (name, status, text))
        return text

    def tools_text(self):
        status, out = call_out(lib().tn_list_tools, self.handle)
        if status != TN_OK:
            raise AssertionError("tn_list_tools -> %d: %s" % (status, last_error()))
        return out.decode("utf-8")

    def statuses_text(self):
        status, out = call_out(lib().tn_server_statuses, self.handle)
        if status != TN_OK:
            raise AssertionError("tn_server_statuses -> %d: %s" % (status, last_error()))
        return out.decode("utf-8")

    def skills(self, fn, *args):
        """tn_list_skills / tn_get_skill / tn_read_skill_file (by name) -> (status, the JSON
        text on TN_OK, else the thread's last error message)."""
        status, out = call_out(getattr(lib(), fn), self.handle, *args)
        if status == TN_OK:
            return status, out.decode("utf-8")
        return status, last_error() or ""
    def out(self, fn, *args):
        """A tn_* function of the client whose last parameter is `char **out` (by name) ->
        (status, the JSON text on TN_OK, else the thread's last error message)."""
        status, out = call_out(getattr(lib(), fn), self.handle, *args)
        if status == TN_OK:
            return status, out.decode("utf-8")
        return status, last_error() or ""

    def ok(self, fn, *args):
        """`out` that must return TN_OK: the JSON, parsed."""
        import json

        status, text = self.out(fn, *args)
        if status != TN_OK:
            raise AssertionError("%s%r -> %d: %s" % (fn, args, status, text))
        return json.loads(text)

    def status_of(self, fn, *args):
        """A tn_* function of the client returning only a status -> (status, last error)."""
        status = getattr(lib(), fn)(self.handle, *[_arg(a) for a in args])
        return status, (last_error() or "") if status != TN_OK else ""

    def events(self):
        """Registers an Events collector as the client's event callback."""
        ev = Events()
        status = lib().tn_set_event_callback(self.handle, ev.c, None)
        if status != TN_OK:
            raise AssertionError("tn_set_event_callback -> %d: %s" % (status, last_error()))
        self._events = ev  # kept alive as long as the client
        return ev

    def disconnect(self):
        with self._lock:
            if self._closed:
                return
            self._closed = True
        lib().tn_disconnect(self.handle)

    close = disconnect

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.disconnect()


class Events:
    """Collects a client's events (parsed JSON), in order; wait() for one that matches."""

    def __init__(self):
        import json

        self._json = json
        self.items = []
        self._cond = threading.Condition()
        self.c = EVENT(self._on_event)

    def _on_event(self, _ud, event_json):
        try:
            e = self._json.loads(event_json.decode("utf-8"))
        except Exception:  # noqa: BLE001 - never unwind into the library
            traceback.print_exc()
            return
        with self._cond:
            self.items.append(e)
            self._cond.notify_all()

    def wait(self, match, timeout=10.0, start=0):
        """The first event from index `start` for which match(event) is true (its index and the
        event), or an AssertionError naming every event seen after `timeout` seconds."""
        import time

        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in range(start, len(self.items)):
                    if match(self.items[i]):
                        return i, self.items[i]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no matching event within %.1fs; seen: %r" % (timeout, self.items))
                self._cond.wait(left)


class AsyncCall:
    """One tn_call_tool_async: records every done and progress callback (with the thread
    each ran on), keeps its CFUNCTYPE objects alive, and waits for done."""

    def __init__(self, client, name, args, options, progress):
        self.done_calls = []      # (status, result text or None, thread ident)
        self.progress = []        # (progress JSON, thread ident, done already fired?)
        self._event = threading.Event()
        self._done_c = DONE(self._on_done)
        self._progress_c = PROGRESS(self._on_progress) if progress else PROGRESS()
        self.id = ctypes.c_uint64(99)
        self.status = lib().tn_call_tool_async(client.handle, _arg(name), _arg(args), _arg(options),
                                               self._done_c, self._progress_c, None, byref(self.id))
        self.error = last_error() if self.status != TN_OK else None
        self.call_id = self.id.value

    def _on_done(self, _ud, status, result):
        try:
            self.done_calls.append((status, result.decode() if result else None, threading.get_ident()))
        finally:
            self._event.set()

    def _on_progress(self, _ud, progress):
        self.progress.append((progress.decode(), threading.get_ident(), self._event.is_set()))

    def wait(self, timeout=30):
        """The ToolResult text once done fired (AssertionError when it did not in time)."""
        if not self._event.wait(timeout):
            raise AssertionError("done did not fire within %s s" % timeout)
        status, result, _ = self.done_calls[0]
        assert status == TN_OK, status
        return result
