package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
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
	retryIn time.Duration // what a Retry-After asked for
}

// maxResponseBody is how much of an endpoint's answer the log keeps.
const maxResponseBody = 1024

// attempt makes one attempt of a batch of deliveries to one target: a
// signed request to a webhook (a batch of one), or a call of a
// connection's connector.
func (e *Engine) attempt(ctx context.Context, cs []claimed) []outcome {
	if cs[0].w.IsConnection() {
		return e.connect(ctx, cs)
	}
	return []outcome{e.sign(ctx, cs[0])}
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
		o := outcome{d: c.d, w: c.w, attempt: store.Attempt{DeliveryID: c.d.ID, N: c.d.Attempts + 1, At: now, Latency: latency}}
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
