// Connect, list, call, answer an elicitation. Run: go run ./example /path/to/mcp-server
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	toolnexus "toolnexus/bindings/go"
)

func main() {
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": map[string]any{"command": []string{os.Args[1]}}}})
	client, err := toolnexus.Connect(string(cfg), func(r toolnexus.Request) toolnexus.Answer {
		fmt.Println("server asks:", r.Prompt)
		return toolnexus.Accept(map[string]string{"name": "Ada"}) // or Decline(), Cancel(), Defer(ch)
	})
	if err != nil {
		panic(err) // a *toolnexus.Error with the library's message
	}
	defer client.Close()
	tools, _ := client.Tools()
	fmt.Println(len(tools), "tools, first", tools[0].Name)
	ctx := context.Background()
	r, _ := client.Call(ctx, "fx_echo", map[string]string{"text": "hello"})
	fmt.Println(r.Output)
	r, _ = client.Call(ctx, "fx_ask_form", nil)
	fmt.Println(r.Output)
	if _, err := client.Call(ctx, "no_such_tool", nil); err != nil {
		fmt.Println("error:", err) // errors.Is(err, toolnexus.ErrNotFound)
	}
}
