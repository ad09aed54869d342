package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/webhook"
)

// The attempt: one signed POST to a webhook (sign, post), or one Deliver
// call of a connection's connector with a batch of its deliveries
// (connect); either comes back as an outcome per delivery, with its
// verdict (policy.go), for the recorder (record.go).

// outcome is an attempt of a delivery, and what it came to (policy.go).
type outcome struct {
	d       *store.Delivery
	w       *store.Webhook
	attempt store.Attempt
	verdict verdict
	// unavailable: no attempt was made, the connection's connector not
	// running (hold.go); the delivery waits, and nothing is recorded.
	unavailable bool
	retryIn     time.Duration // what a Retry-After asked for
	// span is the attempt's span (invalid when tracing is off), which what
	// the recorder logs and publishes of the outcome joins.
	span trace.SpanContext
}

// ctx is a context of the attempt's span, for what follows from it.
func (o outcome) ctx() context.Context {
	if !o.span.IsValid() {
		return context.Background()
	}
	return trace.ContextWithSpanContext(context.Background(), o.span)
}

// maxResponseBody is how much of an endpoint's answer the log keeps.
const maxResponseBody = 1024

// attempt makes one attempt of a batch of deliveries to one target: a
// signed request to a webhook (a batch of one), or a call of a
// connection's connector; with tracing on, in a span of its own
// (startAttempt).
func (e *Engine) attempt(ctx context.Context, cs []claimed) []outcome {
	ctx, span := startAttempt(ctx, cs)
	defer span.End()
	var out []outcome
	if cs[0].w.IsConnection() {
		out = e.connect(ctx, cs)
	} else {
		out = []outcome{e.sign(ctx, cs[0])}
	}
	if span.IsRecording() {
		endAttempt(span, out)
	}
	return out
}

// startAttempt starts the span of an attempt of deliveries to one target
// (tracing off, a span that records nothing): "deliver webhook" or
// "deliver connection", a child of the span that made the deliveries
// (their Trace: the fan-out's handling of their event), or, for a
// connector's batch of deliveries made in several traces, the root of a
// trace of its own linked to each of them. Its attributes: the target's
// kind, the connector's name, the event's kind, the attempt's number and
// the deliveries it carries.
func startAttempt(ctx context.Context, cs []claimed) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return tracing.Start(ctx, "")
	}
	d, w := cs[0].d, cs[0].w
	kind := targetNoun(*w)
	attrs := []attribute.KeyValue{tracing.AttemptNumber.Int(d.Attempts + 1), tracing.Deliveries.Int(len(cs))}
	if w.IsConnection() {
		attrs = append(attrs, tracing.Connector.String(w.Connector))
	}
	attrs = append(attrs, tracing.TargetKind.String(kind))
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	parent := d.Trace
	for _, c := range cs[1:] {
		if c.d.Trace != parent {
			parent = ""
		}
		if c.d.Event != d.Event {
			d = nil
		}
	}
	if d != nil {
		attrs = append(attrs, tracing.EventKind.String(d.Event))
	}
	if parent != "" {
		ctx = tracing.FromParent(ctx, parent)
	} else if len(cs) > 1 {
		var links []trace.Link
		for i, c := range cs {
			if c.d.Trace != "" && !slices.ContainsFunc(cs[:i], func(p claimed) bool { return p.d.Trace == c.d.Trace }) {
				links = append(links, trace.Link{SpanContext: tracing.SpanContext(c.d.Trace)})
			}
		}
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(links...))
	}
	return tracing.Start(ctx, "deliver "+kind, append(opts, trace.WithAttributes(attrs...))...)
}

// endAttempt adds what the attempt came to: the outcome (the verdict of
// each of its deliveries when they agree, else mixed) and a webhook's
// HTTP status; an attempt that did not deliver is an error.
func endAttempt(span trace.Span, out []outcome) {
	v := out[0].verdict
	word := v.String()
	for _, o := range out[1:] {
		if o.verdict != v {
			word = "mixed"
		}
	}
	span.SetAttributes(tracing.Outcome.String(word))
	if a := out[0].attempt; len(out) == 1 && a.Result == "" && a.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(a.StatusCode))
	}
	if word != delivered.String() {
		tracing.Fail(span, word)
	}
	sc := span.SpanContext()
	for i := range out {
		out[i].span = sc
	}
}

