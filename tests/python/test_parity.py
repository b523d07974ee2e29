"""Bridge parity vectors through the C ABI, via ctypes (the same checks as tests/c/parity.c).

Vectors: $TN_PARITY_VECTORS, else ../../../shared/parity/bridge-vectors.jsonl relative to
this directory. Library: see tnlib.py. Run with `python -m pytest tests/python`.
"""

import json
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tnlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS_PATH = os.environ.get("TN_PARITY_VECTORS") or os.path.normpath(
    os.path.join(HERE, "..", "..", "..", "shared", "parity", "bridge-vectors.jsonl")
)

# Every parity vector also runs under valgrind (scripts/test, "python valgrind").
pytestmark = pytest.mark.valgrind

ID_PLACEHOLDER = b'"id":"<ID>"'
ID_PREFIX = b'"id":"'
ID_RE = re.compile(rb"elc-[0-9a-z]+-([1-9][0-9]*)")
RESOLVER_FAIL_CODE = 7  # anything but TN_RESOLVED / TN_DEFERRED
RESOLVER_MODES = {
    "absent", "accept_data", "accept_no_data", "declined", "cancelled", "expired",
    "no_reason", "fails", "no_answer", "invalid_json", "invalid_answer",
}
PURE_FNS = {
    "elicitation_to_request": "tn_elicitation_to_request",
    "answer_to_result": "tn_answer_to_result",
    "sanitize": "tn_sanitize_name",
}
COMMON_KEYS = {"fn", "case", "input", "output", "error"}
SRR_KEYS = COMMON_KEYS | {"resolver", "request_seen"}


