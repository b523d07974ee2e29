package toolnexus

// Tasks against the fixture's --tasks mode: Call on a required-task tool returns
// its result like any call, WithProgress sees the task's status changes with their resume
// token, and a wait that ends while the task works gives a Pending carrying the task, which
// Resume collects without running the tool again.

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestTaskCallStatusAndPendingResume(t *testing.T) {
	c, err := Connect(fmt.Sprintf(`{"mcpServers":{"fx":{"command":[%q,"--dual","--tasks"],"protocol":"modern"}}}`, fixture(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var statuses []string
	r, err := c.Call(context.Background(), "fx_task_slow", `{"ms":300,"steps":3}`,
		WithProgress(func(p Progress) {
			if p.Task != nil {
				statuses = append(statuses, p.Task.Status)
				if p.Resume == "" {
					t.Error("a status change without its resume token")
				}
			}
		}))
	if err != nil || r.IsError || r.Output != "slow task done after 3 steps" {
		t.Fatalf("%+v, %v", r, err)
	}
	if len(statuses) < 2 || statuses[0] != "working" || statuses[len(statuses)-1] != "completed" {
		t.Fatalf("statuses: %v", statuses)
	}
	r, err = c.Call(context.Background(), "fx_task_slow", `{"ms":1200,"steps":1}`, WithTimeout(200*time.Millisecond))
	if err != nil || r.IsError {
		t.Fatalf("%+v, %v", r, err)
	}
	p := r.Pending()
	if p == nil || p.Task == nil || p.Task.Status != "working" || p.Task.TaskID == "" {
		t.Fatalf("pending: %+v", p)
	}
	done, err := c.Resume(context.Background(), p.Resume, "{}")
	if err != nil || done.IsError || done.Output != "slow task done after 1 steps" {
		t.Fatalf("%+v, %v", done, err)
	}
}
