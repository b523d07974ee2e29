"""toolnexus_c's Skills (SEP-2640) against the fixture server's `--skills` mode: list, load a
skill verified and read its files, a tampered skill refused with NotFound, a file the entry does
not list refused."""

import base64

import pytest

import toolnexus_c as tn
from tn_support import config

PDF = "skill://pdf-processing/SKILL.md"


def test_list_get_and_read_files():
    with tn.connect(config("--skills")) as c:
        listing = c.skills()["servers"]["fx"]
        uris = [s["uri"] for s in listing["skills"]]
        assert uris[0] == PDF and "skill://tampered-digest/SKILL.md" in uris
        skill = c.get_skill("fx", PDF)
        assert skill["frontmatter"]["name"] == "pdf-processing"
        assert skill["text"].startswith("---\nname: pdf-processing\n")
        forms = c.read_skill_file("fx", PDF, "references/FORMS.md")
        assert forms["text"] == "Supporting content.\n"
        logo = c.read_skill_file("fx", PDF, "skill://pdf-processing/assets/logo.png")
        assert base64.b64decode(logo["blob"]).startswith(b"\x89PNG")


def test_refusals_raise_not_found_naming_what_did_not_match():
    with tn.connect(config("--skills")) as c:
        c.skills()
        with pytest.raises(tn.NotFound) as e:
            c.get_skill("fx", "skill://tampered-size/SKILL.md")
        assert "size mismatch: it is 130 bytes, its entry says 88" in str(e.value)
        c.get_skill("fx", PDF)
        with pytest.raises(tn.NotFound) as e:
            c.read_skill_file("fx", PDF, "references/SECRET.md")
        assert "is not listed in the resources" in str(e.value) and "nothing was requested" in str(e.value)
    with tn.connect(config()) as c:
        assert c.skills() == {"servers": {}}
        with pytest.raises(tn.NotFound) as e:
            c.get_skill("fx", PDF)
        assert "offers no skills" in str(e.value)
