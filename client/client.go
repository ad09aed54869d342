// Package client calls the aivis v1 API: the key-and-secret interface under
// /api/v1/ai and the bearer interface under /v1.
//
// On a 429 it behaves as the service's reference client: it waits
// error.retry_after seconds (the Retry-After header, else 60 s, when the
// field is absent) and tries again, giving up after three attempts.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Client calls the aivis API. It is safe for concurrent use.
type Client struct {
	baseURL     string
	apiURL      string
	key, secret string
	http        *http.Client
	userAgent   string
	maxAttempts int
	allowHTTP   bool
	sleep       func(context.Context, time.Duration) error
	onRateLimit func(RateLimit)
	roots       *x509.CertPool
	err         error
}

// Option configures a Client.
type Option func(*Client)

// WithKey sets the API key and secret. The secret may be empty when only
// the bearer interface is used.
func WithKey(key, secret string) Option { return func(c *Client) { c.key, c.secret = key, secret } }

// WithAPIURL sets the base URL of the bearer interface (default: the base URL).
func WithAPIURL(u string) Option { return func(c *Client) { c.apiURL = strings.TrimRight(u, "/") } }

// WithHTTPClient sets the HTTP client used for every call.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRootCAs trusts these certificate authorities, e.g. a server's self-signed certificate.
func WithRootCAs(pool *x509.CertPool) Option { return func(c *Client) { c.roots = pool } }

// WithCAFile trusts the PEM certificates in a file, such as aivis-data/tls/cert.pem.
func WithCAFile(path string) Option {
	return func(c *Client) {
		pem, err := os.ReadFile(path)
		if err != nil {
			c.err = fmt.Errorf("aivis: CA file: %w", err)
			return
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			c.err = fmt.Errorf("aivis: CA file %s holds no PEM certificate", path)
			return
		}
		c.roots = pool
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithMaxAttempts sets how many times a rate-limited call is tried (default 3).
func WithMaxAttempts(n int) Option { return func(c *Client) { c.maxAttempts = max(n, 1) } }

// WithSleep replaces the wait between rate-limited attempts (for tests).
func WithSleep(f func(context.Context, time.Duration) error) Option {
	return func(c *Client) { c.sleep = f }
}

// WithRateLimitHook is called with the rate-limit headers of every response.
func WithRateLimitHook(f func(RateLimit)) Option { return func(c *Client) { c.onRateLimit = f } }

// WithAllowHTTP permits a plain-HTTP base URL, for a TLS-terminating proxy
// on the same host. aivis itself refuses plain HTTP.
func WithAllowHTTP() Option { return func(c *Client) { c.allowHTTP = true } }

// New returns a client of the server at baseURL, such as https://localhost:8443.
func New(baseURL string, opts ...Option) (*Client, error) {
	c := &Client{baseURL: strings.TrimRight(baseURL, "/"), maxAttempts: 3, userAgent: "aivis-go", sleep: sleepCtx}
	for _, o := range opts {
		o(c)
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.apiURL == "" {
		c.apiURL = c.baseURL
	}
	for _, u := range []string{c.baseURL, c.apiURL} {
		p, err := url.Parse(u)
		if err != nil || p.Host == "" {
			return nil, fmt.Errorf("aivis: %q is not an absolute URL", u)
		}
		if p.Scheme != "https" && !(p.Scheme == "http" && c.allowHTTP) {
			return nil, fmt.Errorf("aivis: %q must use https", u)
		}
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16,
			TLSClientConfig: &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}}}
	} else if c.roots != nil {
		return nil, errors.New("aivis: give the CA to your own HTTP client's transport, not with WithRootCAs or WithCAFile")
	}
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RateLimit is the rate-limit state a response reported.
type RateLimit struct {
	Limit     int
	Remaining int
	Reset     time.Time
}

func rateLimitOf(h http.Header) (RateLimit, bool) {
	l, err1 := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	r, err2 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	s, err3 := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return RateLimit{}, false
	}
	return RateLimit{Limit: l, Remaining: r, Reset: time.Unix(s, 0)}, true
}

