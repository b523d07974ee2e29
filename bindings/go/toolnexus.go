// Package toolnexus is a cgo binding for libtoolnexus, the Rust MCP client with a C ABI.
//
// Connect starts every server of an MCP config; Tools lists their tools; Call calls one. When a
// server asks the user something during a call (elicitation), the resolver given to Connect
// gets a §10 Request and returns an Answer: Accept, Decline, Cancel, Defer for an answer
// given later from any goroutine, or Suspend to suspend the question durably (contract §6: the
// call returns at once with Result.Pending, and Client.Resume finishes it, from this process or
// another connected with the same config). A resolver that panics makes the server see cancel.
// Library errors are *Error values carrying the library's own message.
//
// Calls the host controls (contract §7): cancelling the ctx given to Call cancels the call at
// the server; WithTimeout sets one call's timeout and WithProgress receives its progress
// reports; ConnectContext bounds connecting.
//
// Long-lived hosts: OnEvent registers a function for the client's events (a server
// restarting or back, its tool list changed, its log messages), Events hands them on a
// channel; see docs/live-servers.md.
//
// Resources, prompts and completions: Resources, ResourceTemplates, ReadResource
// (with URITemplate to expand a template), Subscribe and Unsubscribe (updates come as
// "resource_updated" events), Prompts, GetPrompt, Complete. A read or a prompt takes a ctx
// (its end cancels the request at the server) and WithTimeout; failures are ErrNotFound,
// ErrServer, ErrTimeout, ErrInvalidArgument.
package toolnexus

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Status is a tn_status code.
type Status int32

// The status codes of c-api.md (append-only).
const (
	StatusOK              Status = 0
	StatusInvalidArgument Status = 1
	StatusInvalidJSON     Status = 2
	StatusConfig          Status = 3
	StatusNotFound        Status = 4
	StatusClosed          Status = 5
	StatusReentrant       Status = 6
	StatusPanic           Status = 7
	StatusInternal        Status = 8
	// The server failed a resource, prompt or completion request (an error answer other than
	// not-found, an invalid result or one over maxResultBytes, a connection that ended).
	StatusServer Status = 9
	// No answer within the request's timeout.
	StatusTimeout Status = 10
	// The request was cancelled (its ctx ended, or tn_call_cancel).
	StatusCancelled Status = 11
)

// Error is a failed tn_ call: Message is the library's tn_last_error_message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) and friends compare the status only.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// Sentinels for errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrInvalidJSON     = &Error{Status: StatusInvalidJSON}
	ErrConfig          = &Error{Status: StatusConfig}
	ErrNotFound        = &Error{Status: StatusNotFound}
	ErrClosed          = &Error{Status: StatusClosed}
	ErrReentrant       = &Error{Status: StatusReentrant}
	ErrPanic           = &Error{Status: StatusPanic}
	ErrInternal        = &Error{Status: StatusInternal}
	ErrServer          = &Error{Status: StatusServer}
	ErrTimeout         = &Error{Status: StatusTimeout}
	ErrCancelled       = &Error{Status: StatusCancelled}
)

const (
	resolved  = 0          // TN_RESOLVED
	deferred  = 1          // TN_DEFERRED
	suspended = 0x53555350 // TN_SUSPEND ('SUSP')
	failed    = -1         // anything else: the server sees cancel
)

// Version is the library's version, e.g. "0.1.0".
func Version() string { return C.GoString(C.tn_version()) }

// lastError builds the *Error for status; it must run on the thread that made the failing
// call, before any other tn_ call there (callers hold runtime.LockOSThread).
func lastError(st C.tn_status) error {
	msg := ""
	if m := C.tn_last_error_message(); m != nil {
		msg = C.GoString(m)
	}
	if msg == "" {
		msg = C.GoString(C.tn_status_str(st))
	}
	return &Error{Status: Status(st), Message: msg}
}

// callOut runs f (a tn_ function with a `char **out` last parameter) locked to one OS thread,
// so that the last error read after a failure is this call's, and returns the copied output
// (ok=false when *out stayed NULL), freeing the library's string.
func callOut(f func(out **C.char) C.tn_status) (s string, ok bool, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out *C.char
	st := f(&out)
	if st != 0 {
		err = lastError(st)
		C.tn_string_free(out)
		return "", false, err
	}
	if out == nil {
		return "", false, nil
	}
	s = C.GoString(out)
	C.tn_string_free(out)
	return s, true, nil
}

