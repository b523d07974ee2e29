package toolnexus

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"encoding/json"
	"unsafe"
)

// Tools in a model provider's function-calling shape, and a server's tasks.

// ToolsFor is the connected tools (as Tools lists them) in style's function-calling shape,
// "openai", "anthropic" or "gemini", as JSON text; the input schemas pass through verbatim. An
// unknown style is ErrInvalidArgument.
func (c *Client) ToolsFor(style string) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	cs, err := cstr(style, "style")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cs))
	s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_tools_for(c.handle, cs, out) })
	return s, err
}

// ToolsToProvider is the mapping of ToolsFor over a JSON array of tools (JSON text in and out).
func ToolsToProvider(toolsJSON, style string) (string, error) {
	cs, err := cstr(style, "style")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cs))
	return pure(toolsJSON, "tools", func(in *C.char, out **C.char) C.tn_status {
		return C.tn_tools_to_provider(in, cs, out)
	})
}

// Task is one entry of a server's tasks/list; Raw is its whole JSON object (createdAt, ttl, …).
type Task struct {
	TaskStatus
	Raw json.RawMessage `json:"-"`
}

// Tasks is server's tasks/list, every page (MCP 2025-11-25; a server that lists none, or one of
// the 2026-07-28 era, is ErrNotFound saying why).
func (c *Client) Tasks(server string) ([]Task, error) {
	s, err := c.TasksJSON(server)
	if err != nil {
		return nil, err
	}
	var top struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(s), &top); err != nil {
		return nil, err
	}
	out := make([]Task, len(top.Tasks))
	for i, r := range top.Tasks {
		if err := json.Unmarshal(r, &out[i].TaskStatus); err != nil {
			return nil, err
		}
		out[i].Raw = r
	}
	return out, nil
}

// TasksJSON is tn_list_tasks' JSON text, {"server","tasks":[<Task>…]}.
func (c *Client) TasksJSON(server string) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	cs, err := cstr(server, "server")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cs))
	s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_list_tasks(c.handle, cs, out) })
	return s, err
}
