// Package probe asks AI engines about a domain and measures the answers:
// whether the brand is mentioned, where among the brands named, whether
// the domain is cited, which competitors appear, and the sentiment of
// the sentences that mention it. Engines are of several kinds (Kinds):
// any OpenAI-compatible chat-completions endpoint (hosted models, Ollama,
// vLLM, llama.cpp) and the answer engines that search the web and report
// their sources.
package probe

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/retryafter"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/plugins/sdk"
)

// Engine is one configured AI engine.
type Engine struct {
	Label string
	// Kind is the API the engine speaks (one of Kinds; "" is
	// KindOpenAIChat).
	Kind    string
	BaseURL string // e.g. https://api.openai.com/v1 or http://localhost:11434/v1
	Model   string
	APIKey  string
	// Prices in dollars per million tokens.
	InputPricePerMTok, OutputPricePerMTok float64
	// SearchPricePer1K is the price of 1,000 web searches, in dollars.
	SearchPricePer1K float64
	// MaxSearches bounds the searches of one answer where the kind takes
	// a bound (anthropic: max_uses; default 5).
	MaxSearches int
	// Concurrency bounds the requests in flight to this engine (default 4).
	Concurrency int
	// Timeout bounds one request (default 60 s).
	Timeout time.Duration
	// SurfaceOf is the engine's surface where it is not its kind's (one
	// of Surfaces; "": its kind's, see Surface).
	SurfaceOf string
	// XSearch also gives an xai engine the x_search tool (posts on X).
	XSearch bool
}

// Cost is what the answer cost, in dollars: what the provider said it
// cost (Answer.CostUSD, its exact charge) where it said, else its tokens
// and its searches at the engine's prices.
func (e Engine) Cost(a Answer) float64 {
	if a.CostUSD > 0 {
		return a.CostUSD
	}
	return (float64(a.InputTokens)*e.InputPricePerMTok+float64(a.OutputTokens)*e.OutputPricePerMTok)/1e6 +
		float64(a.Searches)*e.SearchPricePer1K/1000
}

// Client asks engines, retrying throttling and server errors.
type Client struct {
	HTTP *http.Client
	// MaxAttempts bounds the attempts of one prompt (default 4).
	MaxAttempts int
	// Backoff is the first wait between attempts, doubled each time with
	// jitter, unless the engine says (Retry-After); default 500 ms.
	Backoff time.Duration
	// MaxWait caps a wait the engine asks for (default 30 s).
	MaxWait time.Duration
	// Metrics counts each request, its time and its answer's cost (nil:
	// none).
	Metrics *metrics.Engines
}

// ErrPermanent marks an error retrying cannot mend (a bad key, an unknown
// model, a refused request).
var ErrPermanent = errors.New("permanent")

// Request is one chat completion: an optional system message, the user's
// prompt, and a cap on the answer's tokens (0: the engine's own).
type Request struct {
	System      string
	Prompt      string
	MaxTokens   int
	Temperature float64
	// Market is where and in which language the prompt is asked (zero:
	// the engine's default). What the engine's options do not take of it
	// is asked for in the prompt (Engine.Localisation).
	Market Market
}

// adapter speaks one kind of engine's API.
type adapter interface {
	// request builds the HTTP request of one attempt.
	request(ctx context.Context, e Engine, r Request) (*http.Request, error)
	// parse reads the body of a 200 answer.
	parse(body []byte) (Answer, error)
	// failure reads an answer other than 200: the wait the engine asked
	// for (0: back off as usual) and the error, wrapping ErrPermanent when
	// retrying cannot mend it.
	failure(status int, h http.Header, body []byte) (time.Duration, error)
}

// deferrer is an adapter whose answer of 200 may leave part of itself to
// a second request, made at once (SerpApi's Google search, whose AI
// Overview may come by a token that lives about a minute).
type deferrer interface {
	// deferred is the request of what the 200 answer b left to a second
	// one; nil when it left nothing.
	deferred(ctx context.Context, e Engine, b []byte) (*http.Request, error)
}

