package toolnexus

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"encoding/json"
	"unsafe"
)

// Skills (SEP-2640): the servers that offer skills and what they list, one skill loaded with
// its SKILL.md verified (size, SHA-256, YAML frontmatter against its entry), and one file of a
// loaded skill. A skill or file that fails verification, an unknown skill or server, or a file
// its entry does not list (refused without a request) is an *Error with StatusNotFound whose
// Message says what did not match.

// SkillEntry is one skills/list entry as the server sent it; Raw is its whole JSON object.
type SkillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   json.RawMessage `json:"resources"` // [{"uri","digest","size"}] or "dynamic"
	Raw         json.RawMessage `json:"-"`
}

// SkillListing is one server's listing: its entries, and why any other was left out; or Error
// when listing failed.
type SkillListing struct {
	Skills   []SkillEntry `json:"skills"`
	Warnings []string     `json:"warnings"`
	Error    string       `json:"error"`
}

// Skill is a skill loaded by GetSkill; JSON is the library's exact text.
type Skill struct {
	Server      string          `json:"server"`
	URI         string          `json:"uri"`
	Frontmatter map[string]any  `json:"frontmatter"`
	Resources   json.RawMessage `json:"resources"`
	MimeType    string          `json:"mimeType"`
	Text        string          `json:"text"`
	JSON        string          `json:"-"`
}

// SkillFile is one file of a loaded skill: Text, or Blob (decoded) for binary content.
type SkillFile struct {
	Server   string `json:"server"`
	Skill    string `json:"skill"`
	URI      string `json:"uri"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     []byte `json:"blob"`
	JSON     string `json:"-"`
}

// SkillsJSON is tn_list_skills' JSON text: {"servers":{"<name>":{"skills":[…]}|{"error":"…"}}}.
func (c *Client) SkillsJSON() (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_list_skills(c.handle, out) })
	return s, err
}

// Skills lists the skills of every connected server that offers them, by server name. No
// skill file is read.
func (c *Client) Skills() (map[string]SkillListing, error) {
	s, err := c.SkillsJSON()
	if err != nil {
		return nil, err
	}
	var top struct {
		Servers map[string]SkillListing `json:"servers"`
	}
	if err := json.Unmarshal([]byte(s), &top); err != nil {
		return nil, err
	}
	var raw struct {
		Servers map[string]struct {
			Skills []json.RawMessage `json:"skills"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, err
	}
	for name, l := range top.Servers {
		for i := range l.Skills {
			l.Skills[i].Raw = raw.Servers[name].Skills[i]
		}
	}
	return top.Servers, nil
}

// GetSkill loads the skill of server whose SKILL.md is uri, verified against its entry.
func (c *Client) GetSkill(server, uri string) (*Skill, error) {
	var sk Skill
	err := c.skillCall(&sk.JSON, &sk, []string{server, uri}, []string{"server", "uri"},
		func(a []*C.char, out **C.char) C.tn_status { return C.tn_go_get_skill(c.handle, a[0], a[1], out) })
	if err != nil {
		return nil, err
	}
	return &sk, nil
}

// ReadSkillFile reads one file of a skill GetSkill loaded, by URI or by its path in the skill,
// verified against the entry the skill was loaded from.
func (c *Client) ReadSkillFile(server, skillURI, file string) (*SkillFile, error) {
	var f SkillFile
	err := c.skillCall(&f.JSON, &f, []string{server, skillURI, file}, []string{"server", "skillURI", "file"},
		func(a []*C.char, out **C.char) C.tn_status {
			return C.tn_go_read_skill_file(c.handle, a[0], a[1], a[2], out)
		})
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// skillCall passes args as C strings to f and decodes its JSON output into v (text into *text).
func (c *Client) skillCall(text *string, v any, args, names []string, f func([]*C.char, **C.char) C.tn_status) error {
	if err := c.check(); err != nil {
		return err
	}
	cs := make([]*C.char, len(args))
	for i, a := range args {
		p, err := cstr(a, names[i])
		if err != nil {
			return err
		}
		defer C.free(unsafe.Pointer(p))
		cs[i] = p
	}
	s, _, err := callOut(func(out **C.char) C.tn_status { return f(cs, out) })
	if err != nil {
		return err
	}
	*text = s
	return json.Unmarshal([]byte(s), v)
}
