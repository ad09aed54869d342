package probe_test

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
)

// The client counts every request to an engine by the engine's label and
// kind and what it came to (ok, or the failure's category), with its time,
// and what each answer cost at the engine's prices.
func TestMetrics(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Answer("m", "Acme makes the best widgets")
	f.Fail("m", http.StatusTooManyRequests) // the first request
	m := metrics.New(metrics.Options{})
	c := &probe.Client{HTTP: &http.Client{}, MaxAttempts: 2, Backoff: time.Millisecond, Metrics: m.Engines}
	e := probe.Engine{Label: "Fake", BaseURL: f.URL(), Model: "m", InputPricePerMTok: 2, OutputPricePerMTok: 3}
	a, err := c.Ask(context.Background(), e, "which widgets are best")
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels ...string) float64 { return metricstest.Value(t, m, name, labels...) }
	for outcome, want := range map[string]float64{"ok": 1, "rate_limited": 1, "timeout": 0} {
		if n := value("aivis_engine_calls_total", "engine", "Fake", "kind", "openai-chat", "outcome", outcome); n != want {
			t.Errorf("calls %s: %v, want %v", outcome, n, want)
		}
	}
	if n := value("aivis_engine_call_duration_seconds_count", "engine", "Fake", "kind", "openai-chat"); n != 2 {
		t.Errorf("durations observed: %v, want 2", n)
	}
	if spend, want := value("aivis_engine_spend_usd_total", "engine", "Fake"), e.Cost(a); want <= 0 || math.Abs(spend-want) > 1e-12 {
		t.Errorf("spend %v, want the answer's cost %v", spend, want)
	}
}
