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
		b.Basis != BasisReadiness || b.FormulaVersion != FormulaVersion || out.FormulaVersion != FormulaVersion || b.SentimentConfidence != 0 || b.Weights["readiness"] != 1 || b.Overall != nil {
		t.Errorf("%+v %s", out, out.Breakdown)
	}
}

func TestScannerBlend(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	// Every answer names Acme first and cites it, with Globex after: the
	// plain model by a URL in its text, the search model by a citation of
	// a subdomain's page alone (version 1 of the formula read none).
	// Mention 1, citation 1, position 1, share of voice 1/2. By hand:
	// 0.25×80 + 0.30×100 + 0.15×100 + 0.15×100 + 0.15×50 = 20 + 30 + 15 +
	// 15 + 7.5 = 87.5, which rounds to 88.
	f.Answer("m", "Acme (https://acme.example) is great, better than Globex.")
	f.Script("gpt-4o-search-preview", probefake.Reply{Text: "Acme is great, better than Globex.",
		Citations: []probefake.Citation{{URL: "https://docs.acme.example/start?utm_source=openai", Title: "Start", Quote: "Acme is great"}}})
	p := &probe.Prober{Client: &probe.Client{HTTP: http.DefaultClient, Backoff: time.Millisecond}, Runs: 2, MaxPrompts: 3,
		Engines: []probe.Engine{{Label: "E", BaseURL: f.URL(), Model: "m"}, {Label: "S", BaseURL: f.URL(), Model: "gpt-4o-search-preview"}}}
	s := &EngineScanner{Readiness: fixedReadiness(80), Prober: p}
	d := store.MonitoredDomain{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex"}}
	out, err := s.Scan(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	var b Breakdown
	json.Unmarshal(out.Breakdown, &b)
	if out.VisibilityScore != 88 || out.FormulaVersion != FormulaVersion || b.FormulaVersion != FormulaVersion || out.Sentiment != "positive" || b.Basis != BasisEngines ||
		b.Overall.Probes != 12 || b.SentimentConfidence <= 0 || b.Components["citation"] != 100 {
		t.Errorf("%+v %s", out, out.Breakdown)
	}
	// The search model reported its one source in each of its 6 answers,
	// all the subject's: share 6/6; the plain model reported none: no
	// share, null in the breakdown.
	se := b.Engines[1]
	if se.Kind != probe.KindOpenAIChat || se.SourcesReported.Hits != 6 || se.SourceShare == nil || se.SourceShare.Hits != 6 || se.SourceShare.Of != 6 ||
		len(se.CitedDomains) != 1 || se.CitedDomains[0] != (probe.DomainCount{Domain: "docs.acme.example", Count: 6}) ||
		len(se.CitedPages) != 1 || se.CitedPages[0] != (probe.PageCount{URL: "https://docs.acme.example/start", Count: 6}) || b.Engines[0].SourceShare != nil {
		t.Errorf("engines %+v", b.Engines)
	}
	if !strings.Contains(string(out.Breakdown), `"source_share":null`) || !strings.Contains(string(out.Breakdown), `"formula_version":3`) {
		t.Errorf("breakdown %s", out.Breakdown)
	}
	// Every probe failing is no reading: the scan is retried.
	f.Fail("m", 401)
	p.Engines, p.Runs, p.MaxPrompts = p.Engines[:1], 1, 1
	p.Engines[0].Model = "nope"
	// The scan's error, which accounts read, names each engine's failure
	// by its category and status, not in the engine's words.
	if _, err := s.Scan(context.Background(), d); err == nil ||
		err.Error() != "every engine probe failed; "+p.Engines[0].Label+": the engine refused the request (HTTP 404)" {
		t.Errorf("all failing: %v", err)
	}
}