// cstr is a C copy of s (free with C.free); a NUL inside s is refused, C would cut s there.
func cstr(s, what string) (*C.char, error) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return nil, &Error{Status: StatusInvalidArgument, Message: what + " contains a NUL byte"}
		}
	}
	return C.CString(s), nil
}

// jsonText: string, []byte and json.RawMessage are JSON text as is; anything else is marshalled.
func jsonText(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case []byte:
		return string(t), nil
	case json.RawMessage:
		return string(t), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// ---------------------------------------------------------------- requests and answers

// Request is a §10 Request (contract §4). JSON is the exact text the library produced.
type Request struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"` // "input" or "authorization"
	Prompt    string          `json:"prompt"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"` // {"schema": …} for input requests
	ExpiresAt json.RawMessage `json:"expiresAt,omitempty"`
	JSON      string          `json:"-"`
}

// Answer is a §10 Answer. Build it with Accept, Decline, Cancel, Defer or Suspend.
type Answer struct {
	ID     string // optional; when set it must be the Request's
	OK     bool
	Data   any    // accepted content (marshalled to a JSON object); nil for none
	Reason string // "declined", "cancelled", … when OK is false
	// Raw, when not empty, is sent verbatim as the Answer JSON instead of the fields above.
	Raw string
	// Later, when set, defers the answer: the first Answer received on it is sent (from
	// another goroutine, while the reader goes on); a closed channel is cancel.
	Later <-chan Answer

	suspend bool // Suspend(): the resolver's outcome is TN_SUSPEND, no answer
}

// Accept answers with data (nil: no content; the server sees {} or its schema defaults).
func Accept(data any) Answer { return Answer{OK: true, Data: data} }

// Decline makes the server see {"action":"decline"}.
func Decline() Answer { return Answer{Reason: "declined"} }

// Cancel makes the server see {"action":"cancel"}.
func Cancel() Answer { return Answer{Reason: "cancelled"} }

// Defer answers later with the first Answer sent on ch.
func Defer(ch <-chan Answer) Answer { return Answer{Later: ch} }

// Suspend suspends the question durably (contract §6). It counts for an MRTR or -32042
// question (a server of the 2026-07-28 era); for a legacy elicitation or an OAuth login it is
// cancel. The call then returns at once, not an error, with a Result whose Pending holds the
// Requests and the resume token; Client.Resume continues it, from any goroutine or another
// process connected with the same config. Only as the resolver's return: an Answer sent on a
// Defer channel that is Suspend is cancel.
func Suspend() Answer { return Answer{suspend: true} }

func (a Answer) text() (string, error) {
	if a.Raw != "" {
		return a.Raw, nil
	}
	b, err := json.Marshal(struct {
		ID     string `json:"id,omitempty"`
		OK     bool   `json:"ok"`
		Data   any    `json:"data,omitempty"`
		Reason string `json:"reason,omitempty"`
	}{a.ID, a.OK, a.Data, a.Reason})
	return string(b), err
}

var cancelText = `{"ok":false,"reason":"cancelled"}`

// bridge is what the cgo.Handle given to the library as user_data refers to.
type bridge struct {
	fn         func(Request) Answer
	deferrable bool
	done       chan struct{} // closed when the client is closed: deferred waiters give up

	mu     sync.Mutex
	errors []string
}

func (b *bridge) note(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) >= 100 {
		b.errors = b.errors[1:]
	}
	b.errors = append(b.errors, fmt.Sprintf(format, args...))
}

// answer sends a to the responder; false when the library refused it.
func (b *bridge) answer(responder C.uintptr_t, a Answer) bool {
	text, err := a.text()
	if err != nil {
		b.note("cannot encode the answer: %v", err)
		return false
	}
	ctext, err := cstr(text, "answer")
	if err != nil {
		b.note("%v", err)
		return false
	}
	defer C.free(unsafe.Pointer(ctext))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if st := C.tn_go_answer(responder, ctext); st != 0 {
		if Status(st) != StatusClosed {
			b.note("the library refused the answer %s: %v", text, lastError(st))
		}
		return false
	}
	return true
}

func (b *bridge) answerCancel(responder C.uintptr_t) {
	b.answer(responder, Answer{Raw: cancelText})
}

// waitAndAnswer delivers a deferred answer (on its own goroutine).
func (b *bridge) waitAndAnswer(responder C.uintptr_t, ch <-chan Answer) {
	defer func() {
		if r := recover(); r != nil {
			b.note("deferred answer panicked: %v", r)
			b.answerCancel(responder)
		}
	}()
	select {
	case a, ok := <-ch:
		if ok && a.suspend {
			b.note("a deferred answer cannot be Suspend (only the resolver's return can): cancel")
		}
		if !ok || a.Later != nil || a.suspend || !b.answer(responder, a) {
			b.answerCancel(responder)
		}
	case <-b.done: // the client closed: tn_disconnect already answered cancel
	}
}

