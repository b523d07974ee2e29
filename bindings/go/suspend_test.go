package toolnexus

// Durable suspension (contract §6): a resolver returns Suspend for the TypeScript SDK 2.4
// modern-only server's question (tests/peers/ts_peer.mjs stdio-modern, tool `ask`); the call
// returns at once with a Pending, and a second process (this test binary run again, with
// exec.Command) connected with the same config finishes it with Resume. Malformed tokens are
// ErrInvalidArgument, a token for a server the client does not have is ErrNotFound.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const askPrompt = "Who are you?"

// modernConfig is one server, "tsm": the TS SDK 2.4 peer, modern era only, over stdio.
func modernConfig(t *testing.T) string {
	t.Helper()
	repo, _ := filepath.Abs("../..")
	nm := filepath.Join(repo, ".cache", "peers", "npm-modern", "node_modules")
	if _, err := os.Stat(nm); err != nil {
		t.Skip("the TypeScript SDK 2.4 peer is not installed (scripts/install-peers.sh)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found")
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tsm": map[string]any{
		"command": []string{"node", filepath.Join(repo, "tests", "peers", "ts_peer.mjs"), "stdio-modern"},
		"env":     map[string]string{"PEER_NODE_MODULES": nm},
	}}})
	return string(b)
}

// suspendOnce calls tsm_ask with a resolver that suspends, and checks the Pending.
func suspendOnce(t *testing.T, cfg string) *Pending {
	t.Helper()
	var mu sync.Mutex
	var seen []Request
	c, err := Connect(cfg, func(r Request) Answer {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		return Suspend()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, _ := c.Statuses(); st["tsm"].Status != "connected" {
		t.Fatalf("tsm: %+v", st["tsm"])
	}
	r, err := c.Call(context.Background(), "tsm_ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || r.Output != "The server asked for input; the call is suspended.\n"+askPrompt {
		t.Fatalf("suspended call: %s", r.JSON)
	}
	p := r.Pending()
	mu.Lock()
	defer mu.Unlock()
	if p == nil || len(p.Requests) != 1 || len(seen) != 1 || p.Requests[0].ID != seen[0].ID ||
		p.Requests[0].Prompt != askPrompt || p.Requests[0].Kind != "input" || !strings.HasPrefix(p.Resume, "tn1.") {
		t.Fatalf("pending %+v, seen %+v, from %s", p, seen, r.JSON)
	}
	if e := c.ResolverErrors(); len(e) != 0 {
		t.Fatalf("resolver errors: %v", e)
	}
	return p
}

func elicitContent(t *testing.T, r *Result) map[string]any {
	t.Helper()
	var er map[string]any
	if r.IsError || json.Unmarshal([]byte(r.Output), &er) != nil {
		t.Fatalf("not an ElicitResult: %s", r.JSON)
	}
	if r.Pending() != nil {
		t.Fatalf("pending again: %s", r.JSON)
	}
	return er
}

// TestResumeHelperProcess is the second process: it resumes TN_RESUME_TOKEN with a client of its
// own (no resolver) and prints the Result's JSON. Skipped unless run by the test below.
func TestResumeHelperProcess(t *testing.T) {
	if os.Getenv("TN_RESUME_HELPER") != "1" {
		t.Skip("the second process of TestSuspendedCallResumedInASecondProcess")
	}
	c, err := Connect(os.Getenv("TN_RESUME_CONFIG"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	answers := map[string]Answer{os.Getenv("TN_RESUME_ID"): Accept(map[string]any{"name": "Resumed"})}
	r, err := c.Resume(ctx, os.Getenv("TN_RESUME_TOKEN"), answers)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("RESULT " + r.JSON + "\n")
}

func TestSuspendedCallResumedInASecondProcess(t *testing.T) {
	cfg := modernConfig(t)
	p := suspendOnce(t, cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestResumeHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "TN_RESUME_HELPER=1", "TN_RESUME_CONFIG="+cfg,
		"TN_RESUME_TOKEN="+p.Resume, "TN_RESUME_ID="+p.Requests[0].ID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("second process: %v\n%s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "RESULT ") {
			line = strings.TrimPrefix(l, "RESULT ")
		}
	}
	var r Result
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("no result from the second process:\n%s", out)
	}
	er := elicitContent(t, &r)
	content, _ := er["content"].(map[string]any)
	if er["action"] != "accept" || content["name"] != "Resumed" || content["age"] != float64(30) {
		t.Fatalf("resumed: %s", line)
	}
}

func TestResumeDeclineNoAnswersAndJSONText(t *testing.T) {
	cfg := modernConfig(t)
	c, err := Connect(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := suspendOnce(t, cfg)
	r, err := c.Resume(context.Background(), p.Resume, `{"`+p.Requests[0].ID+`":{"ok":false,"reason":"declined"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if er := elicitContent(t, r); er["action"] != "decline" {
		t.Fatalf("declined: %s", r.JSON)
	}
	p = suspendOnce(t, cfg)
	// nil answers: cancel; through the asynchronous path (a ctx that can end, a timeout)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err = c.Resume(ctx, p.Resume, nil, WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if er := elicitContent(t, r); er["action"] != "cancel" {
		t.Fatalf("no answers: %s", r.JSON)
	}
	// a Suspend or deferred value is no Answer to resume with
	if _, err := c.Resume(context.Background(), p.Resume, map[string]Answer{"x": Suspend()}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Suspend as an answer: %v", err)
	}
	// an ended ctx: nothing is started
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := c.Resume(done, p.Resume, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

func TestResumeTokensAreChecked(t *testing.T) {
	cfg := modernConfig(t)
	c, err := Connect(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, bad := range []string{"nope", "tn1.!!!", "tn1.e30"} { // not a token, not base64url, {}
		for _, cx := range []context.Context{context.Background(), ctx} { // blocking and async paths
			if _, err := c.Resume(cx, bad, nil); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Resume(%q): %v", bad, err)
			}
		}
	}
	p := suspendOnce(t, cfg)
	_, err = c.Resume(ctx, p.Resume, map[string]Answer{"elc-not-in-token": Accept(nil)})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "not the id of a Request") {
		t.Fatalf("foreign request id: %v", err)
	}
	other := mustConnect(t, nil) // the fixture only: no server named tsm
	for _, cx := range []context.Context{context.Background(), ctx} {
		if _, err := other.Resume(cx, p.Resume, nil); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "`tsm`") {
			t.Fatalf("unknown server: %v", err)
		}
	}
	// the refusals used nothing up: the token still resumes where the server is
	r, err := c.Resume(ctx, p.Resume, map[string]Answer{p.Requests[0].ID: Accept(map[string]any{"name": "Late"})})
	if err != nil {
		t.Fatal(err)
	}
	if content, _ := elicitContent(t, r)["content"].(map[string]any); content["name"] != "Late" {
		t.Fatalf("late: %s", r.JSON)
	}
}

func TestSuspendDeferredIsCancelAndLegacyQuestionsAreNotSuspended(t *testing.T) {
	cfg := modernConfig(t)
	c, err := Connect(cfg, func(Request) Answer {
		ch := make(chan Answer, 1)
		go func() { time.Sleep(50 * time.Millisecond); ch <- Suspend() }()
		return Defer(ch)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Call(context.Background(), "tsm_ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if er := elicitContent(t, r); er["action"] != "cancel" {
		t.Fatalf("deferred Suspend: %s", r.JSON)
	}
	if e := c.ResolverErrors(); len(e) != 1 || !strings.Contains(e[0], "Suspend") {
		t.Fatalf("resolver errors: %v", e)
	}
	// the fixture is a legacy server: its elicitation/create cannot be suspended: cancel
	fx := mustConnect(t, func(Request) Answer { return Suspend() })
	if got := ask(t, fx, "fx_ask_form"); got["action"] != "cancel" {
		t.Fatalf("legacy: %v", got)
	}
}
