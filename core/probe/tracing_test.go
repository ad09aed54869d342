package probe

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/tracing"
	"github.com/aivis/aivis/core/tracing/tracingtest"
)

// With tracing on, an engine call is a client span of the caller's trace:
// the engine's label and kind, the attempts it took and, when it failed,
// its category and status, never the engine's URL, key, prompt or words.
func TestEngineCallSpans(t *testing.T) {
	rec := tracingtest.Record(t)
	f := probefake.New()
	defer f.Close()
	const key = "sk-operator-0123456789abcdef"
	f.Key = key
	f.Answer("m", "Acme is fine.")
	f.Fail("flaky", 503)
	f.Answer("flaky", "Acme again.")
	limited := probefake.Failure{Status: 429, Message: "org-Operator123 is rate limited"}
	f.FailWith("limited", limited, limited)
	c := &Client{HTTP: &http.Client{}, MaxAttempts: 2, Backoff: time.Millisecond}
	ctx, parent := tracing.Start(context.Background(), "scan")
	for _, e := range []Engine{
		{Label: "Plain", BaseURL: f.URL(), Model: "m", APIKey: key},
		{Label: "Flaky", Kind: KindOpenAIChat, BaseURL: f.URL(), Model: "flaky", APIKey: key},
		{Label: "Limited", BaseURL: f.URL(), Model: "limited", APIKey: key},
	} {
		c.Ask(ctx, e, "Which rocket skates should I buy?")
	}
	parent.End()
	want := []map[string]string{
		{"aivis.engine.label": "Plain", "aivis.engine.kind": "openai-chat", "aivis.attempts": "1"},
		{"aivis.engine.label": "Flaky", "aivis.engine.kind": "openai-chat", "aivis.attempts": "2"},
		{"aivis.engine.label": "Limited", "aivis.engine.kind": "openai-chat", "aivis.attempts": "2",
			"error.type": FailRateLimited, "http.response.status_code": "429"},
	}
	calls := tracingtest.Named(rec, "engine call")
	if len(calls) != len(want) {
		t.Fatalf("%d engine calls, want %d", len(calls), len(want))
	}
	for i, s := range calls {
		got := tracingtest.Attrs(s)
		for k, v := range got {
			if strings.Contains(v, "sk-") || strings.Contains(v, "127.0.0.1") || strings.Contains(v, "Operator") || strings.Contains(v, "rocket") {
				t.Errorf("%s: attribute %s=%q", want[i]["aivis.engine.label"], k, v)
			}
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("call %d: %s = %q, want %q (%v)", i, k, got[k], v, got)
			}
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("call %d is not a child of the caller's span", i)
		}
		if failed := s.Status().Code.String() == "Error"; failed != (i == 2) {
			t.Errorf("call %d: status %v", i, s.Status())
		}
	}
}