// adapters are the kinds' adapters, by kind; each kind's file adds its own.
var adapters = map[string]adapter{}

func adapterOf(e Engine) (adapter, error) {
	kind := e.Kind
	if kind == "" {
		kind = KindOpenAIChat
	}
	a, ok := adapters[kind]
	if !ok {
		return nil, fmt.Errorf("%w: engine kind %q is not one of %s", ErrPermanent, kind, strings.Join(Kinds, ", "))
	}
	return a, nil
}

// Ask sends one prompt as a user message and returns the answer.
func (c *Client) Ask(ctx context.Context, e Engine, prompt string) (Answer, error) {
	return c.Complete(ctx, e, Request{Prompt: prompt, Temperature: 0.7})
}

// Complete sends one request and returns the answer; with tracing on, in
// a span of its own ("engine call": the engine's label and kind, the
// attempts it took, and a failure's category and status).
func (c *Client) Complete(ctx context.Context, e Engine, r Request) (Answer, error) {
	var span trace.Span
	if tracing.Enabled() {
		ctx, span = tracing.Start(ctx, "engine call", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(tracing.EngineLabel.String(e.Label), tracing.EngineKind.String(e.kind())))
		defer span.End()
	}
	a, tries, err := c.complete(ctx, e, r)
	if span != nil {
		span.SetAttributes(tracing.Attempts.Int(tries))
		var f *Failure
		switch {
		case errors.As(err, &f):
			if f.Status != 0 {
				span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(f.Status))
			}
			tracing.Fail(span, f.Category)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			tracing.Fail(span, "cancelled") // the scan or request stopped meanwhile
		case err != nil:
			tracing.Fail(span, "_OTHER")
		}
	}
	return a, err
}

// complete is Complete, and how many attempts it made.
func (c *Client) complete(ctx context.Context, e Engine, r Request) (Answer, int, error) {
	attempts, backoff, maxWait := c.MaxAttempts, c.Backoff, c.MaxWait
	if attempts <= 0 {
		attempts = 4
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	if maxWait <= 0 {
		maxWait = 30 * time.Second
	}
	ad, err := adapterOf(e)
	if err != nil {
		return Answer{}, 0, fmt.Errorf("%s: %w", e.Label, err)
	}
	r.Prompt = marketPrompt(r.Prompt, r.Market, e.Localisation())
	var last error
	// billed is what the failed attempts were billed (Failure.CostUSD):
	// part of the answer's cost, or of the last failure's.
	var billed float64
	i := 1
	for ; i <= attempts; i++ {
		start := time.Now()
		a, wait, err := c.once(ctx, e, ad, r)
		c.count(e, a, err, time.Since(start))
		if err == nil {
			a.Attempts = i
			a.CostUSD += billed
			return a, i, nil
		}
		last = err
		var f *Failure
		if errors.As(err, &f) {
			billed += f.CostUSD
			f.CostUSD = billed
		}
		if errors.Is(err, ErrPermanent) || i == attempts {
			break
		}
		if wait <= 0 {
			wait = backoff<<(i-1) + time.Duration(rand.Int64N(int64(backoff)))
		}
		select {
		case <-ctx.Done():
			return Answer{}, i, ctx.Err()
		case <-time.After(min(wait, maxWait)):
		}
	}
	return Answer{}, i, fmt.Errorf("%s: %w", e.Label, last)
}

// once makes one attempt, with the second request its answer leaves to
// one (deferrer); wait is what the engine asked to wait.
func (c *Client) once(ctx context.Context, e Engine, ad adapter, r Request) (Answer, time.Duration, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := ad.request(ctx, e, r)
	if err != nil {
		return Answer{}, 0, fmt.Errorf("%w: %w", ErrPermanent, &Failure{Category: FailBadRequest,
			Detail: "the request could not be made: " + err.Error()})
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// Named without the URL (a local engine's is an internal address)
		// or an address (netguard.Describe).
		f := &Failure{Category: FailProvider, Detail: "the engine could not be reached: " + netguard.Describe(err)}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			f.Category, f.Detail = FailTimeout, fmt.Sprintf("no answer within %s", timeout)
		}
		return Answer{}, 0, f
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		f := &Failure{Category: FailProvider, Status: resp.StatusCode, Detail: "the answer could not be read: " + netguard.Describe(err)}
		if errors.Is(err, context.DeadlineExceeded) {
			f.Category, f.Detail = FailTimeout, fmt.Sprintf("the answer did not end within %s", timeout)
		}
		return Answer{}, 0, f
	}
	if resp.StatusCode != http.StatusOK {
		wait, err := ad.failure(resp.StatusCode, resp.Header, b)
		var f *Failure
		if errors.As(err, &f) {
			f.Detail = e.said(f.Detail)
			// A wrapping error's text was made of the words before.
			if errors.Is(err, ErrPermanent) {
				err = fmt.Errorf("%w: %w", ErrPermanent, f)
			}
		}
		return Answer{}, wait, err
	}
	a, err := ad.parse(b)
	var f *Failure
	if errors.As(err, &f) {
		// A failure the answer of 200 tells (DataForSEO's task codes).
		f.Status, f.Detail = resp.StatusCode, e.said(f.Detail)
		return Answer{}, 0, err
	}
	if err != nil {
		// An answer of 200 may be an error in the engine's words.
		return Answer{}, 0, &Failure{Category: FailProvider, Status: resp.StatusCode,
			Detail: e.said(fmt.Sprintf("the engine's answer is not a %s answer: %v", e.kind(), err))}
	}
	return c.rest(ctx, e, ad, r, a, b)
}

