package toolnexus

// Resources, templates, subscriptions, prompts and completions against the fixture's
// --resources mode in both eras (stdio; --modern for MCP 2026-07-28): every method, the errors,
// a subscription's resource_updated event and none after Unsubscribe, list change events, a
// blob's bytes, a slow read cancelled by its ctx; and the wrappers of tn_call_tool_ex,
// tn_list_tasks, tn_tools_for and tn_tools_to_provider.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func eras(t *testing.T, f func(t *testing.T, args ...string)) {
	t.Run("legacy", func(t *testing.T) { f(t, "--resources") })
	t.Run("modern", func(t *testing.T) { f(t, "--resources", "--modern") })
}

func connectWith(t *testing.T, resolver func(Request) Answer, args ...string) *Client {
	t.Helper()
	c, err := Connect(config(t, args...), resolver)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestResourcesListReadAndBlob(t *testing.T) {
	eras(t, func(t *testing.T, args ...string) {
		c := connectWith(t, nil, args...)
		rs, err := c.Resources()
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) < 4 || rs[0].URI != "fx://ask" || rs[1].URI != "fx://bin/1" || rs[2].URI != "fx://doc/1" {
			t.Fatalf("resources: %+v", rs)
		}
		if rs[2].Server != "fx" || rs[2].Title != "Document 1" || rs[2].Size == nil || !strings.Contains(string(rs[2].Raw), `"fx/note"`) {
			t.Fatalf("doc 1: %+v", rs[2])
		}
		ts, err := c.ResourceTemplates()
		if err != nil || len(ts) != 2 || ts[0].URITemplate != "fx://item/{id}" || ts[1].URITemplate != "fx://search{?q,lang}" {
			t.Fatalf("templates: %+v %v", ts, err)
		}
		ctx := context.Background()
		r, err := c.ReadResource(ctx, "fx", "fx://doc/1")
		if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "document 1" || r.Contents[0].IsBlob {
			t.Fatalf("read: %+v %v", r, err)
		}
		r, err = c.ReadResource(ctx, "fx", "fx://bin/1", WithTimeout(5*time.Second))
		want := make([]byte, 256)
		for i := range want {
			want[i] = byte(i)
		}
		if err != nil || !r.Contents[0].IsBlob || !bytes.Equal(r.Contents[0].Bytes(), want) || r.Contents[0].MimeType != "application/octet-stream" {
			t.Fatalf("blob: %+v %v", r, err)
		}
		r, err = c.ReadResource(ctx, "fx", "fx://multi")
		if err != nil || len(r.Contents) != 2 || r.Contents[0].Text != "part 1" || !bytes.HasPrefix(r.Contents[1].Blob, []byte("\x89PNG")) {
			t.Fatalf("multi: %+v %v", r, err)
		}
		u, err := URITemplate("fx://search{?q,lang}", map[string]any{"q": "a b", "lang": "fr"})
		if err != nil || !u.HasURI || u.URI != "fx://search?q=a%20b&lang=fr" || strings.Join(u.Variables, ",") != "q,lang" {
			t.Fatalf("uri template: %+v %v", u, err)
		}
		if r, err := c.ReadResource(ctx, "fx", u.URI); err != nil || r.Contents[0].Text != "q=a%20b&lang=fr" {
			t.Fatalf("search: %+v %v", r, err)
		}
		if u, err := URITemplate("fx://item/{id}", nil); err != nil || u.HasURI || u.Variables[0] != "id" {
			t.Fatalf("variables only: %+v %v", u, err)
		}
	})
}

func TestResourceAndPromptErrors(t *testing.T) {
	eras(t, func(t *testing.T, args ...string) {
		c := connectWith(t, nil, args...)
		ctx := context.Background()
		if _, err := c.ReadResource(ctx, "nope", "fx://doc/1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown server: %v", err)
		}
		if _, err := c.ReadResource(ctx, "fx", "fx://nothing"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "fx://nothing") {
			t.Fatalf("unknown uri: %v", err)
		}
		if _, err := c.GetPrompt(ctx, "fx_nope", nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown prompt: %v", err)
		}
		if _, err := c.GetPrompt(ctx, "fx_greet", map[string]string{}); !errors.Is(err, ErrServer) {
			t.Fatalf("missing argument: %v", err)
		}
		if _, err := c.GetPrompt(ctx, "fx_greet", `[1]`); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("arguments not an object: %v", err)
		}
		if _, err := c.CompleteJSON(`{"server":"fx"}`); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("bad completion request: %v", err)
		}
		if _, err := c.Complete("nope", PromptRef("greet"), "name", "A", nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("completion of an unknown server: %v", err)
		}
		if err := c.Subscribe("nope", "fx://doc/1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("subscribe to an unknown server: %v", err)
		}
		if err := c.Unsubscribe("fx", "fx://doc/9"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unsubscribe without a subscription: %v", err)
		}
		if _, err := c.ReadResource(ctx, "fx", "fx://slow/5000", WithTimeout(200*time.Millisecond)); !errors.Is(err, ErrTimeout) {
			t.Fatalf("timeout: %v", err)
		}
		if _, err := c.ReadResource(ctx, "fx", "fx://doc\x001"); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("a NUL in the uri: %v", err)
		}
	})
	if _, err := URITemplate("fx://item/{id", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("malformed template: %v", err)
	}
	c := connectWith(t, nil)
	if rs, err := c.Resources(); err != nil || len(rs) != 0 {
		t.Fatalf("no resources without --resources: %v %v", rs, err)
	}
	if err := c.Subscribe("fx", "fx://doc/1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("subscribe without subscriptions: %v", err)
	}
	c.Close()
	if _, err := c.Prompts(); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

