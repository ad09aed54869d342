package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/visibility"
	"github.com/aivis/aivis/webhook"
)

// TestCitationChangeEndToEnd: a domain scanned twice against two engines,
// a chat model and Perplexity (which reports its sources), whose citation
// rates move by different amounts; a webhook with the default
// min_citation_change hears of both changes, one with 40 points only of
// the larger, and both of each scan's end with its figures.
func TestCitationChangeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	engine.Key = "sk-test"
	t.Setenv("AIVIS_TEST_ENGINE_KEY", "sk-test")
	const cites, plain = "Acme (https://acme.invalid/skates) is the one to buy.", "Acme is the one to buy."
	// Perplexity's answers report two sources each: the domain's page and
	// a competitor's, or two competitors'.
	ours := probefake.Reply{Text: plain, Sources: []probefake.Source{{URL: "https://acme.invalid/skates", Title: "Acme skates"},
		{URL: "https://globex.example/skates", Title: "Globex"}}}
	theirs := probefake.Reply{Text: plain, Sources: []probefake.Source{{URL: "https://globex.example/skates", Title: "Globex"},
		{URL: "https://initech.example/", Title: "Initech"}}}
	engine.Answer("model-a", cites)
	engine.Script("sonar", theirs)
	cfg := writeConfig(t, dir, map[string]any{"engines": []map[string]any{
		{"label": "Alpha", "base_url": engine.URL(), "model": "model-a", "api_key_env": "AIVIS_TEST_ENGINE_KEY", "concurrency": 2},
		{"label": "Beta", "kind": "perplexity", "base_url": engine.Root(), "model": "sonar", "api_key_env": "AIVIS_TEST_ENGINE_KEY",
			"concurrency": 2}}})
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")

	hook := func(rc *hookReceiver, minCitation *int) client.Webhook {
		t.Helper()
		var wh client.Webhook
		r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: jsonBody(client.CreateWebhook{Domain: "acme.invalid",
			Events: []string{"citation_change", "scan_completed"}, URL: rc.URL, MinCitationChange: minCitation})})
		r.decode(t, &wh)
		if r.Status != 201 {
			t.Fatalf("webhook: %d %s", r.Status, r.Body)
		}
		rc.mu.Lock()
		rc.secrets = []string{wh.Secret}
		rc.mu.Unlock()
		return wh
	}
	all, strict := newHookReceiver(t), newHookReceiver(t)
	forty := 40
	whAll, whStrict := hook(all, nil), hook(strict, &forty)
	if whAll.MinCitationChange != 10 || whStrict.MinCitationChange != 40 {
		t.Fatalf("min_citation_change %d and %d, want the default 10 and 40", whAll.MinCitationChange, whStrict.MinCitationChange)
	}
	r := s.do(t, req{method: "PATCH", path: "/v1/webhooks/" + whStrict.ID, header: bearer(k), body: `{"min_citation_change": 101}`})
	if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), `"field":"min_citation_change"`) {
		t.Fatalf("min_citation_change 101: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Competitors: []string{"Globex", "Initech"}, Prompts: []string{"Which rocket skates should I buy?"}})})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	// 7 prompts asked 3 times: 21 answers an engine (TestScanEndToEnd).
	// Alpha cites the domain in all 21, Beta in none: none of its 42
	// sources is the domain's.
	first := completedScan(t, s, k, "acme.invalid")
	// Then Alpha cites it in 1 answer of 2 in turn (11 of 21) and Beta in
	// 1 of 3 (7 of 21, by a source: 7 of its 42 sources): Alpha 11/21 -
	// 21/21 = -47.62 points, Beta 7/21 - 0/21 = +33.33.
	engine.Answer("model-a", cites, plain)
	engine.Script("sonar", ours, theirs, theirs)
	second := completedScan(t, s, k, "acme.invalid")

	share := func(hits int) *events.Rate { return &events.Rate{Value: float64(hits) / 42, Hits: hits, Of: 42} }
	completed := func(sc client.Scan, alpha, beta int) events.ScanCompletedData {
		var res visibility.ScanResult
		if err := json.Unmarshal(sc.Result, &res); err != nil {
			t.Fatal(err)
		}
		return events.ScanCompletedData{ScanID: sc.ID, Domain: "acme.invalid", VisibilityScore: res.VisibilityScore,
			Sentiment: res.Sentiment, ReadinessScore: res.ReadinessScore, CitationRate: &events.Rate{
				// Two surfaces: the mean of theirs (docs/visibility.md).
				Value: (float64(alpha)/21 + float64(beta)/21) / 2, Hits: alpha + beta, Of: 42}, SourceShare: share(beta),
			OverviewPresence: &events.Rate{Value: 1, Hits: 42, Of: 42}, Engines: []events.EngineCitations{
				{Label: "Alpha", Kind: "openai-chat", Surface: "model", CitationRate: events.Rate{Value: float64(alpha) / 21, Hits: alpha, Of: 21},
					OverviewPresence: events.Rate{Value: 1, Hits: 21, Of: 21}},
				{Label: "Beta", Kind: "perplexity", Surface: "search_api", CitationRate: events.Rate{Value: float64(beta) / 21, Hits: beta, Of: 21},
					SourceShare: share(beta), OverviewPresence: events.Rate{Value: 1, Hits: 21, Of: 21}}}}
	}
	change := func(label, kind string, hits, previous int, points float64) events.CitationChangeData {
		surface := map[string]string{"openai-chat": "model", "perplexity": "search_api"}[kind]
		return events.CitationChangeData{Domain: "acme.invalid", Engine: label, Kind: kind, Surface: surface,
			CitationRate: events.Rate{Value: float64(hits) / 21, Hits: hits, Of: 21}, PreviousCitationRate: events.Rate{
				Value: float64(previous) / 21, Hits: previous, Of: 21}, CitationChange: points, ScanID: second.ID, PreviousScanID: first.ID}
	}
	ends := map[string]events.ScanCompletedData{first.ID: completed(first, 21, 0), second.ID: completed(second, 11, 7)}
	// Alpha reports no sources; Beta's share of sources goes from 0 of 42
	// to 7 of 42.
	alpha, beta := change("Alpha", "openai-chat", 11, 21, -47.62), change("Beta", "perplexity", 7, 0, 33.33)
	beta.SourceShare, beta.PreviousSourceShare = share(7), share(0)

	// What each receiver was sent, by kind; the scans' ends must both
	// come, and come last of their scans.
	received := func(rc *hookReceiver) (changes []events.CitationChangeData, done map[string]events.ScanCompletedData, ids map[string]string) {
		rc.mu.Lock()
		evs := append([]webhook.Event(nil), rc.events...)
		rc.mu.Unlock()
		done, ids = map[string]events.ScanCompletedData{}, map[string]string{}
		for _, ev := range evs {
			switch ev.Event {
			case "citation_change":
				var d events.CitationChangeData
				json.Unmarshal(ev.Data, &d)
				changes = append(changes, d)
				ids[d.Engine] = ev.ID
			case "scan_completed":
				var d events.ScanCompletedData
				json.Unmarshal(ev.Data, &d)
				done[d.ScanID] = d
			}
		}
		return changes, done, ids
	}
	waitFor(t, "both changes and both scans' ends at the default webhook", func() bool {
		changes, done, _ := received(all)
		return len(changes) == 2 && len(done) == 2
	})
	changes, done, ids := received(all)
	if !reflect.DeepEqual(done, ends) {
		t.Errorf("scan_completed %+v\nwant %+v", done, ends)
	}
	if got := map[string]events.CitationChangeData{changes[0].Engine: changes[0], changes[1].Engine: changes[1]}; !reflect.DeepEqual(got,
		map[string]events.CitationChangeData{"Alpha": alpha, "Beta": beta}) {
		t.Errorf("citation_change %+v\nwant %+v and %+v", changes, alpha, beta)
	}
	// The strict webhook: Beta's change is under its minimum. Once the
	// fan-out has handled that event, the deliveries it made are listed:
	// the strict webhook has none for it, so it can never arrive.
	waitFor(t, "Alpha's change and the second scan's end at the strict webhook", func() bool {
		_, done, ids := received(strict)
		_, ended := done[second.ID]
		return ended && ids["Alpha"] != ""
	})
	fannedOut(t, s, k, ids["Beta"])
	if deliveredTo(t, s, k, whStrict.ID, ids["Beta"]) || !deliveredTo(t, s, k, whAll.ID, ids["Beta"]) {
		t.Errorf("Beta's change (+33.33 points) delivered to the webhook of 40 points, or not to the one of 10")
	}
	if changes, _, _ := received(strict); len(changes) != 1 || !reflect.DeepEqual(changes[0], alpha) || strict.got(ids["Beta"]) {
		t.Errorf("the strict webhook received %+v", changes)
	}
	if all.invalid+strict.invalid != 0 {
		t.Errorf("%d deliveries failed verification", all.invalid+strict.invalid)
	}
}
