package toolnexus

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"
)

// Prompts and completions (c-api.md "Prompts"): every connected server's prompts under
// host names (made as tool names are: the fixture's greet on server fx is fx_greet), one got
// with its arguments (a ctx that cancels it, WithTimeout), and completion/complete. An unknown
// prompt or server is ErrNotFound; arguments the server refuses (a missing required one) or
// another failure ErrServer; no answer in time ErrTimeout.

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Prompt is one listed prompt: Name is its host name (GetPrompt takes it), Prompt the server's
// own name (a completion's PromptRef takes it). Raw is its whole JSON object.
type Prompt struct {
	Name        string           `json:"name"`
	Server      string           `json:"server"`
	Prompt      string           `json:"prompt"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments"`
	Raw         json.RawMessage  `json:"-"`
}

// PromptMessage is one message of a prompt: Content is its content block as the server sent it
// ({"type":"text","text":…}, image, audio, resource_link, resource, or another type).
type PromptMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Text is the message's text when its content is a text block.
func (m PromptMessage) Text() (string, bool) {
	var b struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &b) != nil || b.Type != "text" {
		return "", false
	}
	return b.Text, true
}

// PromptResult is what GetPrompt returns; JSON is the library's exact text.
type PromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	JSON        string          `json:"-"`
}

// PromptsJSON is tn_list_prompts' JSON text, sorted by host name.
func (c *Client) PromptsJSON() (string, error) {
	return c.listJSON(func(out **C.char) C.tn_status { return C.tn_go_list_prompts(c.handle, out) })
}

// Prompts lists every connected server's prompts, sorted by host name.
func (c *Client) Prompts() ([]Prompt, error) {
	s, err := c.PromptsJSON()
	if err != nil {
		return nil, err
	}
	var out []Prompt
	return out, decodeList(s, &out, func(i int, raw json.RawMessage) { out[i].Raw = raw })
}

// GetPromptJSON gets the prompt of host name name and returns the library's JSON text. args is
// nil, JSON text (string, []byte, json.RawMessage) or a value to marshal (a map[string]string).
// When ctx ends first the request is cancelled at the server and the error wraps ctx.Err();
// WithTimeout replaces the server's timeout (WithProgress is ignored). A question the server
// asks on the way goes to the resolver.
func (c *Client) GetPromptJSON(ctx context.Context, name string, args any, opts ...CallOption) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("toolnexus: prompt %s: %w", name, err)
	}
	if err := c.check(); err != nil {
		return "", err
	}
	o := gather(opts)
	cname, err := cstr(name, "name")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cname))
	cargs, err := optJSON(args, "args")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cargs))
	if ctx.Done() == nil && !o.hasTimeout {
		s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_get_prompt(c.handle, cname, cargs, out) })
		return s, err
	}
	return c.blockingEx(ctx, "prompt "+name, &o, func(copts *C.char, id *C.uint64_t, out **C.char) C.tn_status {
		return C.tn_go_get_prompt_ex(c.handle, cname, cargs, copts, id, out)
	})
}

// GetPrompt is GetPromptJSON decoded.
func (c *Client) GetPrompt(ctx context.Context, name string, args any, opts ...CallOption) (*PromptResult, error) {
	s, err := c.GetPromptJSON(ctx, name, args, opts...)
	if err != nil {
		return nil, err
	}
	r := &PromptResult{JSON: s}
	if err := json.Unmarshal([]byte(s), r); err != nil {
		return nil, err
	}
	return r, nil
}

// Ref is what a completion completes an argument of: PromptRef or ResourceRef.
type Ref struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// PromptRef refers to a prompt by the server's name for it (Prompt.Prompt).
func PromptRef(name string) Ref { return Ref{Type: "ref/prompt", Name: name} }

// ResourceRef refers to a resource template (its uriTemplate) or a resource uri.
func ResourceRef(uri string) Ref { return Ref{Type: "ref/resource", URI: uri} }

// Completion is a server's completion object; Total is nil when it did not say. JSON is the
// library's exact text.
type Completion struct {
	Values  []string `json:"values"`
	Total   *int64   `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
	JSON    string   `json:"-"`
}

// CompleteJSON is tn_complete on the library's whole request, {"server","ref","argument":
// {"name","value"},"context"?:{"arguments":{…}}} (JSON text or a value to marshal), returning
// the server's completion object as JSON text.
func (c *Client) CompleteJSON(request any) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	creq, err := optJSON(request, "request")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(creq))
	s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_complete(c.handle, creq, out) })
	return s, err
}

// Complete asks server for the values of argument of ref that start with what is typed so far
// (value), given the other arguments already chosen (sent as context.arguments; may be nil). A server without
// completions gives no values.
func (c *Client) Complete(server string, ref Ref, argument, value string, chosen map[string]string) (*Completion, error) {
	type arg struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	type ctxArgs struct {
		Arguments map[string]string `json:"arguments"`
	}
	req := struct {
		Server   string   `json:"server"`
		Ref      Ref      `json:"ref"`
		Argument arg      `json:"argument"`
		Context  *ctxArgs `json:"context,omitempty"`
	}{server, ref, arg{argument, value}, nil}
	if chosen != nil {
		req.Context = &ctxArgs{chosen}
	}
	s, err := c.CompleteJSON(req)
	if err != nil {
		return nil, err
	}
	r := &Completion{JSON: s}
	if err := json.Unmarshal([]byte(s), r); err != nil {
		return nil, err
	}
	return r, nil
}