// Error is a failure the API answered.
type Error struct {
	StatusCode int
	Code       string
	Message    string
	RequestID  string
	RetryAfter time.Duration // on 429 and 503: how long the server asked to wait
	Details    []FieldError
	RateLimit  RateLimit
	body       []byte // the answer, for a call that reads more of it (Readiness)
}

func (e *Error) Error() string {
	s := fmt.Sprintf("aivis: %d %s: %s", e.StatusCode, e.Code, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// IsCode reports whether err is an API error with this code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// RequestOption changes one call.
type RequestOption func(*http.Request)

// IdempotencyKey makes a create or cancel safe to repeat: the server
// answers a repeat with the first response for 24 hours.
func IdempotencyKey(k string) RequestOption {
	return func(r *http.Request) { r.Header.Set("Idempotency-Key", k) }
}

// ForClient sets the client_id query parameter: a read of an agency
// client's data.
func ForClient(id string) RequestOption {
	return func(r *http.Request) {
		q := r.URL.Query()
		q.Set("client_id", id)
		r.URL.RawQuery = q.Encode()
	}
}

const maxResponse = 10 << 20

// auth is how a call authenticates.
type auth int

const (
	authKeyed  auth = iota // X-API-Key and X-API-Secret (/api/v1/ai)
	authBearer             // Authorization: Bearer (/v1)
	authNone               // health and the OpenAPI document
)

// do sends one call, retrying on 429, and decodes a success into out.
func (c *Client) do(ctx context.Context, method, u string, a auth, body any, out any, opts []RequestOption) error {
	res, err := c.open(ctx, method, u, a, body, opts)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("aivis: read response: %w", err)
	}
	if out != nil && res.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("aivis: decode %s %s response: %w", method, res.Request.URL.Path, err)
		}
	}
	return nil
}

// open sends one call, retrying on 429, and returns a success's response,
// whose body the caller reads and closes.
func (c *Client) open(ctx context.Context, method, u string, a auth, body any, opts []RequestOption) (*http.Response, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("aivis: encode request: %w", err)
		}
	}
	for attempt := 1; ; attempt++ {
		res, err := c.once(ctx, method, u, a, payload, opts)
		var e *Error
		if !errors.As(err, &e) || e.StatusCode != http.StatusTooManyRequests || attempt >= c.maxAttempts {
			return res, err
		}
		wait := e.RetryAfter
		if wait <= 0 {
			wait = 60 * time.Second
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return nil, serr
		}
	}
}