//export tnGoResolve
func tnGoResolve(userData C.uintptr_t, requestJSON *C.char, responder C.uintptr_t) (rc C.int32_t) {
	var b *bridge
	defer func() {
		if r := recover(); r != nil {
			if b != nil {
				b.note("resolver panicked: %v", r)
			}
			rc = failed
		}
	}()
	b = cgo.Handle(userData).Value().(*bridge)
	text := C.GoString(requestJSON)
	var req Request
	if err := json.Unmarshal([]byte(text), &req); err != nil {
		b.note("cannot decode the request: %v", err)
		return failed
	}
	req.JSON = text
	a := b.fn(req)
	if a.suspend {
		return suspended
	}
	if a.Later != nil {
		if b.deferrable {
			go b.waitAndAnswer(responder, a.Later)
			return deferred
		}
		// The pure function's responder ends when we return: only a ready answer counts.
		select {
		case ready, ok := <-a.Later:
			if !ok || ready.Later != nil {
				return failed
			}
			if ready.suspend {
				return suspended // the library makes it cancel here
			}
			a = ready
		default:
			return failed
		}
	}
	if !b.answer(responder, a) {
		return failed
	}
	return resolved
}

// ---------------------------------------------------------------- pure functions (§4)

func pure(input, what string, f func(in *C.char, out **C.char) C.tn_status) (string, error) {
	cin, err := cstr(input, what)
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cin))
	s, _, err := callOut(func(out **C.char) C.tn_status { return f(cin, out) })
	return s, err
}

// ElicitationToRequest maps MCP elicitation/create params (JSON) to a §10 Request (JSON).
func ElicitationToRequest(paramsJSON string) (string, error) {
	return pure(paramsJSON, "params", func(in *C.char, out **C.char) C.tn_status {
		return C.tn_elicitation_to_request(in, out)
	})
}

// AnswerToResult maps a §10 Answer (JSON) to an MCP ElicitResult (JSON).
func AnswerToResult(answerJSON string) (string, error) {
	return pure(answerJSON, "answer", func(in *C.char, out **C.char) C.tn_status {
		return C.tn_answer_to_result(in, out)
	})
}

// SanitizeName maps a name, as a JSON string literal, to its §0.1 sanitized form (JSON).
func SanitizeName(nameJSON string) (string, error) {
	return pure(nameJSON, "name", func(in *C.char, out **C.char) C.tn_status {
		return C.tn_sanitize_name(in, out)
	})
}

// ServerRequestResponse maps one inbound JSON-RPC message to the reply to write back;
// ok is false when the message is not a server request. resolver may be nil. It runs
// synchronously: a deferred Answer counts only if it is already waiting on its channel.
func ServerRequestResponse(messageJSON string, resolver func(Request) Answer) (reply string, ok bool, err error) {
	cmsg, err := cstr(messageJSON, "message")
	if err != nil {
		return "", false, err
	}
	defer C.free(unsafe.Pointer(cmsg))
	with, ud := C.int(0), C.uintptr_t(0)
	if resolver != nil {
		h := cgo.NewHandle(&bridge{fn: resolver})
		defer h.Delete()
		with, ud = 1, C.uintptr_t(h)
	}
	return callOut(func(out **C.char) C.tn_status {
		return C.tn_go_server_request_response(with, ud, cmsg, out)
	})
}

// ---------------------------------------------------------------- the client

// Client is a connected tn_client; safe for concurrent use.
type Client struct {
	handle  C.uintptr_t // a registry token, never dereferenced
	bridge  *bridge
	bh      cgo.Handle
	closing atomic.Bool // a Close is running or done
	closed  atomic.Bool // tn_disconnect returned
	lazy    sync.Mutex  // guards events
	events  *eventHub
}

// Tool is one listed tool; Raw is its whole JSON object (title, annotations, … included).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Source      string          `json:"source"`
	Server      string          `json:"server"`
	RemoteName  string          `json:"remoteName"`
	Raw         json.RawMessage `json:"-"`
}

