package toolnexus

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The bridge parity vectors ($TN_PARITY_VECTORS, else ../shared/parity/bridge-vectors.jsonl
// relative to the repo root) through the package's pure functions, byte for byte.

type vector struct {
	Fn          string  `json:"fn"`
	Case        string  `json:"case"`
	Input       string  `json:"input"`
	Output      *string `json:"output"`
	Error       bool    `json:"error"`
	Resolver    string  `json:"resolver"`
	RequestSeen *string `json:"request_seen"`
	HasSeen     bool    `json:"-"`
}

var idRE = regexp.MustCompile(`"id":"(elc-[0-9a-z]+-[1-9][0-9]*)"`)

func norm(s string) string {
	if m := idRE.FindStringSubmatchIndex(s); m != nil {
		return s[:m[2]] + "<ID>" + s[m[3]:]
	}
	return s
}

func loadVectors(t *testing.T) []vector {
	p := os.Getenv("TN_PARITY_VECTORS")
	if p == "" {
		p, _ = filepath.Abs("../../../shared/parity/bridge-vectors.jsonl")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(sc.Bytes(), &keys)
		_, v.HasSeen = keys["request_seen"]
		vs = append(vs, v)
	}
	if len(vs) < 100 {
		t.Fatalf("only %d vectors in %s", len(vs), p)
	}
	return vs
}

// resolverFor is a parity/README.md resolver mode as a Go resolver.
func resolverFor(mode string, seen *[]string) func(Request) Answer {
	return func(r Request) Answer {
		*seen = append(*seen, r.JSON)
		switch mode {
		case "accept_data":
			return Answer{ID: r.ID, OK: true, Data: map[string]string{"name": "muthu"}}
		case "accept_no_data":
			return Accept(nil)
		case "declined":
			return Decline()
		case "cancelled":
			return Cancel()
		case "expired":
			return Answer{Reason: "expired"}
		case "no_reason":
			return Answer{}
		case "fails":
			panic("the resolver fails")
		case "no_answer":
			return Defer(make(chan Answer)) // nothing ready: no answer
		case "invalid_json":
			return Answer{Raw: "this is {not JSON"}
		case "invalid_answer":
			return Answer{Raw: `{"ok":"yes"}`}
		}
		panic("unknown mode " + mode)
	}
}

func TestParityVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		v := v
		t.Run(v.Case, func(t *testing.T) {
			var out string
			var ok = true
			var err error
			var seen []string
			switch v.Fn {
			case "elicitation_to_request":
				out, err = ElicitationToRequest(v.Input)
			case "answer_to_result":
				out, err = AnswerToResult(v.Input)
			case "sanitize":
				out, err = SanitizeName(v.Input)
			case "server_request_response":
				var res func(Request) Answer
				if v.Resolver != "absent" {
					res = resolverFor(v.Resolver, &seen)
				}
				out, ok, err = ServerRequestResponse(v.Input, res)
			default:
				t.Fatalf("unknown fn %q", v.Fn)
			}
			if v.Error {
				var e *Error
				if !errors.As(err, &e) || e.Message == "" || e.Status == StatusPanic {
					t.Fatalf("want an error with a message, got %q %v", out, err)
				}
			} else {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if v.Output == nil {
					if ok {
						t.Fatalf("want no reply, got %q", out)
					}
				} else if !ok || norm(out) != *v.Output {
					t.Fatalf("output:\n  want %s\n  got  %s", *v.Output, out)
				}
			}
			if v.Fn == "server_request_response" && v.HasSeen {
				if v.RequestSeen == nil {
					if len(seen) != 0 {
						t.Fatalf("resolver called: %q", seen)
					}
				} else if len(seen) != 1 || norm(seen[0]) != *v.RequestSeen {
					t.Fatalf("request seen:\n  want %s\n  got  %q", *v.RequestSeen, seen)
				}
			}
		})
	}
}