// rest is the answer a, of the body b, with what it left to a second
// request if it left any: that request's answer, read and failing as any
// of the adapter's (an absent one fails: the first said there was more),
// with what both cost. The second shares the attempt's time.
func (c *Client) rest(ctx context.Context, e Engine, ad adapter, r Request, a Answer, b []byte) (Answer, time.Duration, error) {
	d, ok := ad.(deferrer)
	if !ok {
		return a.tidy(), 0, nil
	}
	req, err := d.deferred(ctx, e, b)
	if err != nil {
		return Answer{}, 0, fmt.Errorf("%w: %w", ErrPermanent, &Failure{Category: FailBadRequest,
			Detail: "the second request could not be made: " + err.Error()})
	}
	if req == nil {
		return a.tidy(), 0, nil
	}
	more, wait, err := c.once(ctx, e, second{ad, req}, r)
	switch {
	case err != nil:
		return Answer{}, wait, err
	case more.Absent:
		return Answer{}, 0, &Failure{Category: FailProvider, Status: http.StatusOK,
			Detail: "the engine's second request did not bring what its first left to it"}
	}
	more.Searches += a.Searches
	more.CostUSD += a.CostUSD
	more.InputTokens += a.InputTokens
	more.OutputTokens += a.OutputTokens
	return more, 0, nil
}

// second is the adapter of an attempt's second request (deferrer): req,
// its answer read as any of the first's adapter.
type second struct {
	adapter
	req *http.Request
}

func (s second) request(ctx context.Context, _ Engine, _ Request) (*http.Request, error) {
	return s.req.WithContext(ctx), nil
}

// said is what the engine said of a failure, for the operator's log
// alone (its words may name the operator's account, quota or key): as
// text, the key redacted (after the NULs are gone, which could hide it),
// and cut to 1,024 bytes.
func (e Engine) said(s string) string {
	return text.Cut(sdk.Redact(text.Clean(s, 0), e.secrets()...), 1024)
}

