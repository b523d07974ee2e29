"""The ctypes layer: finding and loading libtoolnexus, every signature, out-strings, errors.

Conventions (c-api.md, architecture.md "Conventions for C-ABI code"): the library is loaded
with CDLL (never PyDLL, so calls release the GIL and callbacks from library threads take it
themselves); every function gets argtypes/restype; owned out-strings are c_void_p, copied with
string_at and released with tn_string_free; tn_last_error_message() is read right after the
failing call, on the same thread, before any other tn_ call.
"""

import ctypes
import os
import sys
import threading
from ctypes import CFUNCTYPE, POINTER, byref, c_char_p, c_int32, c_uint64, c_void_p
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, Union

TN_OK = 0
TN_RESOLVED = 0
TN_DEFERRED = 1
# 'SUSP': the question is suspended durably (contract §6); the call returns a pending.
TN_SUSPEND = 0x53555350
# Anything but TN_RESOLVED / TN_DEFERRED: the resolver failed, the server sees cancel.
RESOLVER_FAILED = -1

# int32_t (*tn_resolver_fn)(void *user_data, const char *request_json, tn_responder *responder)
RESOLVER = CFUNCTYPE(c_int32, c_void_p, c_char_p, c_void_p)
NULL_RESOLVER = RESOLVER()
# void (*tn_call_done_fn)(void *user_data, tn_status status, const char *result_json)
DONE = CFUNCTYPE(None, c_void_p, c_int32, c_char_p)
# void (*tn_progress_fn)(void *user_data, const char *progress_json)
PROGRESS = CFUNCTYPE(None, c_void_p, c_char_p)
NULL_PROGRESS = PROGRESS()
# void (*tn_event_fn)(void *user_data, const char *event_json)
EVENT = CFUNCTYPE(None, c_void_p, c_char_p)
NULL_EVENT = EVENT()
_OUT = POINTER(c_void_p)

_SIGNATURES: Dict[str, Tuple[Any, List[Any]]] = {
    "tn_version": (c_char_p, []),
    "tn_status_str": (c_char_p, [c_int32]),
    "tn_last_error_message": (c_char_p, []),
    "tn_string_free": (None, [c_void_p]),
    "tn_elicitation_to_request": (c_int32, [c_char_p, _OUT]),
    "tn_answer_to_result": (c_int32, [c_char_p, _OUT]),
    "tn_server_request_response": (c_int32, [RESOLVER, c_void_p, c_char_p, _OUT]),
    "tn_responder_answer": (c_int32, [c_void_p, c_char_p]),
    "tn_sanitize_name": (c_int32, [c_char_p, _OUT]),
    "tn_connect": (c_int32, [c_char_p, RESOLVER, c_void_p, _OUT]),
    "tn_list_tools": (c_int32, [c_void_p, _OUT]),
    "tn_server_statuses": (c_int32, [c_void_p, _OUT]),
    "tn_call_tool": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_disconnect": (None, [c_void_p]),
    "tn_call_tool_async": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, DONE, PROGRESS, c_void_p,
                                     POINTER(c_uint64)]),
    "tn_call_cancel": (c_int32, [c_void_p, c_uint64]),
    "tn_call_tool_ex": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, POINTER(c_uint64), _OUT]),
    "tn_call_tool_resume": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_list_skills": (c_int32, [c_void_p, _OUT]),
    "tn_get_skill": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_read_skill_file": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, _OUT]),
    "tn_call_tool_resume_async": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, DONE, PROGRESS, c_void_p,
                                            POINTER(c_uint64)]),
    "tn_set_event_callback": (c_int32, [c_void_p, EVENT, c_void_p]),
    "tn_list_tasks": (c_int32, [c_void_p, c_char_p, _OUT]),
    "tn_tools_for": (c_int32, [c_void_p, c_char_p, _OUT]),
    "tn_tools_to_provider": (c_int32, [c_char_p, c_char_p, _OUT]),
    # Resources, prompts and completions
    "tn_list_resources": (c_int32, [c_void_p, _OUT]),
    "tn_list_resource_templates": (c_int32, [c_void_p, _OUT]),
    "tn_read_resource": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_read_resource_ex": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, POINTER(c_uint64), _OUT]),
    "tn_subscribe_resource": (c_int32, [c_void_p, c_char_p, c_char_p]),
    "tn_unsubscribe_resource": (c_int32, [c_void_p, c_char_p, c_char_p]),
    "tn_list_prompts": (c_int32, [c_void_p, _OUT]),
    "tn_get_prompt": (c_int32, [c_void_p, c_char_p, c_char_p, _OUT]),
    "tn_get_prompt_ex": (c_int32, [c_void_p, c_char_p, c_char_p, c_char_p, POINTER(c_uint64), _OUT]),
    "tn_complete": (c_int32, [c_void_p, c_char_p, _OUT]),
    "tn_uri_template": (c_int32, [c_char_p, _OUT]),
}

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
# The library's file name on this platform: toolnexus.dll on Windows,
# libtoolnexus.dylib on macOS, else libtoolnexus.so.
if os.name == "nt":
    LIB_NAME = "toolnexus.dll"
elif sys.platform == "darwin":
    LIB_NAME = "libtoolnexus.dylib"
else:
    LIB_NAME = "libtoolnexus.so"
BUNDLED_LIB = os.path.join(_PKG_DIR, LIB_NAME)
# Running from a source checkout without installing: the cargo debug build.
_CHECKOUT_LIB = os.path.normpath(os.path.join(_PKG_DIR, "..", "..", "..", "target", "debug", LIB_NAME))