// Result is a §0.1 ToolResult; JSON is the library's exact text.
type Result struct {
	Output   string          `json:"output"`
	IsError  bool            `json:"isError"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	JSON     string          `json:"-"`
}

// Pending is a suspended call's metadata.pending (contract §6): the questions asked, and the
// token that Client.Resume takes with an Answer per Request ID.
type Pending struct {
	Requests []Request `json:"-"`
	Resume   string    `json:"resume"`
	// Task is set when the call became a task whose wait ended while it works:
	// Client.Resume(p.Resume, "{}") collects it, nothing run again.
	Task *TaskStatus `json:"task,omitempty"`
}

// TaskStatus is a task's id and status.
type TaskStatus struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
}

// Pending is the call's pending when a resolver suspended it (Suspend), else nil.
func (r *Result) Pending() *Pending {
	if r == nil || len(r.Metadata) == 0 {
		return nil
	}
	var m struct {
		Pending *struct {
			Requests []json.RawMessage `json:"requests"`
			Resume   string            `json:"resume"`
			Task     *TaskStatus       `json:"task"`
		} `json:"pending"`
	}
	if json.Unmarshal(r.Metadata, &m) != nil || m.Pending == nil {
		return nil
	}
	p := &Pending{Resume: m.Pending.Resume, Task: m.Pending.Task}
	for _, raw := range m.Pending.Requests {
		q := Request{JSON: string(raw)}
		if json.Unmarshal(raw, &q) != nil {
			return nil
		}
		p.Requests = append(p.Requests, q)
	}
	return p
}

// ServerStatus is one server's entry in Statuses; Raw holds every key.
type ServerStatus struct {
	Status string          `json:"status"` // "connected", "disabled" or "failed"
	Error  string          `json:"error,omitempty"`
	Raw    json.RawMessage `json:"-"`
}

// Connect starts every server of an MCP config (JSON text). resolver may be nil: then no
// elicitation capability is advertised. Per-server failures are in Statuses, not errors.
func Connect(config string, resolver func(Request) Answer) (*Client, error) {
	ccfg, err := cstr(config, "config")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(ccfg))
	c := &Client{}
	with, ud := C.int(0), C.uintptr_t(0)
	if resolver != nil {
		c.bridge = &bridge{fn: resolver, deferrable: true, done: make(chan struct{})}
		c.bh = cgo.NewHandle(c.bridge)
		with, ud = 1, C.uintptr_t(c.bh)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var h C.uintptr_t
	if st := C.tn_go_connect(ccfg, with, ud, &h); st != 0 {
		err := lastError(st)
		if c.bridge != nil {
			c.bh.Delete()
		}
		return nil, err
	}
	c.handle = h
	return c, nil
}

// ConnectContext is Connect bounded by ctx: when ctx ends before connecting finishes it returns
// an error wrapping ctx.Err(), and the client still being connected is closed (in the
// background) as soon as the library hands it over.
func ConnectContext(ctx context.Context, config string, resolver func(Request) Answer) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolnexus: connect: %w", err)
	}
	if ctx.Done() == nil {
		return Connect(config, resolver)
	}
	type outcome struct {
		c   *Client
		err error
	}
	ch := make(chan outcome, 1)
	var abandoned atomic.Bool
	go func() {
		c, err := Connect(config, resolver) // tn_connect blocks: it gets its own goroutine
		if err == nil && abandoned.Load() {
			c.Close()
			return
		}
		ch <- outcome{c, err}
	}()
	select {
	case o := <-ch:
		return o.c, o.err
	case <-ctx.Done():
		abandoned.Store(true)
		// Connect may have finished just now: then the client is ours to close.
		select {
		case o := <-ch:
			if o.c != nil {
				o.c.Close()
			}
		default:
		}
		return nil, fmt.Errorf("toolnexus: connect: %w", ctx.Err())
	}
}

func (c *Client) check() error {
	if c.closed.Load() {
		return &Error{Status: StatusClosed, Message: "the client is closed"}
	}
	return nil
}

// ToolsJSON is the library's tool list as JSON text (sorted by name).
func (c *Client) ToolsJSON() (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_list_tools(c.handle, out) })
	return s, err
}

// Tools lists the tools of every connected server, sorted by name.
func (c *Client) Tools() ([]Tool, error) {
	s, err := c.ToolsJSON()
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(s), &raws); err != nil {
		return nil, err
	}
	tools := make([]Tool, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &tools[i]); err != nil {
			return nil, err
		}
		tools[i].Raw = r
	}
	return tools, nil
}

// StatusesJSON is {"servers":{"<name>":{"status":…}}} as the library's JSON text.
func (c *Client) StatusesJSON() (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_server_statuses(c.handle, out) })
	return s, err
}

// Statuses is every configured server's status, by name.
func (c *Client) Statuses() (map[string]ServerStatus, error) {
	s, err := c.StatusesJSON()
	if err != nil {
		return nil, err
	}
	var top struct {
		Servers map[string]json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal([]byte(s), &top); err != nil {
		return nil, err
	}
	m := make(map[string]ServerStatus, len(top.Servers))
	for name, r := range top.Servers {
		var st ServerStatus
		if err := json.Unmarshal(r, &st); err != nil {
			return nil, err
		}
		st.Raw = r
		m[name] = st
	}
	return m, nil
}

// Progress is one notifications/progress report for a call; JSON is the library's text.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"` // 0 when the server did not say
	Message  string  `json:"message,omitempty"`
	// A task's status change: its status, and the token that collects it later.
	Task   *TaskStatus `json:"task,omitempty"`
	Resume string      `json:"resume,omitempty"`
	JSON   string      `json:"-"`
}