// sign makes one signed request.
func (e *Engine) sign(ctx context.Context, c claimed) outcome {
	now := e.opt.Now()
	secrets := []string{c.w.Secret}
	if c.w.PrevSecret != "" && now.Before(c.w.PrevSecretEnd) {
		secrets = append(secrets, c.w.PrevSecret)
	}
	o := outcome{d: c.d, w: c.w}
	var h http.Header
	o.attempt, h = post(ctx, e.client, e.opt.Timeout, c.w.URL, secrets, c.d.EventID, c.d.Payload,
		store.Attempt{DeliveryID: c.d.ID, N: c.d.Attempts + 1, At: now})
	o.verdict, o.retryIn = answered(o.attempt.StatusCode, h, now)
	return o
}

// post makes one attempt, signed with secrets at a.At (Standard
// Webhooks), and returns a with what came back, and the answer's headers
// (nil when no answer came).
func post(ctx context.Context, client *http.Client, timeout time.Duration, url string, secrets []string, eventID string,
	payload []byte, a store.Attempt) (store.Attempt, http.Header) {
	signer, err := webhook.NewSigner(secrets...)
	if err != nil {
		a.Error = reason("signing: " + err.Error())
		return a, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		a.Error = reason(sdk.ErrorText(err))
		return a, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aivis-webhooks/1")
	if tracing.Enabled() {
		if tp := tracing.Parent(ctx); tp != "" {
			req.Header.Set(tracing.Traceparent, tp) // the receiver may continue the trace
		}
	}
	signer.Headers(req.Header, eventID, a.At, payload)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		a.Latency = time.Since(start)
		a.Error = reason(attemptError(err, timeout))
		return a, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	resp.Body.Close()
	a.Latency = time.Since(start)
	a.StatusCode = resp.StatusCode
	a.ResponseBody = strings.ToValidUTF8(string(body), string(utf8.RuneError))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		a.Error = reason(fmt.Sprintf("redirect to %q not followed", sdk.Redact(resp.Header.Get("Location"))))
	}
	return a, resp.Header
}

// attemptError says why an attempt got no answer, naming no address and
// not the URL (its query or path may carry a secret).
func attemptError(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no response within %s", timeout)
	}
	return netguard.Describe(err)
}

// connect delivers a batch of a connection's deliveries through its
// connector: one call, one outcome per delivery.
func (e *Engine) connect(ctx context.Context, cs []claimed) []outcome {
	w := cs[0].w
	now := e.opt.Now()
	evs := make([]sdk.Event, len(cs))
	for i, c := range cs {
		evs[i] = SDKEvent(*c.d, w.ClientID)
	}
	ctx, cancel := context.WithTimeout(ctx, e.opt.Timeout)
	defer cancel()
	start := time.Now()
	var rs []sdk.Result
	err := errors.New("no connector host is running")
	if e.opt.Connectors != nil {
		rs, err = e.opt.Connectors.Deliver(ctx, w.Connector, w.Settings, evs)
	}
	if err == nil && len(rs) != len(cs) {
		err = fmt.Errorf("it returned %d results for %d events", len(rs), len(cs))
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// Said plainly: gRPC words a deadline in several ways.
		err = fmt.Errorf("no answer within the %s deadline (%v)", e.opt.Timeout, err)
	}
	latency := time.Since(start)
	out := make([]outcome, len(cs))
	for i, c := range cs {
		o := outcome{d: c.d, w: c.w, attempt: store.Attempt{DeliveryID: c.d.ID, N: c.d.Attempts + 1, At: now, Latency: latency},
			unavailable: errors.Is(err, hub.ErrUnavailable)}
		if err != nil {
			o.attempt.Result, o.attempt.Error = ResultError, reason("connector "+w.Connector+": "+err.Error())
		} else {
			o.read(rs[i])
		}
		out[i] = o
	}
	return out
}

// read takes in what a connector answered for a delivery.
func (o *outcome) read(r sdk.Result) {
	o.verdict, o.retryIn, o.attempt.Result = connectorVerdict(r)
	if o.verdict != delivered {
		o.attempt.Error = reason(r.Reason)
	}
}

// reason is why an attempt failed as the delivery log keeps it: the
// endpoint's, the connector's or the network's words, cleaned (a NUL, bytes
// that are not UTF-8) and cut to what the log keeps.
func reason(s string) string { return text.Clean(s, maxResponseBody) }

// SDKEvent is a delivery as a connector receives it.
func SDKEvent(d store.Delivery, clientID string) sdk.Event {
	var b struct {
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			Domain string `json:"domain"`
		} `json:"data"`
	}
	_ = json.Unmarshal(d.Payload, &b) // the bus checked it; a zero field is all a failure costs
	return sdk.Event{ID: d.EventID, Kind: d.Event, Timestamp: b.Timestamp, Body: d.Payload, AccountID: d.AccountID,
		ClientID: clientID, Domain: b.Data.Domain}
}