_lib: Optional[ctypes.CDLL] = None
_lib_lock = threading.Lock()


def library_path() -> str:
    """$TOOLNEXUS_LIB when set, else the copy bundled in the package (else a checkout's debug build)."""
    env = os.environ.get("TOOLNEXUS_LIB")
    if env:
        return env
    if os.path.exists(BUNDLED_LIB) or not os.path.exists(_CHECKOUT_LIB):
        return BUNDLED_LIB
    return _CHECKOUT_LIB


def lib() -> Any:
    """The loaded library, every signature declared (loaded once, on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise OSError("libtoolnexus not found at %s (reinstall toolnexus-c, or set TOOLNEXUS_LIB)" % path)
            handle = ctypes.CDLL(path)
            for name, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(handle, name)
                fn.restype = restype
                fn.argtypes = argtypes
            _lib = handle
    return _lib


# ---------------------------------------------------------------- errors


class ToolnexusError(Exception):
    """A tn_ function returned an error status. str(e) is the library's message
    (tn_last_error_message); .status is the code, .code its name (e.g. "TN_ERR_NOT_FOUND")."""

    status: Optional[int] = None
    code: str = "TN_ERR_UNKNOWN"

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __repr__(self) -> str:
        return "%s(%r, status=%r)" % (type(self).__name__, self.message, self.status)


class InvalidArgument(ToolnexusError):
    """NULL, bad UTF-8, wrong JSON shape."""

    status = 1
    code = "TN_ERR_INVALID_ARGUMENT"


class InvalidJson(ToolnexusError):
    """Text that is not JSON."""

    status = 2
    code = "TN_ERR_INVALID_JSON"


class ConfigError(ToolnexusError):
    """The whole config is unusable."""

    status = 3
    code = "TN_ERR_CONFIG"


class NotFound(ToolnexusError):
    """No tool (prompt, server, resource, subscription) of that name, or, for a cancel, no such
    call in flight."""

    status = 4
    code = "TN_ERR_NOT_FOUND"


class Closed(ToolnexusError):
    """The client (or responder) is closed."""

    status = 5
    code = "TN_ERR_CLOSED"


class Reentrant(ToolnexusError):
    """A call that would deadlock."""

    status = 6
    code = "TN_ERR_REENTRANT"


class Panic(ToolnexusError):
    """The library caught a panic."""

    status = 7
    code = "TN_ERR_PANIC"


class Internal(ToolnexusError):
    """An internal library error."""

    status = 8
    code = "TN_ERR_INTERNAL"


class ServerError(ToolnexusError):
    """The server failed a resource, prompt or completion request: an error answer other than
    not-found (a prompt's missing argument, say), an invalid result or one over maxResultBytes,
    a connection that ended. The message names the server and says what it answered."""

    status = 9
    code = "TN_ERR_SERVER"


class Timeout(ToolnexusError):
    """No answer within the request's timeout (its timeout_ms, else the server's)."""

    status = 10
    code = "TN_ERR_TIMEOUT"


class Cancelled(ToolnexusError):
    """The request was cancelled (tn_call_cancel: Ctrl-C on the main thread, a cancelled task)."""

    status = 11
    code = "TN_ERR_CANCELLED"


_BY_STATUS: Dict[int, Type[ToolnexusError]] = {
    1: InvalidArgument, 2: InvalidJson, 3: ConfigError, 4: NotFound, 5: Closed, 6: Reentrant, 7: Panic, 8: Internal,
    9: ServerError, 10: Timeout, 11: Cancelled,
}


def last_error_message() -> Optional[str]:
    """tn_last_error_message() for this thread, or None."""
    msg: Optional[bytes] = lib().tn_last_error_message()
    return None if msg is None else msg.decode("utf-8", "replace")


def status_str(status: int) -> Optional[str]:
    s: Optional[bytes] = lib().tn_status_str(status)
    return None if s is None else s.decode("utf-8", "replace")


def error_for(status: int) -> ToolnexusError:
    """The exception for a failed call; must run right after it (reads the thread's last error)."""
    message = last_error_message()
    if not message:
        message = status_str(status) or "error %d" % status
    cls = _BY_STATUS.get(status)
    if cls is None:
        return ToolnexusError(message, status)
    return cls(message, status)


# ---------------------------------------------------------------- strings


def text_arg(value: Union[str, bytes, bytearray], what: str) -> bytes:
    """str/bytes passed as is (UTF-8); refuses an embedded NUL, which C would cut the text at."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    elif not isinstance(value, (bytes, bytearray)):
        raise TypeError("%s must be str or bytes, got %s" % (what, type(value).__name__))
    if b"\0" in value:
        raise ValueError("%s contains a NUL character" % what)
    return bytes(value)


def call_out(fn: Callable[..., int], *args: Any) -> Optional[bytes]:
    """fn(*args, &out) for a `char **out` function: the string (bytes), or None when *out stayed
    NULL. Raises the typed error on a non-OK status; the out-string is always freed."""
    out = c_void_p()
    # Freed however this ends: a KeyboardInterrupt raised as the call returns included.
    try:
        status = fn(*args, byref(out))
        if status != TN_OK:
            raise error_for(status)
        return None if not out.value else ctypes.string_at(out.value)
    finally:
        if out.value:
            lib().tn_string_free(out.value)


def call_status(fn: Callable[..., int], *args: Any) -> None:
    """fn(*args) for a function that returns a status only; raises the typed error."""
    status = fn(*args)
    if status != TN_OK:
        raise error_for(status)
