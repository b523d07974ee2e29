package toolnexus

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unsafe"
)

// Resources (c-api.md "Resources"): every connected server's resources and resource
// templates, a read (a ctx that cancels it, WithTimeout), subscriptions whose updates come as
// "resource_updated" events, and the RFC 6570 template helper. An unknown server or uri is
// ErrNotFound; a result over maxResultBytes or another failure of the server ErrServer; no
// answer in time ErrTimeout.

// Resource is one listed resource; Raw is its whole JSON object (annotations, icons, _meta…).
type Resource struct {
	Server      string          `json:"server"`
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"` // nil when the server did not say
	Raw         json.RawMessage `json:"-"`
}

// ResourceTemplate is one listed resource template (RFC 6570: URITemplate expands one).
type ResourceTemplate struct {
	Server      string          `json:"server"`
	URITemplate string          `json:"uriTemplate"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MimeType    string          `json:"mimeType,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// ResourceContents is one of a read's contents: Text, or Blob (decoded from base64) when
// IsBlob. Raw is its whole JSON object (_meta…).
type ResourceContents struct {
	URI      string
	MimeType string
	Text     string
	Blob     []byte
	IsBlob   bool
	Raw      json.RawMessage
}

// Bytes is the content's bytes: the blob, or the text's UTF-8.
func (rc ResourceContents) Bytes() []byte {
	if rc.IsBlob {
		return rc.Blob
	}
	return []byte(rc.Text)
}

// UnmarshalJSON decodes a TextResourceContents or BlobResourceContents.
func (rc *ResourceContents) UnmarshalJSON(b []byte) error {
	var v struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*rc = ResourceContents{URI: v.URI, MimeType: v.MimeType, Raw: append(json.RawMessage(nil), b...)}
	switch {
	case v.Blob != nil:
		blob, err := base64.StdEncoding.DecodeString(*v.Blob)
		if err != nil {
			return fmt.Errorf("toolnexus: the blob of %s is not base64: %w", v.URI, err)
		}
		rc.Blob, rc.IsBlob = blob, true
	case v.Text != nil:
		rc.Text = *v.Text
	}
	return nil
}

// ReadResult is what ReadResource returns; JSON is the library's exact text.
type ReadResult struct {
	Contents []ResourceContents `json:"contents"`
	Meta     json.RawMessage    `json:"_meta,omitempty"`
	JSON     string             `json:"-"`
}

// ResourcesJSON is tn_list_resources' JSON text, sorted by server then uri.
func (c *Client) ResourcesJSON() (string, error) {
	return c.listJSON(func(out **C.char) C.tn_status { return C.tn_go_list_resources(c.handle, out) })
}

// Resources lists every connected server's resources, all pages, sorted by server then uri. A
// server whose listing failed keeps the list held before (its status's listErrors says why).
func (c *Client) Resources() ([]Resource, error) {
	s, err := c.ResourcesJSON()
	if err != nil {
		return nil, err
	}
	var out []Resource
	return out, decodeList(s, &out, func(i int, raw json.RawMessage) { out[i].Raw = raw })
}

// ResourceTemplatesJSON is tn_list_resource_templates' JSON text.
func (c *Client) ResourceTemplatesJSON() (string, error) {
	return c.listJSON(func(out **C.char) C.tn_status { return C.tn_go_list_resource_templates(c.handle, out) })
}

// ResourceTemplates lists every connected server's resource templates, sorted by server then
// uriTemplate.
func (c *Client) ResourceTemplates() ([]ResourceTemplate, error) {
	s, err := c.ResourceTemplatesJSON()
	if err != nil {
		return nil, err
	}
	var out []ResourceTemplate
	return out, decodeList(s, &out, func(i int, raw json.RawMessage) { out[i].Raw = raw })
}

// ReadResourceJSON reads uri from server and returns the library's JSON text,
// {"contents":[…],"_meta"?}. When ctx ends first the read is cancelled at the server and the
// error wraps ctx.Err(); WithTimeout replaces the server's timeout (WithProgress is ignored). A
// question the server asks on the way goes to the resolver.
func (c *Client) ReadResourceJSON(ctx context.Context, server, uri string, opts ...CallOption) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("toolnexus: read %s: %w", uri, err)
	}
	if err := c.check(); err != nil {
		return "", err
	}
	o := gather(opts)
	cs, err := cstr(server, "server")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cs))
	cu, err := cstr(uri, "uri")
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cu))
	if ctx.Done() == nil && !o.hasTimeout {
		s, _, err := callOut(func(out **C.char) C.tn_status { return C.tn_go_read_resource(c.handle, cs, cu, out) })
		return s, err
	}
	return c.blockingEx(ctx, "read "+uri, &o, func(copts *C.char, id *C.uint64_t, out **C.char) C.tn_status {
		return C.tn_go_read_resource_ex(c.handle, cs, cu, copts, id, out)
	})
}

