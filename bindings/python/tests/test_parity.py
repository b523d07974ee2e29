"""The bridge parity vectors through the binding's pure functions, byte for byte.

The resolver modes of parity/README.md as Python resolvers (a dict in, a dict out):
accept_data returns {"id": <the request's id>, "ok": true, "data": {"name": "muthu"}}, fails
raises, no_answer returns None, invalid_json / invalid_answer return the text verbatim.
"""

import json
import re

import pytest

import toolnexus_c as tn
from tn_support import VECTORS

ID_RE = re.compile(r'"id":"(elc-[0-9a-z]+-[1-9][0-9]*)"')


def _load():
    with open(VECTORS, encoding="utf-8") as f:
        vecs = [json.loads(line) for line in f if line.strip()]
    assert len(vecs) > 100, "too few vectors in %s" % VECTORS
    return vecs


VECTORS_LIST = _load()


def _norm(text):
    """Replaces the request id with <ID> after checking its form."""
    m = ID_RE.search(text)
    if m is None:
        return text
    return text[:m.start(1)] + "<ID>" + text[m.end(1):]


def _resolver(mode, seen):
    def resolve(req):
        seen.append(req.json)
        if mode == "accept_data":
            return {"id": req["id"], "ok": True, "data": {"name": "muthu"}}
        if mode == "accept_no_data":
            return {"ok": True}
        if mode == "declined":
            return tn.decline()
        if mode == "cancelled":
            return tn.cancel()
        if mode == "expired":
            return {"ok": False, "reason": "expired"}
        if mode == "no_reason":
            return {"ok": False}
        if mode == "fails":
            raise RuntimeError("the resolver fails")
        if mode == "no_answer":
            return None
        if mode == "invalid_json":
            return "this is {not JSON"
        if mode == "invalid_answer":
            return '{"ok":"yes"}'
        raise AssertionError("unknown mode %r" % mode)

    return resolve


@pytest.mark.parametrize("vec", VECTORS_LIST, ids=[v["case"] for v in VECTORS_LIST])
def test_vector(vec):
    fn, inp, expected = vec["fn"], vec["input"], vec.get("output")
    seen = []
    if fn == "elicitation_to_request":
        call = lambda: tn.elicitation_to_request(inp)  # noqa: E731
    elif fn == "answer_to_result":
        call = lambda: tn.answer_to_result(inp)  # noqa: E731
    elif fn == "sanitize":
        call = lambda: json.dumps(tn.sanitize_name(json.loads(inp)), ensure_ascii=False)  # noqa: E731
    elif fn == "server_request_response":
        mode = vec["resolver"]
        resolver = None if mode == "absent" else _resolver(mode, seen)
        call = lambda: tn.server_request_response(inp, resolver)  # noqa: E731
    else:
        raise AssertionError("unknown fn %r" % fn)

    if vec.get("error"):
        with pytest.raises(tn.ToolnexusError) as e:
            call()
        assert str(e.value), "an error without a message"
        assert not isinstance(e.value, tn.Panic), str(e.value)
    else:
        out = call()
        if expected is None:
            assert out is None
        else:
            assert out is not None and _norm(out) == expected
    if fn == "server_request_response" and "request_seen" in vec:
        want = vec["request_seen"]
        if want is None:
            assert seen == []
        else:
            assert len(seen) == 1 and _norm(seen[0]) == want