def _no_dup_keys(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %r" % k)
        d[k] = v
    return d


def _load_vectors():
    """Every line of the vector file, as (case name, vector or parse problem)."""
    out = []
    with open(VECTORS_PATH, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                vec = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_dup_keys)
                if not isinstance(vec, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                out.append(("line-%d" % lineno, {"_problem": "cannot parse line %d: %s" % (lineno, e)}))
                continue
            name = vec.get("case")
            if not isinstance(name, str) or not name:
                out.append(("line-%d" % lineno, {"_problem": "line %d: no case name" % lineno}))
                continue
            out.append((name, vec))
    if not out:
        out.append(("no-vectors", {"_problem": "no vectors in %s" % VECTORS_PATH}))
    seen = {}
    for i, (name, vec) in enumerate(out):
        if name in seen:
            out[i] = ("%s@line-%d" % (name, i + 1), {"_problem": "duplicate case name %r" % name})
        seen[name] = True
    return out


VECTORS = _load_vectors()


class _Ids:
    """Request ids seen in this process: distinct, with strictly increasing counters."""

    seen = set()
    last_counter = None


def _check_id(problems, where, ident):
    m = ID_RE.fullmatch(ident)
    if m is None:
        problems.append("malformed request id in %s: %r (want ^elc-[0-9a-z]+-[1-9][0-9]*$)" % (where, ident))
        return
    counter = int(m.group(1))
    if ident in _Ids.seen:
        problems.append("request id in %s reused: %r" % (where, ident))
    elif _Ids.last_counter is not None and counter <= _Ids.last_counter:
        problems.append("request id counter in %s did not increase: %r after counter %d"
                        % (where, ident, _Ids.last_counter))
    _Ids.seen.add(ident)
    if _Ids.last_counter is None or counter > _Ids.last_counter:
        _Ids.last_counter = counter


def _compare(problems, where, expected, actual):
    """Byte-for-byte comparison, with request-id substitution when expected holds "id":"<ID>"."""
    if ID_PLACEHOLDER not in expected:
        if actual != expected:
            problems.append("%s differs:\n  expected: %r\n  actual:   %r" % (where, expected, actual))
        return
    at = actual.find(ID_PREFIX)
    close = actual.find(b'"', at + len(ID_PREFIX)) if at >= 0 else -1
    if close < 0:
        problems.append("no \"id\":\"...\" in %s:\n  expected: %r\n  actual:   %r" % (where, expected, actual))
        return
    ident = actual[at + len(ID_PREFIX):close]
    _check_id(problems, where, ident)
    norm = actual[:at] + ID_PLACEHOLDER + actual[close + 1:]
    if norm != expected:
        problems.append("%s differs (after id substitution):\n  expected: %r\n  actual:   %r"
                        % (where, expected, norm))


def _vector_shape(vec):
    """Validates the vector; returns (fn, input bytes, output bytes|None, error, resolver,
    request_seen: bytes|None|Ellipsis for 'not checked')."""
    if "_problem" in vec:
        pytest.fail(vec["_problem"])
    fn = vec.get("fn")
    assert isinstance(fn, str), "malformed vector: fn"
    is_srr = fn == "server_request_response"
    assert fn in PURE_FNS or is_srr, "malformed vector: unknown fn %r" % fn
    extra = set(vec) - (SRR_KEYS if is_srr else COMMON_KEYS)
    assert not extra, "malformed vector: unexpected keys %r" % sorted(extra)

    def text(key, nullable):
        assert key in vec, "malformed vector: no %r" % key
        v = vec[key]
        if v is None and nullable:
            return None
        assert isinstance(v, str), "malformed vector: %r is not a string" % key
        assert "\0" not in v, "malformed vector: %r contains a NUL after decoding" % key
        return v.encode("utf-8")  # fails on a lone surrogate: also malformed

    inp = text("input", False)
    out = text("output", True)
    error = vec.get("error", False)
    assert isinstance(error, bool), "malformed vector: error is not a boolean"
    if error:
        assert out is None, "malformed vector: error is true but output is not null"
    elif not is_srr:
        assert out is not None, "malformed vector: output is null for fn %s" % fn
    resolver = None
    seen = Ellipsis
    if is_srr:
        resolver = vec.get("resolver")
        assert resolver in RESOLVER_MODES, "malformed vector: resolver %r" % (resolver,)
        if "request_seen" in vec or not error:
            seen = text("request_seen", True)
        if resolver == "absent":
            assert seen in (None, Ellipsis), "malformed vector: resolver absent but request_seen set"
    return fn, inp, out, error, resolver, seen


def _expect_error(problems, status, out, message):
    if status == tnlib.TN_OK:
        problems.append("want an error status, got TN_OK with output %r" % (out,))
    elif status == tnlib.TN_ERR_PANIC:
        problems.append("the library panicked (TN_ERR_PANIC) on invalid input: %r" % (message,))
    if out is not None and status != tnlib.TN_OK:
        problems.append("error status but output %r" % (out,))
    if status != tnlib.TN_OK and not message:
        problems.append("error status %d but tn_last_error_message() is %r" % (status, message))


def _expect_output(problems, status, out, message, expected):
    if status != tnlib.TN_OK:
        problems.append("want TN_OK, got status %d (%s): %r; expected %r"
                        % (status, tnlib.status_str(status), message, expected))
        return
    if expected is None:
        if out is not None:
            problems.append("want no reply (*out == NULL), got %r" % (out,))
        return
    if out is None:
        problems.append("TN_OK but *out is NULL; expected %r" % (expected,))
        return
    _compare(problems, "output", expected, out)


def _call(problems, fn, *args):
    """tnlib.call_out plus the last error message, read right after the call."""
    try:
        status, out = tnlib.call_out(fn, *args)
    except tnlib.ContractError as e:
        problems.append(str(e))
        return None, None, None
    message = tnlib.last_error() if status != tnlib.TN_OK else None
    return status, out, message


class _ResolverState:
    def __init__(self, mode):
        self.mode = mode
        self.calls = 0
        self.seen = None
        self.problems = []


def _answer(state, responder, text, want_ok):
    st = tnlib.answer(responder, text)
    if want_ok and st != tnlib.TN_OK:
        state.problems.append("tn_responder_answer(%r) returned %d (%s), want TN_OK: %r"
                              % (text, st, tnlib.status_str(st), tnlib.last_error()))
    elif not want_ok:
        if st == tnlib.TN_OK:
            state.problems.append("tn_responder_answer(%r) returned TN_OK, want an error" % (text,))
        else:
            msg = tnlib.last_error()
            if not msg:
                state.problems.append("tn_responder_answer(%r) returned %d but tn_last_error_message() is %r"
                                      % (text, st, msg))


def _make_resolver(state):
    def resolve(request_json, responder):
        # Runs inside the C callback: tnlib.Resolver catches anything raised here too.
        state.calls += 1
        if state.calls > 1:
            state.problems.append("resolver called %d times" % state.calls)
            return RESOLVER_FAIL_CODE
        if request_json is None:
            state.problems.append("resolver got request_json == NULL")
            return RESOLVER_FAIL_CODE
        state.seen = bytes(request_json)
        if not responder:
            state.problems.append("resolver got responder == NULL")
            return RESOLVER_FAIL_CODE
        mode = state.mode
        if mode == "accept_data":
            at = request_json.find(ID_PREFIX)
            close = request_json.find(b'"', at + len(ID_PREFIX)) if at >= 0 else -1
            if close < 0:
                state.problems.append("no \"id\":\"...\" in the request the resolver got")
                _answer(state, responder, b'{"ok":true,"data":{"name":"muthu"}}', True)
            else:
                ident = request_json[at + len(ID_PREFIX):close]
                _answer(state, responder, b'{"id":"' + ident + b'","ok":true,"data":{"name":"muthu"}}', True)
            return tnlib.TN_RESOLVED
        simple = {
            "accept_no_data": b'{"ok":true}',
            "declined": b'{"ok":false,"reason":"declined"}',
            "cancelled": b'{"ok":false,"reason":"cancelled"}',
            "expired": b'{"ok":false,"reason":"expired"}',
            "no_reason": b'{"ok":false}',
        }
        if mode in simple:
            _answer(state, responder, simple[mode], True)
            return tnlib.TN_RESOLVED
        if mode == "fails":
            return RESOLVER_FAIL_CODE
        if mode == "no_answer":
            return tnlib.TN_RESOLVED
        if mode == "invalid_json":
            _answer(state, responder, b"this is {not JSON", False)
            return tnlib.TN_RESOLVED
        if mode == "invalid_answer":
            _answer(state, responder, b'{"ok":"yes"}', False)
            return tnlib.TN_RESOLVED
        state.problems.append("unknown resolver mode %r" % (mode,))
        return RESOLVER_FAIL_CODE

    return tnlib.Resolver(resolve)


@pytest.mark.parametrize("vec", [v for _, v in VECTORS], ids=[n for n, _ in VECTORS])
def test_parity(vec):
    fn, inp, expected, error, mode, expected_seen = _vector_shape(vec)
    lib = tnlib.lib()
    problems = []

    if fn in PURE_FNS:
        status, out, message = _call(problems, getattr(lib, PURE_FNS[fn]), inp)
        if status is not None:
            if error:
                _expect_error(problems, status, out, message)
            else:
                _expect_output(problems, status, out, message, expected)
    else:
        state = _ResolverState(mode)
        resolver = None if mode == "absent" else _make_resolver(state)
        status, out, message = _call(problems, lib.tn_server_request_response, resolver, None, inp)
        if status is not None:
            if error:
                _expect_error(problems, status, out, message)
            else:
                _expect_output(problems, status, out, message, expected)
        if resolver is not None:
            problems.extend("exception in the resolver:\n" + e for e in resolver.errors)
        problems.extend("in the resolver: " + p for p in state.problems)
        if expected_seen is None:
            if state.calls:
                problems.append("the resolver must not have been called; it saw %r" % (state.seen,))
        elif expected_seen is not Ellipsis:
            if not state.calls:
                problems.append("the resolver was not called; expected it to see %r" % (expected_seen,))
            elif state.seen is not None:
                _compare(problems, "request_seen", expected_seen, state.seen)

    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