// CallOption is an option of Call: WithTimeout, WithProgress.
type CallOption func(*callOptions)

type callOptions struct {
	timeout    time.Duration
	hasTimeout bool
	progress   func(Progress)
}

// optionsJSON is the options_json of a call or request (free with C.free), or nil.
func (o *callOptions) optionsJSON() *C.char {
	if !o.hasTimeout {
		return nil
	}
	ms := o.timeout.Milliseconds()
	if o.timeout > 0 && time.Duration(ms)*time.Millisecond < o.timeout {
		ms++ // round up: a 1 µs timeout is 1 ms, not 0
	}
	return C.CString(fmt.Sprintf(`{"timeoutMs":%d}`, ms))
}

// blockingEx runs f (a tn_*_ex function with its other arguments bound: tn_call_tool_ex,
// tn_read_resource_ex, tn_get_prompt_ex) on this goroutine, locked to its OS thread. When ctx
// ends first, the request is cancelled by its id (the library writes it before the request goes
// out) and the error wraps ctx.Err(); what names the request in that error.
func (c *Client) blockingEx(ctx context.Context, what string, o *callOptions,
	f func(copts *C.char, id *C.uint64_t, out **C.char) C.tn_status) (string, error) {
	copts := o.optionsJSON()
	defer C.free(unsafe.Pointer(copts))
	// In C memory: the library writes it while the watcher reads it.
	id := (*C.uint64_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.uint64_t(0)))))
	defer C.free(unsafe.Pointer(id))
	finished := make(chan struct{})
	watched := make(chan struct{})
	var cancelled atomic.Bool
	if ctx.Done() == nil {
		close(watched)
	} else {
		go func() {
			defer close(watched)
			select {
			case <-finished:
				return
			case <-ctx.Done():
			}
			cancelled.Store(true)
			for {
				if v := atomic.LoadUint64((*uint64)(unsafe.Pointer(id))); v != 0 {
					C.tn_go_call_cancel(c.handle, C.uint64_t(v)) // TN_ERR_NOT_FOUND when it ended: fine
					return
				}
				select {
				case <-finished:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
	}
	s, _, err := callOut(func(out **C.char) C.tn_status { return f(copts, id, out) })
	close(finished)
	<-watched // before id is freed
	if cancelled.Load() {
		return "", fmt.Errorf("toolnexus: %s: %w", what, ctx.Err())
	}
	return s, err
}

// WithTimeout sets this call's timeout instead of the server's (rounded up to a whole
// millisecond). It is an idle timeout: each progress report restarts it, and the server's
// maxTotalTimeout still bounds the call. A timeout is a Result with IsError, not an error.
func WithTimeout(d time.Duration) CallOption {
	return func(o *callOptions) { o.timeout, o.hasTimeout = d, true }
}

// WithProgress receives each progress report of the call, in order, before Call returns, on
// the goroutine that called Call. If fn panics, the call is cancelled at the server and the
// panic goes on up through Call.
func WithProgress(fn func(Progress)) CallOption {
	return func(o *callOptions) { o.progress = fn }
}

// Call calls a tool by its listed name. args is nil ({}), JSON text (string, []byte,
// json.RawMessage) or a value to marshal. Tool errors, timeouts and dead servers are Results
// with IsError; an unknown name is ErrNotFound. When ctx ends first, the call is cancelled at
// the server and Call returns at once with an error wrapping ctx.Err().
func (c *Client) Call(ctx context.Context, name string, args any, opts ...CallOption) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolnexus: call %s: %w", name, err)
	}
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if ctx.Done() == nil && !o.hasTimeout && o.progress == nil {
		// Nothing to watch: the plain blocking call (which also refuses, with ErrReentrant, a
		// call from an inline resolver to its own server instead of deadlocking).
		return c.call(name, args)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	cname, err := cstr(name, "name")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cname))
	cargs, err := optJSON(args, "args")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cargs))
	if ctx.Done() == nil && o.progress == nil {
		// A timeout only: tn_call_tool_ex on this goroutine, at the plain call's speed.
		s, err := c.blockingEx(ctx, "call "+name, &o, func(copts *C.char, id *C.uint64_t, out **C.char) C.tn_status {
			return C.tn_go_call_tool_ex(c.handle, cname, cargs, copts, id, out)
		})
		if err != nil {
			return nil, err
		}
		return parseResult(s)
	}
	return c.callAsync(ctx, "call "+name, &o, func(copts *C.char, progress C.int, ud C.uintptr_t, id *C.uint64_t) C.tn_status {
		return C.tn_go_call_tool_async(c.handle, cname, cargs, copts, progress, ud, id)
	})
}

