"""Tools for a model through the C ABI (c-api.md "Tools for a model"): tn_tools_to_provider over
every vector of tests/vectors/providers.jsonl, byte for byte (errors: the vector's status and a
message), its NULL arguments, and tn_tools_for on a connected client (the fixture server)."""

import json
import os

import pytest

import tnlib
from tnlib import TN_ERR_INVALID_ARGUMENT, TN_OK, call_out, last_error, lib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
STATUS = {"TN_ERR_INVALID_ARGUMENT": TN_ERR_INVALID_ARGUMENT, "TN_ERR_INVALID_JSON": tnlib.TN_ERR_INVALID_JSON}

with open(os.path.join(REPO, "tests", "vectors", "providers.jsonl"), encoding="utf-8") as f:
    VECTORS = [json.loads(line) for line in f if line.strip()]


@pytest.mark.parametrize("v", VECTORS, ids=["%d-%s" % (i, v["style"]) for i, v in enumerate(VECTORS)])
def test_provider_vector(v):
    status, out = call_out(lib().tn_tools_to_provider, v["input"], v["style"])
    if "error" in v:
        assert (status, out) == (STATUS[v["error"]], None)
        assert last_error()
    else:
        assert status == TN_OK, last_error()
        assert out.decode("utf-8") == v["output"]


def test_every_style_has_vectors():
    assert {v["style"] for v in VECTORS if "output" in v} == {"openai", "anthropic", "gemini"}


def test_null_arguments_are_invalid():
    for args in ((None, "openai"), ("[]", None)):
        status, out = call_out(lib().tn_tools_to_provider, *args)
        assert (status, out) == (TN_ERR_INVALID_ARGUMENT, None)
        assert "NULL" in last_error()


def test_tools_for_a_connected_client():
    with tnlib.Client({"mcpServers": {"fx": {"command": [FIXTURE]}}}) as c:
        listed = c.tools_text()
        for style in ("openai", "anthropic", "gemini"):
            status, out = call_out(lib().tn_tools_for, c.handle, style)
            assert status == TN_OK, last_error()
            status, want = call_out(lib().tn_tools_to_provider, listed, style)
            assert out == want
        openai = json.loads(call_out(lib().tn_tools_for, c.handle, "openai")[1])
        assert openai[0]["type"] == "function" and openai[0]["function"]["name"] == "fx_add"
        gemini = json.loads(call_out(lib().tn_tools_for, c.handle, "gemini")[1])
        assert len(gemini) == 1 and len(gemini[0]["functionDeclarations"]) == len(json.loads(listed))
        status, out = call_out(lib().tn_tools_for, c.handle, "cohere")
        assert (status, out) == (TN_ERR_INVALID_ARGUMENT, None)
        assert "unknown style `cohere`" in last_error()
    status, out = call_out(lib().tn_tools_for, None, "openai")
    assert (status, out) == (TN_ERR_INVALID_ARGUMENT, None)
    status, out = call_out(lib().tn_tools_for, 987654321, "openai")
    assert status != TN_OK and out is None
    assert last_error()
