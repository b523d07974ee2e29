// Connect, list, call, answer an elicitation, log in. Run: go run ./example SERVER [URL]
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	toolnexus "toolnexus/bindings/go"
)

// openBrowser opens url with $BROWSER when set, else the platform's opener.
func openBrowser(url string) error {
	if b := os.Getenv("BROWSER"); b != "" {
		return exec.Command(b, url).Run()
	}
	switch runtime.GOOS {
	case "darwin":
		return exec.Command("open", url).Run()
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url).Run()
	}
	return exec.Command("xdg-open", url).Run()
}

func main() {
	servers := map[string]any{"fx": map[string]any{"command": []string{os.Args[1]}}}
	if len(os.Args) > 2 { // a remote server, which may need a login (OAuth)
		servers["remote"] = map[string]any{"url": os.Args[2]}
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": servers})
	client, err := toolnexus.Connect(string(cfg), func(r toolnexus.Request) toolnexus.Answer {
		var data struct{ Source string }
		_ = json.Unmarshal(r.Data, &data)
		if r.Kind == "authorization" && data.Source == "oauth" {
			// The library's own login: open it at once; the library catches the redirect.
			if err := openBrowser(r.URL); err != nil {
				return toolnexus.Cancel()
			}
			return toolnexus.Accept(nil)
		}
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
	if len(os.Args) > 2 {
		statuses, _ := client.Statuses()
		fmt.Println("remote:", statuses["remote"].Status)
	}
	if _, err := client.Call(ctx, "no_such_tool", nil); err != nil {
		fmt.Println("error:", err) // errors.Is(err, toolnexus.ErrNotFound)
	}
}