// Resume continues a call that a resolver suspended (Suspend; contract §6): token is its
// Result's Pending().Resume, answers the Answer for each Request ID: a map[string]Answer (built
// with Accept, Decline, Cancel), JSON text {"<Request id>": <§10 Answer>, …}, another value to
// marshal, or nil (each Request is then cancel, as is one left out). Any client connected with
// the same config may resume it, in this process or another. The Result may carry another
// Pending. A malformed token, or a key that is no Request ID of it, is ErrInvalidArgument; its
// server unknown to this client, failed or disabled is ErrNotFound. ctx and opts as for Call.
func (c *Client) Resume(ctx context.Context, token string, answers any, opts ...CallOption) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("toolnexus: resume: %w", err)
	}
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	ctoken, err := cstr(token, "token")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(ctoken))
	if m, ok := answers.(map[string]Answer); ok {
		text, err := answersText(m)
		if err != nil {
			return nil, err
		}
		answers = text
	}
	canswers, err := optJSON(answers, "answers")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(canswers))
	if ctx.Done() == nil && !o.hasTimeout && o.progress == nil {
		s, _, err := callOut(func(out **C.char) C.tn_status {
			return C.tn_go_call_tool_resume(c.handle, ctoken, canswers, out)
		})
		if err != nil {
			return nil, err
		}
		return parseResult(s)
	}
	return c.callAsync(ctx, "resume", &o, func(copts *C.char, progress C.int, ud C.uintptr_t, id *C.uint64_t) C.tn_status {
		return C.tn_go_call_tool_resume_async(c.handle, ctoken, canswers, copts, progress, ud, id)
	})
}

// answersText encodes {"<Request id>": Answer} as JSON text; a deferred or Suspend Answer has
// no JSON, so it is refused.
func answersText(m map[string]Answer) (string, error) {
	raw := make(map[string]json.RawMessage, len(m))
	for id, a := range m {
		if a.Later != nil || a.suspend {
			return "", &Error{Status: StatusInvalidArgument, Message: "the answer for " + id + " is Defer or Suspend, not an Answer"}
		}
		text, err := a.text()
		if err != nil {
			return "", err
		}
		raw[id] = json.RawMessage(text)
	}
	b, err := json.Marshal(raw)
	return string(b), err
}

// optJSON is a C copy of v as JSON text (free with C.free), or nil for a nil v.
func optJSON(v any, what string) (*C.char, error) {
	if v == nil {
		return nil, nil
	}
	text, err := jsonText(v)
	if err != nil {
		return nil, err
	}
	return cstr(text, what)
}

func parseResult(s string) (*Result, error) {
	r := &Result{JSON: s}
	if err := json.Unmarshal([]byte(s), r); err != nil {
		return nil, err
	}
	return r, nil
}

// asyncCall is what the cgo.Handle given to tn_call_tool_async refers to. The library's
// callback thread fills it; the goroutine inside Call reads it.
type asyncCall struct {
	done   chan struct{} // closed once done fired
	result string
	err    error

	mu       sync.Mutex
	queued   []string      // progress JSON not yet handed to the callback
	progress chan struct{} // a wake-up (capacity 1) when queued grows
}

func (a *asyncCall) takeProgress() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.queued
	a.queued = nil
	return q
}

//export tnGoCallDone
func tnGoCallDone(userData C.uintptr_t, status C.int32_t, resultJSON *C.char) {
	defer func() { _ = recover() }() // nothing may unwind into C
	h := cgo.Handle(userData)
	a := h.Value().(*asyncCall)
	h.Delete() // done fires exactly once: the handle is no longer needed
	if status == 0 && resultJSON != nil {
		a.result = C.GoString(resultJSON)
	} else {
		// The library set the last error on this thread before calling done.
		a.err = lastError(C.tn_status(status))
	}
	close(a.done)
}