func TestPromptsGetAndComplete(t *testing.T) {
	eras(t, func(t *testing.T, args ...string) {
		c := connectWith(t, nil, args...)
		ps, err := c.Prompts()
		if err != nil || len(ps) < 4 {
			t.Fatalf("prompts: %+v %v", ps, err)
		}
		var greet *Prompt
		for i := range ps {
			if ps[i].Name == "fx_greet" {
				greet = &ps[i]
			}
		}
		if greet == nil || greet.Prompt != "greet" || greet.Server != "fx" || len(greet.Arguments) != 2 || !greet.Arguments[0].Required {
			t.Fatalf("greet: %+v", greet)
		}
		ctx := context.Background()
		r, err := c.GetPrompt(ctx, "fx_greet", map[string]string{"name": "Ada", "lang": "fr"})
		if err != nil || r.Description != "Greets someone" || len(r.Messages) != 1 || r.Messages[0].Role != "user" {
			t.Fatalf("get: %+v %v", r, err)
		}
		if text, ok := r.Messages[0].Text(); !ok || text != "Bonjour, Ada !" {
			t.Fatalf("text: %q %v", text, ok)
		}
		r, err = c.GetPrompt(ctx, "fx_blocks", nil, WithTimeout(5*time.Second))
		if err != nil || len(r.Messages) != 7 {
			t.Fatalf("blocks: %+v %v", r, err)
		}
		if _, ok := r.Messages[1].Text(); ok || !strings.Contains(string(r.Messages[1].Content), `"image"`) {
			t.Fatalf("image block: %s", r.Messages[1].Content)
		}
		comp, err := c.Complete("fx", PromptRef("greet"), "name", "a", map[string]string{"lang": "fr"})
		if err != nil || strings.Join(comp.Values, ",") != "Amélie,Antoine" {
			t.Fatalf("complete with context: %+v %v", comp, err)
		}
		comp, err = c.Complete("fx", ResourceRef("fx://item/{id}"), "id", "1", nil)
		if err != nil || strings.Join(comp.Values, ",") != "1,10,11" || comp.Total == nil || *comp.Total != 3 || comp.HasMore {
			t.Fatalf("complete a template: %+v %v", comp, err)
		}
		if s, err := c.CompleteJSON(map[string]any{"server": "fx", "ref": PromptRef("code_review"),
			"argument": map[string]string{"name": "language", "value": "p"}}); err != nil || s != `{"values":["python"]}` {
			t.Fatalf("complete json: %s %v", s, err)
		}
	})
}

func TestAReadThatAsksGoesToTheResolver(t *testing.T) {
	eras(t, func(t *testing.T, args ...string) {
		c := connectWith(t, func(r Request) Answer { return Accept(map[string]any{"version": "3"}) }, args...)
		r, err := c.ReadResource(context.Background(), "fx", "fx://ask")
		if err != nil || r.Contents[0].Text != "version 3" {
			t.Fatalf("ask: %+v %v", r, err)
		}
	})
}

// waitEvent waits for an event of ch that match accepts.
func waitEventOf(t *testing.T, ch <-chan Event, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ch:
			if match(e) {
				return e
			}
		case <-deadline:
			t.Fatal("no such event")
		}
	}
}