func (c *Client) once(ctx context.Context, method, u string, a auth, payload []byte, opts []RequestOption) (*http.Response, error) {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("aivis: %w", err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	switch a {
	case authBearer:
		req.Header.Set("Authorization", "Bearer "+c.key)
	case authKeyed:
		req.Header.Set("X-API-Key", c.key)
		req.Header.Set("X-API-Secret", c.secret)
	}
	for _, o := range opts {
		o(req)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("aivis: %s %s: %w", method, req.URL.Path, err)
	}
	rl, hasRL := rateLimitOf(res.Header)
	if hasRL && c.onRateLimit != nil {
		c.onRateLimit(rl)
	}
	if res.StatusCode >= 300 {
		defer res.Body.Close()
		b, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
		if err != nil {
			return nil, fmt.Errorf("aivis: read response: %w", err)
		}
		return nil, errorOf(res, b, rl)
	}
	return res, nil
}

func errorOf(res *http.Response, body []byte, rl RateLimit) *Error {
	e := &Error{StatusCode: res.StatusCode, RequestID: res.Header.Get("X-Request-Id"), RateLimit: rl, body: body}
	var env ErrorEnvelope
	if err := json.Unmarshal(body, &env); err == nil && env.Error.Code != "" {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
		if env.Error.RequestID != "" {
			e.RequestID = env.Error.RequestID
		}
		if env.Error.RetryAfter != nil {
			e.RetryAfter = time.Duration(*env.Error.RetryAfter) * time.Second
		}
	} else {
		excerpt := strings.TrimSpace(string(body))
		if len(excerpt) > 200 {
			excerpt = excerpt[:200] + "…"
		}
		e.Code, e.Message = "HTTP_"+strconv.Itoa(res.StatusCode), excerpt
	}
	if e.RetryAfter == 0 {
		if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
	}
	return e
}

func (c *Client) keyed(ctx context.Context, method, path string, body any, out any, opts []RequestOption) error {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := c.do(ctx, method, c.baseURL+"/api/v1/ai"+path, authKeyed, body, &env, opts); err != nil {
		return err
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("aivis: decode %s %s data: %w", method, path, err)
	}
	return nil
}

// BudgetStatus reports the account's tier, request usage and budget.
func (c *Client) BudgetStatus(ctx context.Context) (*BudgetStatus, error) {
	var out BudgetStatus
	if err := c.keyed(ctx, http.MethodGet, "/budget-status", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateContentRequest queues a content request and reserves its budget.
func (c *Client) CreateContentRequest(ctx context.Context, in CreateContentRequest, opts ...RequestOption) (*ContentRequest, error) {
	var out ContentRequest
	if err := c.keyed(ctx, http.MethodPost, "/content-requests", in, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetContentRequest reads one content request.
func (c *Client) GetContentRequest(ctx context.Context, id string) (*ContentRequest, error) {
	var out ContentRequest
	if err := c.keyed(ctx, http.MethodGet, "/content-requests/"+url.PathEscape(id), nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelContentRequest cancels a queued or processing request.
func (c *Client) CancelContentRequest(ctx context.Context, id string, opts ...RequestOption) (*ContentRequest, error) {
	var out ContentRequest
	if err := c.keyed(ctx, http.MethodPost, "/content-requests/"+url.PathEscape(id)+"/cancel", nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListParams selects a page of content requests; zero fields do not filter.
type ListParams struct {
	Limit    int
	Cursor   string
	Status   string
	Domain   string
	ClientID string
}

func (p ListParams) query() string {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	for k, v := range map[string]string{"cursor": p.Cursor, "status": p.Status, "domain": p.Domain, "client_id": p.ClientID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// ListContentRequests returns one page, newest first.
func (c *Client) ListContentRequests(ctx context.Context, p ListParams) (*List[ContentRequest], error) {
	var out List[ContentRequest]
	if err := c.keyed(ctx, http.MethodGet, "/content-requests"+p.query(), nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// ContentRequests iterates over every matching request, page after page.
// The iteration stops at the first error, which it yields.
func (c *Client) ContentRequests(ctx context.Context, p ListParams) iter.Seq2[ContentRequest, error] {
	return pages(func(cursor string) (*List[ContentRequest], error) {
		p.Cursor = cursor
		return c.ListContentRequests(ctx, p)
	}, p.Cursor)
}

// pages iterates over the items of every page from the one at cursor
// on, fetching a page only when the loop reaches it. It stops at the first
// error, which it yields.
func pages[T any](fetch func(cursor string) (*List[T], error), cursor string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			page, err := fetch(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if !page.HasMore || page.NextCursor == nil {
				return
			}
			cursor = *page.NextCursor
		}
	}
}

// Visibility returns the latest visibility reading of a domain and its
// trend (getVisibility). ForClient reads an agency client's domain.
func (c *Client) Visibility(ctx context.Context, domain string, opts ...RequestOption) (*VisibilityStatus, error) {
	var out VisibilityStatus
	u := c.apiURL + "/v1/visibility?domain=" + url.QueryEscape(domain)
	if err := c.do(ctx, http.MethodGet, u, authBearer, nil, &out, opts); err != nil {
		return nil, err
	}
	return &out, nil
}
