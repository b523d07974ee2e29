"""Skills (SEP-2640) through the C ABI: tn_list_skills, tn_get_skill and
tn_read_skill_file against the fixture server's `--skills` mode, in both eras, over stdio and
HTTP. The fixture's `--log` records every request the library sent, so the tests check that
nothing is read ahead of need (not on connect, not on listing), that a refused skill's files are
never read, that a URI the entry does not list is refused without a request, and over modern
HTTP that `resources/read` carries `Mcp-Name` (the fixture answers -32020 when it does not)."""

import base64
import hashlib
import json
import os

import pytest

import tnlib
from conftest import REPO
from test_modern_fixture import http, make_server  # noqa: F401 (the `http` fixture)

FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
pytestmark = pytest.mark.skipif(not os.path.exists(FIXTURE), reason="build tn-fixture-server first")

PDF = "skill://pdf-processing/SKILL.md"
PDF_TEXT = (
    "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: Apache-2.0\n"
    "metadata:\n  version: \"2.1.0\"\n  tags: [pdf, forms]\n---\n\n# PDF processing\n\n"
    "Fill forms with references/FORMS.md; run scripts/extract.py.\n"
)
LISTED = [
    PDF,
    "skill://acme/billing/refunds/SKILL.md",
    "skill://tampered-digest/SKILL.md",
    "skill://tampered-size/SKILL.md",
    "skill://tampered-frontmatter/SKILL.md",
    "skill://leaky/SKILL.md",
    "skill://tampered-file/SKILL.md",
    "skill://daily/SKILL.md",
]
SKILL_METHODS = ("skills/list", "skills/get", "resources/read")


@pytest.fixture(params=[("stdio", "legacy"), ("stdio", "modern"), ("http", "legacy"), ("http", "modern")],
                ids=lambda p: "-".join(p))
def fx(request, tmp_path, http, connect):  # noqa: F811
    """A client connected to a `--dual --skills` fixture spoken to in one era: (client, a
    function giving the requests the library sent, the era)."""
    transport, era = request.param
    spec, sent = make_server(transport, tmp_path, http, ["--dual", "--skills"], protocol=era)
    c = connect({"mcpServers": {"fx": spec}})
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == era, st
    return c, sent, era


def skill_requests(sent):
    return [r for r in sent() if r["rpc"] in SKILL_METHODS]


def reads(sent):
    return [r["params"]["uri"] for r in sent() if r["rpc"] == "resources/read"]


def ok(c, fn, *args):
    status, text = c.skills(fn, *args)
    assert status == tnlib.TN_OK, (fn, args, status, text)
    return json.loads(text)


def refused(c, fn, *args):
    status, text = c.skills(fn, *args)
    assert status == tnlib.TN_ERR_NOT_FOUND, (fn, args, status, text)
    return text


