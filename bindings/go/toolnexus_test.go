package toolnexus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"toolnexus/bindings/go/internal/debugapi"
)

// fixture is tests/fixture-server: $TN_FIXTURE, else the repo's debug build.
func fixture(t testing.TB) string {
	p := os.Getenv("TN_FIXTURE")
	if p == "" {
		p, _ = filepath.Abs("../../target/debug/tn-fixture-server")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture server not found at %s (run `cargo build --workspace`)", p)
	}
	return p
}

func config(t testing.TB, args ...string) string {
	cmd := append([]string{fixture(t)}, args...)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": map[string]any{"command": cmd}}})
	return string(b)
}

func mustConnect(t *testing.T, resolver func(Request) Answer) *Client {
	t.Helper()
	c, err := Connect(config(t), resolver)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t *testing.T, c *Client, name string, args any) *Result {
	t.Helper()
	r, err := c.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("Call(%s): %v", name, err)
	}
	return r
}

// ask calls fx_ask_form (or another eliciting tool) and decodes the ElicitResult the server saw.
func ask(t *testing.T, c *Client, tool string) map[string]any {
	t.Helper()
	r := call(t, c, tool, nil)
	if r.IsError {
		t.Fatalf("%s: isError: %s", tool, r.Output)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Output), &m); err != nil {
		t.Fatalf("%s: %v: %s", tool, err, r.Output)
	}
	return m
}

func TestConnectListCall(t *testing.T) {
	if Version() != "0.1.0" {
		t.Fatalf("version %q", Version())
	}
	c := mustConnect(t, nil)
	st, err := c.Statuses()
	if err != nil || st["fx"].Status != "connected" {
		t.Fatalf("statuses %v %v", st, err)
	}
	tools, err := c.Tools()
	if err != nil {
		t.Fatal(err)
	}
	var echo *Tool
	for i := range tools {
		if i > 0 && tools[i-1].Name >= tools[i].Name {
			t.Fatalf("not sorted: %s >= %s", tools[i-1].Name, tools[i].Name)
		}
		if tools[i].Name == "fx_echo" {
			echo = &tools[i]
		}
	}
	if echo == nil || echo.Server != "fx" || echo.RemoteName != "echo" || echo.Source != "mcp" || len(echo.InputSchema) == 0 {
		t.Fatalf("fx_echo: %+v", echo)
	}
	if r := call(t, c, "fx_echo", map[string]string{"text": "héllo 😀"}); r.Output != "héllo 😀" || r.IsError {
		t.Fatalf("echo: %+v", r)
	}
	if r := call(t, c, "fx_add", `{"a":2,"b":3}`); r.Output != "5" {
		t.Fatalf("add: %+v", r)
	}
	if r := call(t, c, "fx_fail", nil); !r.IsError || !strings.Contains(r.Output, "first problem") {
		t.Fatalf("fail: %+v", r)
	}
	if r := call(t, c, "fx_image", nil); !strings.Contains(string(r.Metadata), `"type":"image"`) {
		t.Fatalf("image: %+v", r)
	}
}