func TestSubscriptionEventsAndListChanges(t *testing.T) {
	eras(t, func(t *testing.T, args ...string) {
		c := connectWith(t, nil, args...)
		// Held before the changes: an event then tells what changed (of a list not held yet,
		// it names every entry as added).
		if _, err := c.Prompts(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Resources(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ResourceTemplates(); err != nil {
			t.Fatal(err)
		}
		ch, err := c.Events(64)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Subscribe("fx", "fx://doc/1"); err != nil {
			t.Fatal(err)
		}
		if r := call(t, c, "fx_touch", map[string]string{"uri": "fx://doc/1"}); r.Output != "touched 1" {
			t.Fatalf("touch: %+v", r)
		}
		e := waitEventOf(t, ch, func(e Event) bool { return e.Type == "resource_updated" })
		if e.Server != "fx" || e.URI != "fx://doc/1" {
			t.Fatalf("updated: %+v", e)
		}
		if err := c.Unsubscribe("fx", "fx://doc/1"); err != nil {
			t.Fatal(err)
		}
		if r := call(t, c, "fx_touch", map[string]string{"uri": "fx://doc/1"}); r.Output != "touched 0" {
			t.Fatalf("touch after unsubscribe: %+v", r)
		}
		call(t, c, "fx_toggle_prompt", map[string]bool{"on": true})
		e = waitEventOf(t, ch, func(e Event) bool { return e.Type == "prompts" || e.Type == "resource_updated" })
		if e.Type != "prompts" || strings.Join(e.Added, ",") != "fx_extra" {
			t.Fatalf("prompts event (and no update after unsubscribe): %+v", e)
		}
		out := call(t, c, "fx_add_resource", nil).Output
		e = waitEventOf(t, ch, func(e Event) bool { return e.Type == "resources" })
		// The templates, held too, did not change: the event has no "templates" member.
		if len(e.Added) != 1 || !strings.Contains(out, e.Added[0]) || e.Templates != nil {
			t.Fatalf("resources event: %+v (%s)", e, out)
		}
	})
}

func TestCancellingTheContextCancelsASlowRead(t *testing.T) {
	eras(t, func(t *testing.T, args ...string) {
		c := connectWith(t, nil, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		_, err := c.ReadResource(ctx, "fx", "fx://slow/30000")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
			t.Fatalf("after %v: %v", time.Since(t0), err)
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() { time.Sleep(200 * time.Millisecond); cancel2() }()
		if _, err := c.GetPrompt(ctx2, "fx_greet", map[string]string{"name": "x"}); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if _, err := c.ReadResource(ctx2, "fx", "fx://slow/30000"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		r, err := c.ReadResource(context.Background(), "fx", "fx://slow/10")
		if err != nil || r.Contents[0].Text != "slept 10" {
			t.Fatalf("after the cancels: %+v %v", r, err)
		}
	})
}

func TestCallWithATimeoutOnlyAndTheOtherWrappers(t *testing.T) {
	c := connectWith(t, nil)
	// A timeout and no ctx: tn_call_tool_ex on this goroutine.
	r, err := c.Call(context.Background(), "fx_slow", `{"ms":5000}`, WithTimeout(200*time.Millisecond))
	if err != nil || !r.IsError || !strings.Contains(r.JSON, "200 ms") {
		t.Fatalf("timeout: %+v %v", r, err)
	}
	if r, err := c.Call(context.Background(), "fx_echo", `{"text":"ex"}`, WithTimeout(5*time.Second)); err != nil || r.Output != "ex" {
		t.Fatalf("echo: %+v %v", r, err)
	}
	if _, err := c.Call(context.Background(), "nope", nil, WithTimeout(time.Second)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown tool: %v", err)
	}
	s, err := c.ToolsFor("anthropic")
	var tools []map[string]any
	if err != nil || json.Unmarshal([]byte(s), &tools) != nil || len(tools) == 0 || tools[0]["input_schema"] == nil {
		t.Fatalf("tools for: %s %v", s, err)
	}
	if _, err := c.ToolsFor("cohere"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown style: %v", err)
	}
	list, _ := c.ToolsJSON()
	p, err := ToolsToProvider(list, "openai")
	if err != nil || !strings.Contains(p, `"type":"function"`) {
		t.Fatalf("tools to provider: %.200s %v", p, err)
	}
	if _, err := c.Tasks("fx"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tasks of a server without them: %v", err)
	}
	tc, err := Connect(fmt.Sprintf(`{"mcpServers":{"fx":{"command":[%q,"--dual","--tasks"],"protocol":"legacy"}}}`, fixture(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	call(t, tc, "fx_task_slow", map[string]int{"ms": 50, "steps": 1})
	if tasks, err := tc.Tasks("fx"); err != nil {
		t.Fatalf("tasks: %v %v", tasks, err)
	}
	if s, err := tc.TasksJSON("fx"); err != nil || !strings.HasPrefix(s, `{"server":"fx","tasks":`) {
		t.Fatalf("tasks json: %s %v", s, err)
	}
}