// secrets are the forms of the engine's key its words could show: the
// key, and of a login:password (DataForSEO's) the password alone and the
// Basic credentials.
func (e Engine) secrets() []string {
	out := []string{e.APIKey}
	if _, pw, ok := strings.Cut(e.APIKey, ":"); ok && len(pw) >= 8 {
		out = append(out, pw, base64.StdEncoding.EncodeToString([]byte(e.APIKey)))
	}
	return out
}

func (e Engine) kind() string {
	if e.Kind == "" {
		return KindOpenAIChat
	}
	return e.Kind
}

// The categories of a probe's failure: what a tenant is told of it.
const (
	FailRateLimited = "rate_limited"   // 429: the engine's rate or quota
	FailRefusedKey  = "refused_key"    // 401, 403: the operator's key
	FailProvider    = "provider_error" // 5xx, an answer unread, no answer
	FailTimeout     = "timeout"        // no answer in time, 408, 504
	FailBadRequest  = "bad_request"    // another 4xx: a model or a request refused
)

// Failure is why an engine gave no answer: its category and the HTTP
// status it answered (0: none came), which tenants are shown (Public), and
// what the engine or the network said (Detail, its Error), for the
// operator's log alone: an engine's words may name the operator's
// organisation, quota or key.
type Failure struct {
	Category string
	Status   int
	Detail   string
	// CostUSD is what the provider billed for the request that failed, in
	// dollars (DataForSEO bills a search Google failed, 40101); of a
	// failure Complete returns, what all its attempts were billed.
	CostUSD float64
}

func (f *Failure) Error() string { return f.Detail }

// failurePhrases are the words tenants read of each category.
var failurePhrases = map[string]string{
	FailRateLimited: "the engine is rate limited",
	FailRefusedKey:  "the engine refused the API key",
	FailProvider:    "the engine failed",
	FailTimeout:     "the engine did not answer in time",
	FailBadRequest:  "the engine refused the request",
}

// Public is what a tenant reads of the failure: its category's words and
// the status.
func (f *Failure) Public() string {
	if f.Status == 0 {
		return failurePhrases[f.Category]
	}
	return fmt.Sprintf("%s (HTTP %d)", failurePhrases[f.Category], f.Status)
}

// FailureOf is the failure err tells of: an engine's, or, for an error of
// another kind, an error of the provider's.
func FailureOf(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return &Failure{Category: FailProvider, Detail: err.Error()}
}

// postJSON is a POST of body as JSON to base + path.
func postJSON(ctx context.Context, base, path string, body any) (*http.Request, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// bearer gives req, if any, the key as a bearer token, if any.
func bearer(req *http.Request, key string) *http.Request {
	if req != nil && key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

// retryable says whether an HTTP status is worth another attempt:
// throttling, a timeout, a server error.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// failed is the usual reading of a failed answer: a retryable status
// waits what Retry-After asks (0 without it), any other is permanent.
// msg is what the engine said, for the log.
func failed(status int, h http.Header, msg string) (time.Duration, error) {
	// 529 (Anthropic's overloaded) has no status text.
	code := strings.TrimSpace(fmt.Sprintf("%d %s", status, http.StatusText(status)))
	f := &Failure{Category: category(status), Status: status, Detail: "the engine answered " + code}
	if msg != "" {
		f.Detail += ": " + msg
	}
	if retryable(status) {
		return retryafter.Header(h, time.Now()), f
	}
	return 0, fmt.Errorf("%w: %w", ErrPermanent, f)
}

// category is the category of a failed answer's status.
func category(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return FailRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return FailRefusedKey
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return FailTimeout
	case status >= 400 && status < 500:
		return FailBadRequest
	}
	return FailProvider
}

// errorText is an engine's error as "type: message", either part absent.
func errorText(typ, msg string) string {
	if typ == "" || msg == "" {
		return typ + msg
	}
	return typ + ": " + msg
}