//export tnGoCallProgress
func tnGoCallProgress(userData C.uintptr_t, progressJSON *C.char) {
	defer func() { _ = recover() }()
	a := cgo.Handle(userData).Value().(*asyncCall)
	text := C.GoString(progressJSON)
	a.mu.Lock()
	a.queued = append(a.queued, text)
	a.mu.Unlock()
	select {
	case a.progress <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// callAsync runs start (tn_call_tool_async or tn_call_tool_resume_async with its arguments
// bound) and waits for the call, delivering progress here and cancelling it when ctx ends.
// what names the call in a ctx error ("call NAME", "resume").
func (c *Client) callAsync(ctx context.Context, what string, o *callOptions,
	start func(copts *C.char, withProgress C.int, ud C.uintptr_t, id *C.uint64_t) C.tn_status) (*Result, error) {
	copts := o.optionsJSON()
	defer C.free(unsafe.Pointer(copts))
	a := &asyncCall{done: make(chan struct{}), progress: make(chan struct{}, 1)}
	h := cgo.NewHandle(a)
	withProgress := C.int(0)
	if o.progress != nil {
		withProgress = 1
	}
	var id C.uint64_t
	runtime.LockOSThread()
	st := start(copts, withProgress, C.uintptr_t(h), &id)
	if st != 0 {
		err := lastError(st)
		runtime.UnlockOSThread()
		h.Delete() // done never fires for a refused call
		return nil, err
	}
	runtime.UnlockOSThread()
	cancelled := false
	cancel := func() {
		if !cancelled {
			cancelled = true
			C.tn_go_call_cancel(c.handle, id) // TN_ERR_NOT_FOUND when it ended already: fine
		}
	}
	defer func() {
		if r := recover(); r != nil { // the progress callback panicked
			cancel()
			panic(r)
		}
	}()
	deliver := func() {
		for _, text := range a.takeProgress() {
			p := Progress{JSON: text}
			if json.Unmarshal([]byte(text), &p) == nil {
				o.progress(p)
			}
		}
	}
	for {
		select {
		case <-a.progress:
			deliver()
		case <-a.done:
			if o.progress != nil {
				deliver() // the reports that came before done
			}
			if a.err != nil {
				return nil, a.err
			}
			return parseResult(a.result)
		case <-ctx.Done():
			cancel()
			return nil, fmt.Errorf("toolnexus: %s: %w", what, ctx.Err())
		}
	}
}

func (c *Client) call(name string, args any) (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	cname, err := cstr(name, "name")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cname))
	var cargs *C.char
	if args != nil {
		text, err := jsonText(args)
		if err != nil {
			return nil, err
		}
		if cargs, err = cstr(text, "args"); err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(cargs))
	}
	s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_call_tool(c.handle, cname, cargs, out) })
	if err != nil {
		return nil, err
	}
	r := &Result{JSON: s}
	if err := json.Unmarshal([]byte(s), r); err != nil {
		return nil, err
	}
	return r, nil
}

// ResolverErrors says why recent elicitations became cancel on the Go side (panics, answers
// the library refused).
func (c *Client) ResolverErrors() []string {
	if c.bridge == nil {
		return nil
	}
	c.bridge.mu.Lock()
	defer c.bridge.mu.Unlock()
	return append([]string(nil), c.bridge.errors...)
}

