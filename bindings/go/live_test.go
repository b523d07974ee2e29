//go:build !windows

// The restart test kills the server with SIGKILL; on Windows the Job Object path is
// tested by tests/c/client.c under Wine.

package toolnexus

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Long-lived hosts: a callback and a channel see a killed server restarted and a
// tool-list change, against the fixture.

func liveConfig(t *testing.T) string {
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": map[string]any{
		"command": []string{fixture(t), "--live"},
		"restart": map[string]any{"backoffMs": 100},
	}}})
	return string(cfg)
}

func waitEvent(t *testing.T, ch <-chan Event, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("%s: the channel closed", what)
			}
			if match(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("%s: no such event", what)
		}
	}
}

func TestEventsOnAChannelAndACallback(t *testing.T) {
	c, err := Connect(liveConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Events(64)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []Event
	if err := c.OnEvent(func(e Event) { mu.Lock(); seen = append(seen, e); mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	call(t, c, "fx_toggle_tool", map[string]any{"on": true})
	e := waitEvent(t, ch, "tools", func(e Event) bool { return e.Type == "tools" })
	if e.Server != "fx" || len(e.Added) != 1 || e.Added[0] != "fx_live_extra" {
		t.Fatalf("%+v", e)
	}
	if r := call(t, c, "fx_live_extra", nil); r.Output != "live_extra ok" {
		t.Fatalf("%+v", r)
	}
	call(t, c, "fx_toggle_tool", map[string]any{"on": false})
	waitEvent(t, ch, "removed", func(e Event) bool { return e.Type == "tools" && len(e.Removed) == 1 })
	if _, err := c.call("fx_live_extra", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	pid, _ := strconv.Atoi(call(t, c, "fx_pid", nil).Output)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e = waitEvent(t, ch, "restarting", func(e Event) bool { return e.Status == "restarting" })
	if e.Attempt != 1 || e.LastExit != "was killed by signal 9" {
		t.Fatalf("%+v", e)
	}
	if r := call(t, c, "fx_echo", map[string]any{"text": "back"}); r.Output != "back" {
		t.Fatalf("%+v", r)
	}
	waitEvent(t, ch, "connected", func(e Event) bool { return e.Status == "connected" && e.Restarts == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; ok {
		// Events queued before Close may remain; the channel ends after them.
		for range ch {
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 4 {
		t.Fatalf("the callback saw %d events", len(seen))
	}
	if _, err := c.Events(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
