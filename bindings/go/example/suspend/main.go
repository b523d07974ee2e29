// A question suspended in one process and answered in another.
// Run: go run ./example/suspend COMMAND... (an MCP server of the 2026-07-28 era with a tool `ask`)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	toolnexus "toolnexus/bindings/go"
)

func main() {
	ctx := context.Background()
	if os.Args[1] == "-resume" { // the second process: the same config, no resolver needed
		config, token, id := os.Args[2], os.Args[3], os.Args[4]
		client, err := toolnexus.Connect(config, nil)
		if err != nil {
			panic(err)
		}
		defer client.Close()
		answers := map[string]toolnexus.Answer{id: toolnexus.Accept(map[string]string{"name": "Ada"})}
		r, err := client.Resume(ctx, token, answers) // ErrInvalidArgument, ErrNotFound: see the README
		if err != nil {
			panic(err)
		}
		fmt.Println("resumed:", r.Output)
		return
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"forms": map[string]any{"command": os.Args[1:]}}})
	client, err := toolnexus.Connect(string(cfg), func(toolnexus.Request) toolnexus.Answer {
		return toolnexus.Suspend()
	})
	if err != nil {
		panic(err)
	}
	r, err := client.Call(ctx, "forms_ask", nil) // returns at once: nobody has to be there to answer
	client.Close()
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Output)
	p := r.Pending() // the Requests and the resume token ("tn1.…"): store them anywhere
	second := exec.Command(os.Args[0], "-resume", string(cfg), p.Resume, p.Requests[0].ID)
	second.Stdout, second.Stderr = os.Stdout, os.Stderr
	if err := second.Run(); err != nil {
		panic(err)
	}
}
