package toolnexus

import (
	"errors"
	"strings"
	"testing"
)

const pdfSkill = "skill://pdf-processing/SKILL.md"

func TestSkillsListGetRead(t *testing.T) {
	c, err := Connect(config(t, "--skills"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	listing, err := c.Skills()
	if err != nil {
		t.Fatal(err)
	}
	fx := listing["fx"]
	if len(fx.Skills) != 8 || fx.Skills[0].URI != pdfSkill || len(fx.Warnings) != 1 {
		t.Fatalf("listing: %+v", fx)
	}
	if fx.Skills[0].Frontmatter["name"] != "pdf-processing" || !strings.Contains(string(fx.Skills[0].Raw), `"resources":[`) {
		t.Fatalf("entry: %+v", fx.Skills[0])
	}
	sk, err := c.GetSkill("fx", pdfSkill)
	if err != nil {
		t.Fatal(err)
	}
	if sk.Server != "fx" || !strings.HasPrefix(sk.Text, "---\nname: pdf-processing\n") || sk.MimeType != "text/markdown" {
		t.Fatalf("skill: %+v", sk)
	}
	f, err := c.ReadSkillFile("fx", pdfSkill, "references/FORMS.md")
	if err != nil || f.Text != "Supporting content.\n" || f.URI != "skill://pdf-processing/references/FORMS.md" {
		t.Fatalf("FORMS.md: %+v %v", f, err)
	}
	logo, err := c.ReadSkillFile("fx", pdfSkill, "assets/logo.png")
	if err != nil || string(logo.Blob[:4]) != "\x89PNG" {
		t.Fatalf("logo: %+v %v", logo, err)
	}
}

func TestSkillsRefusals(t *testing.T) {
	c, err := Connect(config(t, "--skills"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Skills(); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSkill("fx", "skill://tampered-frontmatter/SKILL.md")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "frontmatter mismatch") {
		t.Fatalf("tampered: %v", err)
	}
	_, err = c.ReadSkillFile("fx", "skill://tampered-frontmatter/SKILL.md", "SKILL.md")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "is not loaded") {
		t.Fatalf("not loaded: %v", err)
	}
	_, err = c.GetSkill("fx", "skill://pdf\x00/SKILL.md")
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("NUL: %v", err)
	}
	c.Close()
	if _, err := c.Skills(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}
