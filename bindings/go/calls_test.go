package toolnexus

// Calls the host controls (contract §7): ctx cancel reaching the server (the fixture's
// cancelled_ids), per-call timeouts, progress (server-everything's
// trigger-long-running-operation), ConnectContext, and many calls with cancels.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func cancelledIDs(t *testing.T, c *Client) []json.RawMessage {
	t.Helper()
	var ids []json.RawMessage
	if err := json.Unmarshal([]byte(call(t, c, "fx_cancelled_ids", nil).Output), &ids); err != nil {
		t.Fatal(err)
	}
	return ids
}

// evConfig is server-everything over stdio; the test is skipped when it is not installed.
func evConfig(t *testing.T) string {
	p, _ := filepath.Abs("../../.cache/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(p); err != nil {
		t.Skip("server-everything not installed (scripts/install-peers.sh)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found")
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ev": map[string]any{"command": []string{"node", p, "stdio"}, "timeout": 10000}}})
	return string(b)
}

func TestCancelledContextCancelsTheCallAtTheServer(t *testing.T) {
	c := mustConnect(t, nil)
	if ids := cancelledIDs(t, c); len(ids) != 0 {
		t.Fatalf("cancelled before: %s", ids)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelledAt atomic.Int64
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancelledAt.Store(time.Now().UnixNano())
		cancel()
	}()
	r, err := c.Call(ctx, "fx_slow", map[string]int{"ms": 30000})
	if !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("got %+v, %v", r, err)
	}
	if !strings.Contains(err.Error(), "fx_slow") {
		t.Errorf("the error does not name the call: %v", err)
	}
	if d := time.Since(time.Unix(0, cancelledAt.Load())); d > time.Second {
		t.Errorf("returned %v after the cancel", d)
	}
	waitFor(t, func() bool { return len(cancelledIDs(t, c)) == 1 }) // the server was told
	// a deadline cancels the same way, with a new request id
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := c.Call(ctx2, "fx_slow", map[string]int{"ms": 30000}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	waitFor(t, func() bool { return len(cancelledIDs(t, c)) == 2 })
	if ids := cancelledIDs(t, c); string(ids[0]) == string(ids[1]) {
		t.Fatalf("the same id twice: %s", ids)
	}
	// the server goes on serving, and a cancellable ctx that does not end changes nothing
	ctx3, cancel3 := context.WithCancel(context.Background())
	defer cancel3()
	if r, err := c.Call(ctx3, "fx_echo", map[string]string{"text": "after"}); err != nil || r.Output != "after" {
		t.Fatalf("%+v, %v", r, err)
	}
	if _, err := c.Call(ctx3, "nope", nil); !errors.Is(err, ErrNotFound) || err.Error() != "no tool named `nope`" {
		t.Fatalf("unknown tool: %v", err)
	}
	if ids := cancelledIDs(t, c); len(ids) != 2 {
		t.Fatalf("cancelled: %s", ids)
	}
}

func TestWithTimeoutWinsOverTheServers(t *testing.T) {
	c, err := Connect(fmt.Sprintf(`{"mcpServers":{"fx":{"command":[%q],"timeout":30000}}}`, fixture(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	r, err := c.Call(context.Background(), "fx_slow", map[string]int{"ms": 5000}, WithTimeout(300*time.Millisecond))
	if err != nil || !r.IsError || !strings.Contains(r.Output, "300 ms") || time.Since(t0) > 2*time.Second {
		t.Fatalf("%+v, %v after %v", r, err, time.Since(t0))
	}
	r, err = c.Call(context.Background(), "fx_slow", map[string]int{"ms": 100}, WithTimeout(5*time.Second))
	if err != nil || r.Output != "slept 100" {
		t.Fatalf("%+v, %v", r, err)
	}
	if _, err := c.Call(context.Background(), "fx_echo", nil, WithTimeout(-time.Second)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative timeout: %v", err)
	}
}

func TestProgressInOrderBeforeTheResult(t *testing.T) {
	c, err := Connect(evConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var seen []Progress
	returned := false
	r, err := c.Call(context.Background(), "ev_trigger-long-running-operation", `{"duration":1,"steps":4}`,
		WithProgress(func(p Progress) {
			if returned {
				t.Error("progress after Call returned")
			}
			seen = append(seen, p) // no lock: it runs on this goroutine
		}))
	returned = true
	if err != nil || r.IsError || !strings.Contains(r.Output, "Long running operation completed") {
		t.Fatalf("%+v, %v", r, err)
	}
	if len(seen) != 4 {
		t.Fatalf("progress: %+v", seen)
	}
	for i, p := range seen {
		if p.Progress != float64(i+1) || p.Total != 4 || !strings.Contains(p.JSON, `"progress"`) {
			t.Fatalf("progress %d: %+v", i, p)
		}
	}
	// progress restarts a per-call timeout: a 2 s job reporting every 250 ms outlives 700 ms
	n := 0
	r, err = c.Call(context.Background(), "ev_trigger-long-running-operation", `{"duration":2,"steps":8}`,
		WithTimeout(700*time.Millisecond), WithProgress(func(Progress) { n++ }))
	if err != nil || r.IsError || n != 8 {
		t.Fatalf("%+v, %v, %d reports", r, err, n)
	}
}

func TestAPanicInProgressCancelsTheCall(t *testing.T) {
	c, err := Connect(evConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	got := func() (r any) {
		defer func() { r = recover() }()
		c.Call(context.Background(), "ev_trigger-long-running-operation", `{"duration":20,"steps":20}`,
			WithProgress(func(p Progress) { panic(fmt.Sprintf("stop at %v", p.Progress)) }))
		return nil
	}()
	if got != "stop at 1" || time.Since(t0) > 5*time.Second {
		t.Fatalf("recovered %v after %v", got, time.Since(t0))
	}
	r, err := c.Call(context.Background(), "ev_echo", `{"message":"after"}`)
	if err != nil || !strings.Contains(r.Output, "after") {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestConnectContext(t *testing.T) {
	// an expired ctx: nothing starts
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := ConnectContext(ctx, config(t), nil); !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("%v, %v", c, err)
	}
	// a server that takes 2 s to start (and writes its pid): the ctx ends first, ConnectContext
	// returns at once (through sh: not on Windows)
	if runtime.GOOS != "windows" {
		connectContextAbandoned(t)
	}
	// a ctx that does not end: connected as Connect would
	ctx3, cancel3 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel3()
	c, err := ConnectContext(ctx3, config(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := call(t, c, "fx_echo", map[string]string{"text": "hi"}); r.Output != "hi" {
		t.Fatalf("%+v", r)
	}
}

func TestCloseCompletesCallsInFlight(t *testing.T) {
	c, err := Connect(config(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	results := make([]*Result, 10)
	errs := make([]error, 10)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = c.Call(ctx, "fx_slow", map[string]int{"ms": 30000})
		}(i)
	}
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if time.Since(t0) > 5*time.Second {
		t.Errorf("close took %v", time.Since(t0))
	}
	for i := range results {
		if errs[i] != nil || !results[i].IsError || !strings.Contains(results[i].Output, "disconnected") {
			t.Fatalf("call %d: %+v, %v", i, results[i], errs[i])
		}
	}
}

func TestManyCallsWithCancels(t *testing.T) {
	c := mustConnect(t, nil)
	const n = 400
	var wg sync.WaitGroup
	var ok, cancelled atomic.Int32
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%10 == 0 { // held by the server until cancelled
				go func() { time.Sleep(time.Duration(50+i%7*20) * time.Millisecond); cancel() }()
				if _, err := c.Call(ctx, "fx_slow", map[string]int{"ms": 30000}); errors.Is(err, context.Canceled) {
					cancelled.Add(1)
				}
				return
			}
			text := fmt.Sprint(i)
			if r, err := c.Call(ctx, "fx_echo", map[string]string{"text": text}, WithTimeout(20*time.Second)); err == nil && r.Output == text {
				ok.Add(1)
			}
		}(i)
	}
	wg.Wait()
	if ok.Load() != n-n/10 || cancelled.Load() != n/10 {
		t.Fatalf("%d ok, %d cancelled", ok.Load(), cancelled.Load())
	}
	// The server is told of every cancelled call it received; a call cancelled before it went
	// out is never sent at all (contract §7), so at most n/10 are told.
	waitFor(t, func() bool { k := len(cancelledIDs(t, c)); return k > 0 && k <= n/10 })
	time.Sleep(200 * time.Millisecond)
	if k := len(cancelledIDs(t, c)); k > n/10 {
		t.Fatalf("the server was told of %d cancels for %d cancelled calls", k, n/10)
	}
}

func connectContextAbandoned(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	slow, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": map[string]any{
		"command": []string{"sh", "-c", `sleep 2; echo $$ > "$1"; exec "$0"`, fixture(t), pidfile}}}})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	t0 := time.Now()
	c, err := ConnectContext(ctx2, string(slow), func(Request) Answer { return Decline() })
	if !errors.Is(err, context.DeadlineExceeded) || c != nil || time.Since(t0) > time.Second {
		t.Fatalf("%v, %v after %v", c, err, time.Since(t0))
	}
	// the abandoned connect finishes in the background, and its client is closed: the server
	// process goes away
	var pid int
	waitFor(t, func() bool {
		b, err := os.ReadFile(pidfile)
		_, serr := fmt.Sscan(string(b), &pid)
		return err == nil && serr == nil
	})
	waitFor(t, func() bool { return !processAlive(pid) })
}