def test_nothing_is_read_on_connect_or_on_listing(fx):
    c, sent, era = fx
    assert skill_requests(sent) == [], "connect asked for no skill and read no file"
    listing = ok(c, "tn_list_skills")
    fx_list = listing["servers"]["fx"]
    assert [s["uri"] for s in fx_list["skills"]] == LISTED
    pdf = fx_list["skills"][0]
    assert pdf["frontmatter"] == {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
                                  "license": "Apache-2.0", "metadata": {"version": "2.1.0", "tags": ["pdf", "forms"]}}
    assert pdf["resources"][0] == {"uri": PDF, "digest": "sha256:" + hashlib.sha256(PDF_TEXT.encode()).hexdigest(),
                                   "size": len(PDF_TEXT.encode())}
    assert fx_list["skills"][7]["resources"] == "dynamic"
    # The invalid entry is left out, and said why.
    assert fx_list["warnings"] == [
        "skill `skill://broken/SKILL.md` is not listed: its URI's last segment `broken` is not its frontmatter's name `other`"
    ]
    # Three pages of three, each asked with the cursor the last one gave; not one file read.
    lists = skill_requests(sent)
    assert [r["rpc"] for r in lists] == ["skills/list"] * 3, lists
    assert [(r["params"] or {}).get("cursor") for r in lists] == [None, "3", "6"]
    if era == "modern":
        assert all(r["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28" for r in lists)


def test_a_good_skill_and_its_supporting_files(fx):
    c, sent, era = fx
    ok(c, "tn_list_skills")
    skill = ok(c, "tn_get_skill", "fx", PDF)
    assert skill["server"] == "fx" and skill["uri"] == PDF and skill["text"] == PDF_TEXT
    assert skill["frontmatter"]["metadata"] == {"version": "2.1.0", "tags": ["pdf", "forms"]}
    assert skill["mimeType"] == "text/markdown" and len(skill["resources"]) == 4
    assert reads(sent) == [PDF], "only the SKILL.md was read"
    # Its files: by their path in the skill, or by URI; text and binary.
    forms = ok(c, "tn_read_skill_file", "fx", PDF, "references/FORMS.md")
    assert forms == {"server": "fx", "skill": PDF, "uri": "skill://pdf-processing/references/FORMS.md",
                     "mimeType": "text/markdown", "text": "Supporting content.\n"}
    script = ok(c, "tn_read_skill_file", "fx", PDF, "skill://pdf-processing/scripts/extract.py")
    assert script["text"] == "print('extract')\n"
    logo = ok(c, "tn_read_skill_file", "fx", PDF, "assets/logo.png")
    assert "text" not in logo and base64.b64decode(logo["blob"]) == b"\x89PNG\r\n\x1a\n\x00\x01\xfe\xff"
    assert reads(sent) == [PDF, "skill://pdf-processing/references/FORMS.md",
                           "skill://pdf-processing/scripts/extract.py", "skill://pdf-processing/assets/logo.png"]
    if era == "modern" and "mcpName" in sent()[0]:
        # SEP-2243: each resources/read carries its URI as Mcp-Name (else the fixture refuses it).
        assert all(r["mcpName"] == r["params"]["uri"] for r in sent() if r["rpc"] == "resources/read")
    # A nested skill path: its root is everything before /SKILL.md.
    refunds = "skill://acme/billing/refunds/SKILL.md"
    ok(c, "tn_get_skill", "fx", refunds)
    email = ok(c, "tn_read_skill_file", "fx", refunds, "examples/email.md")
    assert email["uri"] == "skill://acme/billing/refunds/examples/email.md" and email["text"] == "Dear customer,\n"
    # Listing again with the same entries keeps the skills loaded.
    ok(c, "tn_list_skills")
    assert ok(c, "tn_read_skill_file", "fx", PDF, "references/FORMS.md")["text"] == "Supporting content.\n"
    # Paths as a SKILL.md writes them resolve as a filesystem path would (SEP-2640).
    for path in ["./references/FORMS.md", "assets/../references/FORMS.md"]:
        got = ok(c, "tn_read_skill_file", "fx", PDF, path)
        assert got["uri"] == "skill://pdf-processing/references/FORMS.md", (path, got)


@pytest.mark.parametrize("name, why", [
    ("tampered-digest", "digest mismatch: its SHA-256 is sha256:"),
    ("tampered-size", "size mismatch: it is 130 bytes, its entry says 88"),
    ("tampered-frontmatter",
     "frontmatter mismatch: its YAML frontmatter differs from its entry's in `description` "
     "(the file says \"Exfiltrate credentials\", the entry \"Fill in forms\")"),
])
def test_each_verification_failure_refuses_the_skill(fx, name, why):
    c, sent, _ = fx
    uri = "skill://%s/SKILL.md" % name
    ok(c, "tn_list_skills")
    msg = refused(c, "tn_get_skill", "fx", uri)
    assert msg.startswith("skill `%s` of server `fx` is refused: %s" % (uri, why)), msg
    assert msg.endswith("; nothing of it is returned and none of its files is read"), msg
    assert reads(sent) == [uri]
    # Not loaded: none of its files can be read, and nothing is requested.
    msg = refused(c, "tn_read_skill_file", "fx", uri, "SKILL.md")
    assert "is not loaded" in msg, msg
    assert reads(sent) == [uri]


def test_the_digest_failure_names_both_digests(fx):
    c, _, _ = fx
    ok(c, "tn_list_skills")
    msg = refused(c, "tn_get_skill", "fx", "skill://tampered-digest/SKILL.md")
    listed = "---\nname: tampered-digest\ndescription: A skill served with other bytes of the same length\n---\n\nSkill body.\n"
    served = listed.replace("Skill body.", "Evil body!!")
    assert "its SHA-256 is sha256:%s, its entry says sha256:%s" % (
        hashlib.sha256(served.encode()).hexdigest(), hashlib.sha256(listed.encode()).hexdigest()) in msg, msg


def test_a_tampered_supporting_file_is_refused(fx):
    c, sent, _ = fx
    ok(c, "tn_list_skills")
    skill = "skill://tampered-file/SKILL.md"
    ok(c, "tn_get_skill", "fx", skill)
    msg = refused(c, "tn_read_skill_file", "fx", skill, "references/NOTES.md")
    assert msg.startswith("file `skill://tampered-file/references/NOTES.md` of skill `%s` (server `fx`) is refused, "
                          "it failed verification: digest mismatch" % skill), msg


def test_a_uri_the_entry_does_not_list_is_refused_without_a_request(fx):
    c, sent, _ = fx
    ok(c, "tn_list_skills")
    ok(c, "tn_get_skill", "fx", PDF)
    before = sent()
    for f, says in [
        ("references/SECRET.md", "`skill://pdf-processing/references/SECRET.md` is not listed in the resources of "
                                 "skill `%s` (server `fx`): refused, nothing was requested" % PDF),
        ("skill://tampered-file/references/NOTES.md", "is not listed in the resources"),
        ("../tampered-file/SKILL.md", "is neither a URI nor a path inside the skill"),
        ("/etc/passwd", "is neither a URI nor a path inside the skill"),
        ("assets/../../x", "is neither a URI nor a path inside the skill"),
    ]:
        msg = refused(c, "tn_read_skill_file", "fx", PDF, f)
        assert says in msg, (f, msg)
    assert sent() == before, "nothing was sent"
    # A file of a skill that was never loaded: refused, nothing sent.
    msg = refused(c, "tn_read_skill_file", "fx", "skill://acme/billing/refunds/SKILL.md", "examples/email.md")
    assert "skill `skill://acme/billing/refunds/SKILL.md` of server `fx` is not loaded" in msg, msg
    assert sent() == before


def test_a_skill_the_listing_does_not_hold_is_confirmed_with_skills_get(fx):
    c, sent, _ = fx
    # Without a listing: the entry comes from skills/get, then the one read, verified.
    hidden = ok(c, "tn_get_skill", "fx", "skill://hidden/SKILL.md")
    assert hidden["text"].endswith("Hidden body.\n")
    assert [(r["rpc"], r["params"]["uri"]) for r in skill_requests(sent)] == [
        ("skills/get", "skill://hidden/SKILL.md"), ("resources/read", "skill://hidden/SKILL.md")]
    # A skill the server does not serve: skills/get refuses it (-32602) and nothing is read.
    msg = refused(c, "tn_get_skill", "fx", "skill://nope/SKILL.md")
    assert msg.startswith("server `fx` serves no skill `skill://nope/SKILL.md`: it is not in its listing and "
                          "skills/get refused it (the server answered with JSON-RPC error -32602: Unknown skill"), msg
    assert msg.endswith("nothing was read"), msg
    # An entry skills/get gives that is invalid is refused too.
    msg = refused(c, "tn_get_skill", "fx", "skill://broken/SKILL.md")
    assert "its skills/get entry is invalid: its URI's last segment `broken`" in msg, msg
    assert reads(sent) == ["skill://hidden/SKILL.md"]


def test_a_dynamic_skill_is_declined_unread(fx):
    c, sent, _ = fx
    ok(c, "tn_list_skills")
    msg = refused(c, "tn_get_skill", "fx", "skill://daily/SKILL.md")
    assert "its entry's resources are \"dynamic\": there are no digests to verify it against" in msg, msg
    assert reads(sent) == []


def test_server_text_quoted_in_a_refusal_is_masked(tmp_path, http, connect):  # noqa: F811
    h = http("--dual", "--skills")
    c = connect({"mcpServers": {"fx": {"url": h.url, "headers": {"X-Api-Key": "sk-fixture-secret-1234"}}}})
    ok(c, "tn_list_skills")
    msg = refused(c, "tn_get_skill", "fx", "skill://leaky/SKILL.md")
    assert "(the file says \"leaked: ***\", the entry \"Harmless\")" in msg, msg
    assert "sk-fixture-secret-1234" not in msg


def test_servers_without_skills_unknown_servers_and_a_closed_client(connect):
    c = connect({"mcpServers": {"plain": {"command": [FIXTURE]}, "off": {"command": [FIXTURE], "disabled": True},
                                "gone": {"command": ["/nonexistent/tn-no-such-server"]}}})
    assert ok(c, "tn_list_skills") == {"servers": {}}, "no server declares the extension"
    msg = refused(c, "tn_get_skill", "plain", PDF)
    assert msg == ("server `plain` offers no skills: its capabilities declare no "
                   "extensions[\"io.modelcontextprotocol/skills\"]"), msg
    assert refused(c, "tn_get_skill", "nosuch", PDF) == "no server named `nosuch` in the config"
    assert refused(c, "tn_get_skill", "off", PDF) == "server `off` is disabled"
    assert refused(c, "tn_get_skill", "gone", PDF).startswith("server `gone` failed during `connect`")
    status, msg = c.skills("tn_get_skill", None, PDF)
    assert status == tnlib.TN_ERR_INVALID_ARGUMENT and "`server` is NULL" in msg, msg
    handle = c.handle
    c.disconnect()
    status, _ = tnlib.call_out(tnlib.lib().tn_list_skills, handle)
    assert status == tnlib.TN_ERR_CLOSED
    status, _ = tnlib.call_out(tnlib.lib().tn_get_skill, handle, "plain", PDF)
    assert status == tnlib.TN_ERR_CLOSED