// Close disconnects every server (bounded) and answers open deferred requests with cancel.
// Calls in flight return promptly with ErrClosed or an IsError result. Idempotent. Called
// from inside this client's resolver it does nothing and returns ErrReentrant.
func (c *Client) Close() error {
	if !c.closing.CompareAndSwap(false, true) {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.tn_go_disconnect(c.handle)
	if m := C.tn_last_error_message(); m != nil { // tn_disconnect is void: it left an error
		err := &Error{Status: StatusReentrant, Message: C.GoString(m)}
		c.closing.Store(false)
		return err
	}
	c.closed.Store(true)
	if c.bridge != nil {
		close(c.bridge.done)
		c.bh.Delete() // the library calls the resolver no more once tn_disconnect returned
	}
	c.endEvents() // nor the event callback
	return nil
}

// ---------------------------------------------------------------- events (long-lived hosts)

// Event is one event of a client: Type is "status" (Status "connected", "restarting" with
// Attempt, DelayMs and Reason, or "failed" with Error), "tools" (Added, Removed, Changed: host
// tool names), "log" (Level, Logger, Data), "resource_updated" (URI, of a Subscribe),
// "resources" (Added, Removed, Changed: resource uris; Templates: the templates' changes) or
// "prompts" (Added, Removed, Changed: prompt host names); the lists are listed again before a
// "resources" or "prompts" event, so Resources and Prompts hold the new ones. JSON is the
// library's exact text.
type Event struct {
	Type     string          `json:"type"`
	Server   string          `json:"server"`
	Status   string          `json:"status,omitempty"`
	Attempt  int             `json:"attempt,omitempty"`
	DelayMs  int64           `json:"delayMs,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Error    string          `json:"error,omitempty"`
	LastExit string          `json:"lastExit,omitempty"`
	Restarts int             `json:"restarts,omitempty"`
	Added    []string        `json:"added,omitempty"`
	Removed  []string        `json:"removed,omitempty"`
	Changed  []string        `json:"changed,omitempty"`
	Level    string          `json:"level,omitempty"`
	Logger   string          `json:"logger,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	// "resource_updated": the uri a subscription (Subscribe) was told of.
	URI string `json:"uri,omitempty"`
	// "resources": the resource templates' changes (Added, Removed, Changed being the
	// resources' uris).
	Templates *ListChange `json:"templates,omitempty"`
	JSON      string      `json:"-"`
}

// ListChange is what changed in a list: the keys (uris, uriTemplates) added, removed, changed.
type ListChange struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// eventHub is what the library's one event callback of a client feeds: the function OnEvent
// registered and the channels Events made.
type eventHub struct {
	mu      sync.Mutex
	fn      func(Event)
	chans   []chan Event
	handle  cgo.Handle
	dropped atomic.Int64
	ended   bool
}

//export tnGoEvent
func tnGoEvent(userData C.uintptr_t, eventJSON *C.char) {
	h, ok := cgo.Handle(userData).Value().(*eventHub)
	if !ok {
		return
	}
	text := C.GoString(eventJSON)
	e := Event{JSON: text}
	if json.Unmarshal([]byte(text), &e) != nil {
		return
	}
	h.mu.Lock()
	fn, chans := h.fn, append([]chan Event(nil), h.chans...)
	h.mu.Unlock()
	if fn != nil {
		func() {
			defer func() { _ = recover() }() // a panic in fn ends this event only
			fn(e)
		}()
	}
	for _, ch := range chans {
		select {
		case ch <- e:
		default:
			h.dropped.Add(1) // a channel that is not read never stalls the events
		}
	}
}

// hub registers the client's event callback with the library, once.
func (c *Client) hub() (*eventHub, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	c.lazy.Lock()
	defer c.lazy.Unlock()
	if c.events != nil {
		return c.events, nil
	}
	h := &eventHub{}
	h.handle = cgo.NewHandle(h)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if st := C.tn_go_set_event_callback(c.handle, 1, C.uintptr_t(h.handle)); st != 0 {
		err := lastError(st)
		h.handle.Delete()
		return nil, err
	}
	c.events = h
	return h, nil
}

// OnEvent registers fn for the client's events (nil: none), replacing the one before. fn runs
// on the library's event thread, one event at a time, in order; it may call the client but not
// Close it (ErrReentrant). A slow fn delays the events after it, never the servers.
func (c *Client) OnEvent(fn func(Event)) error {
	h, err := c.hub()
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.fn = fn
	h.mu.Unlock()
	return nil
}

// Events returns a channel of the client's events from now on, with room for buffer of them;
// an event that finds it full is dropped and counted (DroppedEvents). It is closed when the
// client closes.
func (c *Client) Events(buffer int) (<-chan Event, error) {
	h, err := c.hub()
	if err != nil {
		return nil, err
	}
	ch := make(chan Event, buffer)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		close(ch)
	} else {
		h.chans = append(h.chans, ch)
	}
	return ch, nil
}

// DroppedEvents counts the events that found an Events channel full.
func (c *Client) DroppedEvents() int64 {
	if h := c.eventHub(); h != nil {
		return h.dropped.Load()
	}
	return 0
}

func (c *Client) eventHub() *eventHub {
	c.lazy.Lock()
	defer c.lazy.Unlock()
	return c.events
}

// endEvents closes the Events channels once the library calls the callback no more (after
// tn_disconnect returned).
func (c *Client) endEvents() {
	h := c.eventHub()
	if h == nil {
		return
	}
	h.mu.Lock()
	h.ended = true
	for _, ch := range h.chans {
		close(ch)
	}
	h.chans = nil
	h.mu.Unlock()
	h.handle.Delete()
}
