package visibility

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/store"
)

func fixedReadiness(score int) ReadinessFunc {
	return func(context.Context, string) (int, any, error) { return score, map[string]int{"score": score}, nil }
}

func TestScannerWithoutEngines(t *testing.T) {
	s := &EngineScanner{Readiness: fixedReadiness(64)}
	out, err := s.Scan(context.Background(), store.MonitoredDomain{Domain: "acme.example", Brands: []string{"Acme"}})
	if err != nil {
		t.Fatal(err)
	}
	var b Breakdown
	json.Unmarshal(out.Breakdown, &b)
	if out.VisibilityScore != 64 || out.ReadinessScore != 64 || out.Sentiment != "neutral" || out.SentimentScore != 0 ||
		b.Basis != BasisReadiness || b.SentimentConfidence != 0 || b.Weights["readiness"] != 1 || b.Overall != nil {
		t.Errorf("%+v %s", out, out.Breakdown)
	}
}

func TestScannerBlend(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	// Every answer names Acme first and cites it, with Globex after: mention
	// 1, citation 1, position 1, share of voice 1/2. By hand: 0.25×80 +
	// 0.30×100 + 0.15×100 + 0.15×100 + 0.15×50 = 20 + 30 + 15 + 15 + 7.5 =
	// 87.5, which rounds to 88.
	f.Answer("m", "Acme (https://acme.example) is great, better than Globex.")
	p := &probe.Prober{Client: &probe.Client{HTTP: http.DefaultClient, Backoff: time.Millisecond}, Runs: 2, MaxPrompts: 3,
		Engines: []probe.Engine{{Label: "E", BaseURL: f.URL(), Model: "m"}}}
	s := &EngineScanner{Readiness: fixedReadiness(80), Prober: p}
	d := store.MonitoredDomain{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex"}}
	out, err := s.Scan(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	var b Breakdown
	json.Unmarshal(out.Breakdown, &b)
	if out.VisibilityScore != 88 || out.Sentiment != "positive" || b.Basis != BasisEngines || b.Overall.Probes != 6 || b.SentimentConfidence <= 0 {
		t.Errorf("%+v %s", out, out.Breakdown)
	}
	// Every probe failing is no reading: the scan is retried.
	f.Fail("m", 401)
	p.Engines[0].Model, p.Runs, p.MaxPrompts = "nope", 1, 1
	if _, err := s.Scan(context.Background(), d); err == nil || !strings.Contains(err.Error(), "every engine probe failed") {
		t.Errorf("all failing: %v", err)
	}
}