func TestErrorsCarryTheLibraryMessage(t *testing.T) {
	_, err := Connect("{bad", nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidJSON || !errors.Is(err, ErrInvalidJSON) ||
		e.Error() != "config_json is not JSON: key must be a string at line 1 column 2" {
		t.Fatalf("connect {bad: %#v", err)
	}
	if _, err := Connect("[1]", nil); !errors.Is(err, ErrConfig) || err.Error() != "the config must be a JSON object, got an array" {
		t.Fatalf("connect [1]: %v", err)
	}
	c := mustConnect(t, nil)
	if _, err := c.Call(context.Background(), "nope", nil); !errors.Is(err, ErrNotFound) || err.Error() != "no tool named `nope`" {
		t.Fatalf("nope: %v", err)
	}
	if _, err := c.Call(context.Background(), "fx_echo", "{bad"); !errors.Is(err, ErrInvalidJSON) || !strings.HasPrefix(err.Error(), "args_json is not JSON: ") {
		t.Fatalf("bad args: %v", err)
	}
	if _, err := AnswerToResult(`{"ok":"yes"}`); !errors.Is(err, ErrInvalidArgument) || err.Error() != "Answer `ok` must be a boolean, got a string" {
		t.Fatalf("answer: %v", err)
	}
	if st, msg := debugapi.ForcePanic("boom from go"); Status(st) != StatusPanic || !strings.Contains(msg, "boom from go") {
		t.Fatalf("panic: status %d, %q", st, msg)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), "fx_echo", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := c.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestElicitationAcceptDeclineCancel(t *testing.T) {
	var mu sync.Mutex
	mode := "accept"
	var seen []Request
	c := mustConnect(t, func(r Request) Answer {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r)
		switch mode {
		case "accept":
			a := Accept(map[string]any{"name": "Ada"})
			a.ID = r.ID
			return a
		case "decline":
			return Decline()
		case "raw":
			return Answer{Raw: `{"ok":true,"data":{"name":"Raw"}}`}
		case "invalid":
			return Answer{Raw: `{"ok":"yes"}`}
		}
		return Cancel()
	})
	set := func(m string) { mu.Lock(); mode = m; mu.Unlock() }

	got := ask(t, c, "fx_ask_form")
	if got["action"] != "accept" || fmt.Sprint(got["content"]) != "map[age:30 color:green name:Ada]" {
		t.Fatalf("accept: %v", got)
	}
	r := seen[0]
	if r.Kind != "input" || r.Prompt != "Who are you?" || !strings.HasPrefix(r.ID, "elc-") ||
		!strings.Contains(string(r.Data), `"schema"`) || !strings.HasPrefix(r.JSON, `{"id":"elc-`) {
		t.Fatalf("request: %+v", r)
	}
	set("decline")
	if got := ask(t, c, "fx_ask_form"); fmt.Sprint(got) != "map[action:decline]" {
		t.Fatalf("decline: %v", got)
	}
	set("cancel")
	if got := ask(t, c, "fx_ask_form"); fmt.Sprint(got) != "map[action:cancel]" {
		t.Fatalf("cancel: %v", got)
	}
	set("raw")
	if got := ask(t, c, "fx_ask_form"); fmt.Sprint(got["content"]) != "map[age:30 color:green name:Raw]" {
		t.Fatalf("raw: %v", got)
	}
	set("invalid")
	if got := ask(t, c, "fx_ask_form"); fmt.Sprint(got) != "map[action:cancel]" {
		t.Fatalf("invalid: %v", got)
	}
	if errs := c.ResolverErrors(); len(errs) != 1 || !strings.Contains(errs[0], "must be a boolean") {
		t.Fatalf("resolver errors: %q", errs)
	}
	set("accept")
	if got := ask(t, c, "fx_ask_url"); fmt.Sprint(got) != "map[action:accept]" {
		t.Fatalf("url: %v", got)
	}
	if last := seen[len(seen)-1]; last.Kind != "authorization" || last.URL != "https://example.test/auth" {
		t.Fatalf("url request: %+v", last)
	}
}

func TestPanickingResolverIsCancel(t *testing.T) {
	n := 0
	c := mustConnect(t, func(r Request) Answer {
		n++
		if n == 1 {
			panic("resolver exploded")
		}
		return Accept(map[string]string{"name": "after"})
	})
	if got := ask(t, c, "fx_ask_form"); fmt.Sprint(got) != "map[action:cancel]" {
		t.Fatalf("panic: %v", got)
	}
	if errs := c.ResolverErrors(); len(errs) != 1 || !strings.Contains(errs[0], "resolver exploded") {
		t.Fatalf("resolver errors: %q", errs)
	}
	if got := ask(t, c, "fx_ask_form"); got["action"] != "accept" {
		t.Fatalf("after panic: %v", got)
	}
}

func TestDeferredAnswer(t *testing.T) {
	c := mustConnect(t, func(r Request) Answer {
		ch := make(chan Answer, 1)
		go func() {
			time.Sleep(200 * time.Millisecond)
			ch <- Accept(map[string]string{"name": "Later"})
		}()
		return Defer(ch)
	})
	t0 := time.Now()
	got := ask(t, c, "fx_ask_form")
	if fmt.Sprint(got["content"]) != "map[age:30 color:green name:Later]" || time.Since(t0) < 200*time.Millisecond {
		t.Fatalf("deferred: %v after %v", got, time.Since(t0))
	}
	// the reader goes on while an answer is deferred
	done := make(chan map[string]any, 1)
	go func() {
		r, err := c.Call(context.Background(), "fx_ask_form", nil)
		if err != nil {
			done <- map[string]any{"error": err.Error()}
			return
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(r.Output), &m)
		done <- m
	}()
	if r := call(t, c, "fx_echo", map[string]string{"text": "meanwhile"}); r.Output != "meanwhile" {
		t.Fatalf("meanwhile: %+v", r)
	}
	if got := <-done; got["action"] != "accept" {
		t.Fatalf("second deferred: %v", got)
	}
}

func TestDeferredClosedChannelIsCancelAndCloseEndsWaiters(t *testing.T) {
	var mu sync.Mutex
	var chans []chan Answer
	c := mustConnect(t, func(r Request) Answer {
		ch := make(chan Answer)
		mu.Lock()
		chans = append(chans, ch)
		mu.Unlock()
		return Defer(ch)
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(chans) }
	res := make(chan *Result, 1)
	go func() { r, _ := c.Call(context.Background(), "fx_ask_form", nil); res <- r }()
	waitFor(t, func() bool { return count() == 1 })
	close(chans[0])
	if r := <-res; r == nil || r.Output != `{"action":"cancel"}` {
		t.Fatalf("closed channel: %+v", r)
	}
	// a deferred answer never given: Close cancels it and the call returns promptly
	errc := make(chan error, 1)
	go func() { _, err := c.Call(context.Background(), "fx_ask_form", nil); errc <- err }()
	waitFor(t, func() bool { return count() == 2 })
	t0 := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("in-flight call at close: %v", err)
	}
	if time.Since(t0) > 5*time.Second {
		t.Fatalf("close took %v", time.Since(t0))
	}
}

func TestCloseInsideResolverIsReentrant(t *testing.T) {
	var c *Client
	var closeErr, callErr error
	c = mustConnect(t, func(r Request) Answer {
		closeErr = c.Close()
		_, callErr = c.Call(context.Background(), "fx_echo", map[string]string{"text": "inner"})
		return Accept(map[string]string{"name": "x"})
	})
	if got := ask(t, c, "fx_ask_form"); got["action"] != "accept" {
		t.Fatalf("%v; close: %v, call: %v, resolver errors: %q", got, closeErr, callErr, c.ResolverErrors())
	}
	if !errors.Is(closeErr, ErrReentrant) || closeErr.Error() == "" || !errors.Is(callErr, ErrReentrant) {
		t.Fatalf("close: %v, call: %v", closeErr, callErr)
	}
	if r := call(t, c, "fx_echo", map[string]string{"text": "still open"}); r.Output != "still open" {
		t.Fatalf("%+v", r)
	}
}

func TestConcurrentCalls(t *testing.T) {
	c := mustConnect(t, func(r Request) Answer { return Accept(map[string]string{"name": "T"}) })
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	t0 := time.Now()
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if r, err := c.Call(context.Background(), "fx_slow", map[string]int{"ms": 300}); err != nil || r.Output != "slept 300" {
				errs <- fmt.Errorf("slow: %v %+v", err, r)
				return
			}
			for j := 0; j < 30; j++ {
				text := fmt.Sprintf("g%d-%d", i, j)
				if r, err := c.Call(context.Background(), "fx_echo", map[string]string{"text": text}); err != nil || r.Output != text {
					errs <- fmt.Errorf("echo: %v %+v", err, r)
					return
				}
			}
			if r, err := c.Call(context.Background(), "fx_ask_form", nil); err != nil || !strings.Contains(r.Output, `"name":"T"`) {
				errs <- fmt.Errorf("ask: %v %+v", err, r)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d := time.Since(t0); d > 16*300*time.Millisecond/2 {
		t.Errorf("calls did not overlap: %v", d)
	}
}

func TestCallContext(t *testing.T) {
	c := mustConnect(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := c.Call(ctx, "fx_slow", map[string]int{"ms": 1000}); !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 900*time.Millisecond {
		t.Fatalf("ctx: %v after %v", err, time.Since(t0))
	}
	if _, err := c.Call(ctx, "fx_echo", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired ctx: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
