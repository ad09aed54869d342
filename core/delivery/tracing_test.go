package delivery_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/core/tracing/tracingtest"
	"github.com/aivis/aivis/internal/syncbuf"
	"github.com/aivis/aivis/webhook"
)

// With tracing on, every attempt of a delivery is a span of its event's
// trace, a child of the fan-out's handling of the event: the first,
// handed over by the fan-out, and the retry, claimed from the store; each
// POST carries its attempt's traceparent. A webhook an attempt disables
// is logged with that attempt's trace id, and its webhook_disabled is
// published in that trace.
func TestAttemptsJoinTheEventsTrace(t *testing.T) {
	rec := tracingtest.Record(t)
	var logs syncbuf.Buffer
	was := quiet
	quiet = tracing.Logger(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { quiet = was })
	fastSchedule(t)
	e := newEnv(t, delivery.Options{})

	// Two endpoints: one answers the event's first attempt 503, then 200;
	// the other answers 410, which disables its webhook. Each keeps the
	// traceparents the event's attempts came with.
	flaky, gone := newParentsReceiver(t, http.StatusServiceUnavailable, http.StatusOK), newParentsReceiver(t, http.StatusGone)
	hook := func(url string) store.Webhook {
		w, err := e.svc.Create(ctx, e.p, client.CreateWebhook{Domain: "example.com", URL: url, Events: []string{events.VisibilityChange}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	flakyHook, goneHook := hook(flaky.URL), hook(gone.URL)

	reqCtx, request := tracing.Start(ctx, "request")
	score := 40
	if _, _, err := e.readings.Record(reqCtx, e.p, client.RecordReading{Domain: "example.com", VisibilityScore: &score, Sentiment: "positive"}); err != nil {
		t.Fatal(err)
	}
	request.End()
	eventually(t, "the delivery succeeded at its second attempt, and the other webhook disabled", func() bool {
		ds := deliveries(t, e, flakyHook.ID)
		w, err := e.db.Webhook(ctx, "acct_1", goneHook.ID)
		return err == nil && !w.Enabled && slices.ContainsFunc(ds, func(d store.Delivery) bool {
			return d.Event == events.VisibilityChange && d.Status == store.DeliverySucceeded && d.Attempts == 2
		})
	})
	e.stop() // every span has ended

	traceID := request.SpanContext().TraceID()
	var process sdktrace.ReadOnlySpan
	var attempts, disabled []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != traceID {
			continue
		}
		switch s.Name() {
		case "process aivis.events":
			if attr(s, "aivis.event.kind") == events.VisibilityChange {
				process = s
			}
		case "deliver webhook":
			attempts = append(attempts, s)
		case "publish aivis.events":
			if attr(s, "aivis.event.kind") == events.WebhookDisabled {
				disabled = append(disabled, s)
			}
		}
	}
	if process == nil {
		t.Fatal("no span of the fan-out's handling in the request's trace")
	}
	var flakyAttempts []sdktrace.ReadOnlySpan
	for _, a := range attempts {
		if a.Parent().SpanID() != process.SpanContext().SpanID() {
			t.Errorf("attempt %v: parent %v, want the fan-out's span %v", tracingtest.Attrs(a), a.Parent().SpanID(), process.SpanContext().SpanID())
		}
		if attr(a, "aivis.outcome") != "gone" {
			flakyAttempts = append(flakyAttempts, a)
		}
	}
	if len(flakyAttempts) != 2 || attr(flakyAttempts[0], "aivis.outcome") != "retry" || attr(flakyAttempts[0], "http.response.status_code") != "503" ||
		attr(flakyAttempts[1], "aivis.outcome") != "delivered" || attr(flakyAttempts[1], "aivis.delivery.attempt") != "2" {
		t.Fatalf("the flaky webhook's attempts in the trace: %d %v", len(flakyAttempts), spanAttrs(flakyAttempts))
	}
	parents := flaky.got()
	for i, a := range flakyAttempts {
		if want := "00-" + traceID.String() + "-" + a.SpanContext().SpanID().String() + "-01"; i >= len(parents) || parents[i] != want {
			t.Errorf("attempt %d came with traceparent %v, want %s", i+1, parents, want)
		}
	}
	var goneAttempt sdktrace.ReadOnlySpan
	for _, a := range attempts {
		if attr(a, "aivis.outcome") == "gone" {
			goneAttempt = a
		}
	}
	if goneAttempt == nil || len(disabled) != 1 || disabled[0].Parent().SpanID() != goneAttempt.SpanContext().SpanID() {
		t.Fatalf("webhook_disabled's publish %v, want one, a child of the attempt that disabled it", disabled)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "deliveries: webhook disabled") {
			line = l
		}
	}
	if !strings.Contains(line, "trace_id="+traceID.String()) || !strings.Contains(line, "span_id="+goneAttempt.SpanContext().SpanID().String()) {
		t.Errorf("the disabling's log %q, want the attempt's trace_id and span_id", line)
	}
}

// parentsReceiver answers a webhook's setup test 200 and the attempts of
// events with its answers in turn (the last one from then on), and keeps
// the traceparent each attempt came with.
type parentsReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	parents []string
}

func newParentsReceiver(t *testing.T, answers ...int) *parentsReceiver {
	p := &parentsReceiver{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev webhook.Event
		json.NewDecoder(r.Body).Decode(&ev)
		if ev.Event == events.WebhookTest {
			return
		}
		p.mu.Lock()
		p.parents = append(p.parents, r.Header.Get("traceparent"))
		n := len(p.parents)
		p.mu.Unlock()
		w.WriteHeader(answers[min(n, len(answers))-1])
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *parentsReceiver) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.parents)
}

func attr(s sdktrace.ReadOnlySpan, key string) string { return tracingtest.Attrs(s)[key] }

func spanAttrs(ss []sdktrace.ReadOnlySpan) []map[string]string {
	var out []map[string]string
	for _, s := range ss {
		out = append(out, tracingtest.Attrs(s))
	}
	return out
}
