package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/api"
)

// APIError is an API operation's refusal, which a tool returns as its
// result with isError: the API's error object (code, message, request id,
// retry_after and details), never a credential.
type APIError struct {
	Status int
	Detail client.ErrorDetail
}

func (e *APIError) Error() string {
	b, err := json.Marshal(struct {
		Error client.ErrorDetail `json:"error"`
	}{e.Detail})
	if err != nil {
		return e.Detail.Code + ": " + e.Detail.Message
	}
	return string(b)
}

// call is one API operation made for the tool call req: the API's handler
// serves method path?query with body (JSON, nil for none) as if the MCP
// client had sent it with its bearer key, from its address. The answer's
// body is returned for a 2xx; otherwise an *APIError.
func (h *Handler) call(ctx context.Context, req *mcp.CallToolRequest, method, path string, query url.Values, body any, idempotencyKey string) (json.RawMessage, error) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	// The tool's context may be that of the MCP request, routed by the
	// same router: its route must not be taken for this one's.
	ctx = context.WithValue(ctx, chi.RouteCtxKey, nil)
	if strings.HasPrefix(path, "/api/v1/ai/") {
		// The key-and-secret interface: the bearer key the endpoint
		// authenticated stands for both.
		ctx = api.InProcess(ctx)
	}
	var r *http.Request
	var err error
	if rd != nil {
		r, err = http.NewRequestWithContext(ctx, method, target, rd)
	} else {
		r, err = http.NewRequestWithContext(ctx, method, target, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: %s %s: %w", method, path, err)
	}
	var in http.Header
	if req != nil && req.Extra != nil {
		in = req.Extra.Header
	}
	r.Header.Set("Authorization", in.Get("Authorization"))
	r.Header.Set("Accept", "application/json")
	if rd != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		r.Header.Set("Idempotency-Key", idempotencyKey)
	}
	r.RemoteAddr = "0.0.0.0:0"
	if a, err := netip.ParseAddr(in.Get(peerHeader)); err == nil {
		r.RemoteAddr = netip.AddrPortFrom(a, 0).String()
	}
	r.Host, r.TLS = "aivis.internal", nil
	rec := &recorder{header: http.Header{}}
	h.api.Handler().ServeHTTP(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status >= 200 && rec.status < 300 {
		return rec.body.Bytes(), nil
	}
	var env client.ErrorEnvelope
	if err := json.Unmarshal(rec.body.Bytes(), &env); err != nil || env.Error.Code == "" {
		return nil, fmt.Errorf("mcp: %s %s: status %d without the API's error", method, path, rec.status)
	}
	return nil, &APIError{Status: rec.status, Detail: env.Error}
}

// get is call with GET, decoding the answer into out.
func (h *Handler) get(ctx context.Context, req *mcp.CallToolRequest, path string, query url.Values, out any) error {
	b, err := h.call(ctx, req, http.MethodGet, path, query, nil, "")
	if err != nil {
		return err
	}
	return decode(b, out)
}

func decode(b []byte, out any) error {
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("mcp: the API's answer: %w", err)
	}
	return nil
}

// data is the data of the key-and-secret interface's envelope.
func data(b []byte) (json.RawMessage, error) {
	var env client.Envelope[json.RawMessage]
	if err := decode(b, &env); err != nil {
		return nil, err
	}
	if !env.Success || len(env.Data) == 0 {
		return nil, errors.New("mcp: the API's answer has no data")
	}
	return env.Data, nil
}

// recorder keeps an in-process answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
