// Package kittest helps the connector tests: it builds a connector into a
// plugin binary, starts it as the server does, and makes events.
package kittest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/plugins/host"
	"github.com/aivis/aivis/plugins/sdk"
)

// Loopback lets a plugin reach the local fakes.
var Loopback = []string{sdk.EnvAllowedTargets + "=127.0.0.0/8"}

// Client is the outbound client of a connector run in process, allowed
// to reach the local fakes and nothing else private.
func Client() *http.Client {
	return netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}.Client(5 * time.Second)
}

// Build compiles the connector in the current directory into a plugin.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "connector")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Start runs a built connector as the server runs it, allowed to reach
// loopback.
func Start(t testing.TB, bin string) sdk.Connector {
	t.Helper()
	p, err := host.Start(host.Options{Path: bin, Env: Loopback})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return remote{p.Connector()}
}

// remote adapts the host's client to sdk.Connector for tests that run the
// same cases in process and through the plugin.
type remote struct{ c *sdk.Client }

func (r remote) Info() sdk.Info {
	i, _ := r.c.Info(context.Background())
	return i
}
func (r remote) ValidateSettings(ctx context.Context, s json.RawMessage) []sdk.FieldError {
	fes, err := r.c.ValidateSettings(ctx, s)
	if err != nil {
		return []sdk.FieldError{{Message: err.Error()}}
	}
	return fes
}
func (r remote) Deliver(ctx context.Context, s json.RawMessage, evs []sdk.Event) []sdk.Result {
	rs, err := r.c.Deliver(ctx, s, evs)
	if err != nil {
		return []sdk.Result{{Outcome: sdk.Retry, Reason: "plugin call: " + err.Error()}}
	}
	return rs
}
func (r remote) Test(ctx context.Context, s json.RawMessage, ev sdk.Event) sdk.Result {
	res, err := r.c.Test(ctx, s, ev)
	if err != nil {
		return sdk.Result{Outcome: sdk.Retry, Reason: "plugin call: " + err.Error()}
	}
	return res
}

// Event makes an event of kind about domain with data as its body's data.
func Event(id, kind, domain string, data map[string]any) sdk.Event {
	ts := time.Now().UTC().Truncate(time.Millisecond)
	if data == nil {
		data = map[string]any{}
	}
	if _, ok := data["domain"]; !ok && domain != "" {
		data["domain"] = domain
	}
	body, _ := json.Marshal(map[string]any{"id": id, "event": kind, "timestamp": ts, "data": data})
	return sdk.Event{ID: id, Kind: kind, Timestamp: ts, Body: body, AccountID: "acct_test", Domain: domain}
}

// Change is an ai_visibility_change from previous to score.
func Change(id, domain string, score, previous int, sentiment string) sdk.Event {
	return Event(id, "ai_visibility_change", domain, map[string]any{
		"visibility_score": score, "previous_visibility_score": previous, "score_change": score - previous,
		"sentiment": sentiment, "sentiment_score": 0.4, "previous_sentiment": "neutral", "source": "scan"})
}

// Citation is a citation_change as aivis makes it: Perplexity's citation
// rate of domain in Germany, in German, down from 4 of 10 answers to 1 of
// 8 (-27.5 points), the domain's share of the sources cited from 3 of 40
// to 1 of 30.
func Citation(id, domain string) sdk.Event {
	return made(id, events.CitationChange, domain, events.CitationChangeData{Domain: domain, Engine: "Perplexity", Kind: "perplexity",
		Surface: "search_api", Market: &events.Market{Country: "DE", Language: "de"},
		CitationRate: events.Rate{Value: 0.125, Hits: 1, Of: 8}, PreviousCitationRate: events.Rate{Value: 0.4, Hits: 4, Of: 10},
		CitationChange: -27.5, SourceShare: &events.Rate{Value: 1.0 / 30, Hits: 1, Of: 30},
		PreviousSourceShare: &events.Rate{Value: 0.075, Hits: 3, Of: 40}, ScanID: "scan_2", PreviousScanID: "scan_1"})
}

// CrawlerErrors is a crawler_errors as aivis makes it: 14 error hits of
// AI crawlers on 2 pages the engines cite, GPTBot's nine 404s and
// PerplexityBot's two 503s on /pricing, OAI-SearchBot's three 500s on
// /docs/setup.
func CrawlerErrors(id, domain string) sdk.Event {
	return made(id, events.CrawlerErrors, domain, events.CrawlerErrorsData{Domain: domain, Days: []string{"2026-11-27"},
		ScanID: "scan_2", Errors: 14, PagesWithErrors: 2, Pages: []events.CrawlerErrorsPage{
			{Path: "/pricing", Errors: 11, Agents: []events.CrawlerErrorsAgent{{Agent: "GPTBot", Verification: "verified", Status4xx: 9},
				{Agent: "PerplexityBot", Verification: "unverified", Status5xx: 2}},
				CitedBy: []events.CrawlerErrorsEngine{{Engine: "ChatGPT", Answers: 6}, {Engine: "Perplexity", Answers: 3}}},
			{Path: "/docs/setup", Errors: 3, Agents: []events.CrawlerErrorsAgent{{Agent: "OAI-SearchBot", Verification: "verified", Status5xx: 3}},
				CitedBy: []events.CrawlerErrorsEngine{{Engine: "Perplexity", Answers: 1}}}}})
}

// Scan is a scan_completed as aivis makes it, with its citation figures:
// 5 of 20 answers cite domain and 3 of the 40 sources reported are its;
// ChatGPT cites it in 1 of 10 answers and reports no sources, Perplexity
// in 4 of 10 with those 3 of 40; every answer showed.
func Scan(id, domain string) sdk.Event {
	share := &events.Rate{Value: 0.075, Hits: 3, Of: 40}
	all := func(n int) events.Rate { return events.Rate{Value: 1, Hits: n, Of: n} }
	presence := all(20)
	return made(id, events.ScanCompleted, domain, events.ScanCompletedData{ScanID: "scan_1", Domain: domain, VisibilityScore: 64,
		Sentiment: "positive", ReadinessScore: 80, CitationRate: &events.Rate{Value: 0.25, Hits: 5, Of: 20}, SourceShare: share,
		OverviewPresence: &presence,
		Engines: []events.EngineCitations{{Label: "ChatGPT", Kind: "openai-chat", Surface: "model", CitationRate: events.Rate{Value: 0.1, Hits: 1, Of: 10},
			OverviewPresence: all(10)},
			{Label: "Perplexity", Kind: "perplexity", Surface: "search_api", CitationRate: events.Rate{Value: 0.4, Hits: 4, Of: 10}, SourceShare: share,
				OverviewPresence: all(10)}}})
}

// made is an event of aivis's catalog as the server hands it to a
// connector.
func made(id, kind, domain string, data any) sdk.Event {
	ev, err := events.New(kind, time.Now(), "acct_test", "", domain, data)
	if err != nil {
		panic(err)
	}
	ev.ID = id
	return sdk.Event{ID: id, Kind: kind, Timestamp: ev.Timestamp, Body: ev.AppendJSON(nil), AccountID: "acct_test", Domain: domain}
}

// Ctx is a context for one call.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