// ReadResource is ReadResourceJSON decoded: each content's text, or its blob's bytes.
func (c *Client) ReadResource(ctx context.Context, server, uri string, opts ...CallOption) (*ReadResult, error) {
	s, err := c.ReadResourceJSON(ctx, server, uri, opts...)
	if err != nil {
		return nil, err
	}
	r := &ReadResult{JSON: s}
	if err := json.Unmarshal([]byte(s), r); err != nil {
		return nil, err
	}
	return r, nil
}

// Subscribe subscribes to uri on server (resources/subscribe; in MCP 2026-07-28 a new
// subscriptions/listen, acknowledged before this returns): its updates come as
// "resource_updated" events (OnEvent, Events). Kept across restarts. A server that offers no
// subscriptions is ErrNotFound.
func (c *Client) Subscribe(server, uri string) error {
	return c.serverURI(server, uri, func(s, u *C.char) C.tn_status { return C.tn_go_subscribe_resource(c.handle, s, u) })
}

// Unsubscribe ends the subscription to uri on server: no "resource_updated" event of it comes
// once this returns. A uri not subscribed to is ErrNotFound.
func (c *Client) Unsubscribe(server, uri string) error {
	return c.serverURI(server, uri, func(s, u *C.char) C.tn_status { return C.tn_go_unsubscribe_resource(c.handle, s, u) })
}

func (c *Client) serverURI(server, uri string, f func(s, u *C.char) C.tn_status) error {
	if err := c.check(); err != nil {
		return err
	}
	cs, err := cstr(server, "server")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cs))
	cu, err := cstr(uri, "uri")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cu))
	_, _, err = callOut(func(_ **C.char) C.tn_status { return f(cs, cu) })
	return err
}

// URITemplateResult is what URITemplate returns: the template's variables, and its expansion
// (HasURI) when values were given. JSON is the library's exact text.
type URITemplateResult struct {
	Variables []string `json:"variables"`
	URI       string   `json:"uri"`
	HasURI    bool     `json:"-"`
	JSON      string   `json:"-"`
}

// URITemplate gives an RFC 6570 URI template's variables and, when values is not nil, its
// expansion (levels 1-4; values are strings, numbers, booleans, slices or maps). For a resource
// template picker: fill the variables, then ReadResource(ctx, server, r.URI). A malformed
// template or value is ErrInvalidArgument.
func URITemplate(template string, values map[string]any) (*URITemplateResult, error) {
	req := map[string]any{"template": template}
	if values != nil {
		req["values"] = values
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	s, err := pure(string(b), "request", func(in *C.char, out **C.char) C.tn_status { return C.tn_uri_template(in, out) })
	if err != nil {
		return nil, err
	}
	var v struct {
		Variables []string `json:"variables"`
		URI       *string  `json:"uri"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	r := &URITemplateResult{Variables: v.Variables, JSON: s}
	if v.URI != nil {
		r.URI, r.HasURI = *v.URI, true
	}
	return r, nil
}

// listJSON runs a listing function after the closed check.
func (c *Client) listJSON(f func(out **C.char) C.tn_status) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	s, _, err := callOut(f)
	return s, err
}

// decodeList decodes a JSON array into *out and hands each element's raw text to raw.
func decodeList[T any](s string, out *[]T, raw func(int, json.RawMessage)) error {
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(s), &raws); err != nil {
		return err
	}
	*out = make([]T, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &(*out)[i]); err != nil {
			return err
		}
		raw(i, r)
	}
	return nil
}

func gather(opts []CallOption) callOptions {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
