package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// TestDomainMarkets: a monitored domain's markets through the binary:
// kept normalised, a repeat once, refused past the tier's cap (Starter 1)
// and when not a market; a scan asks the engine every prompt in each
// market (a chat model, asked in the prompt) and gives figures per engine
// and market, per market and per surface, and answers that say their
// market and surface.
func TestDomainMarkets(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	// The model names the brand when asked in German only.
	engine.Answer("fake-model", "Globex is the one to buy.")
	engine.AnswerTo("fake-model", "Answer in German, for someone in Germany.", "Acme ist die beste Wahl.")
	cfg := writeConfig(t, dir, map[string]any{"engines": []map[string]any{
		{"label": "Chat", "base_url": engine.URL(), "model": "fake-model", "concurrency": 2}}})
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	starter := newKey(t, dir, newAccount(t, dir, "starter", false).ID)
	s := start(t, dir, "--config", cfg)

	two := `[{"country":"de","language":"de"},{"country":"US","language":"en"},{"country":"DE","language":"de"}]`
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(starter), body: `{"domain":"acme.invalid","markets":` + two + `}`}); r.Status != 403 || r.errorCode(t) != "MARKET_LIMIT_REACHED" {
		t.Errorf("two markets on Starter: %d %s", r.Status, r.Body)
	}
	var one client.MonitoredDomain
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(starter), body: `{"domain":"acme.invalid","markets":[{"country":"gb","language":"en"}]}`}); r.Status != 201 {
		t.Errorf("one market on Starter: %d %s", r.Status, r.Body)
	} else if r.decode(t, &one); !slices.Equal(one.Markets, []client.Market{{Country: "GB", Language: "en"}}) {
		t.Errorf("one market: %+v", one.Markets)
	}
	for _, bad := range []string{`[{"country":"XX","language":"de"}]`, `[{"country":"DE","language":"de-AT"}]`, `[{"country":"DEU","language":"de"}]`, `[{"country":"DE"}]`} {
		r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: `{"domain":"acme.invalid","markets":` + bad + `}`})
		var e client.ErrorEnvelope
		r.decode(t, &e)
		if r.Status != 400 || len(e.Error.Details) != 1 || e.Error.Details[0].Field != "markets[0]" {
			t.Errorf("markets %s: %d %s", bad, r.Status, r.Body)
		}
	}
	var d client.MonitoredDomain
	s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: `{"domain":"acme.invalid","brands":["Acme"],"competitors":["Globex"],"markets":` + two + `}`}).decode(t, &d)
	want := []client.Market{{Country: "DE", Language: "de"}, {Country: "US", Language: "en"}}
	if !slices.Equal(d.Markets, want) {
		t.Fatalf("markets %+v, want %+v", d.Markets, want)
	}

	sc := completedScan(t, s, k, "acme.invalid")
	var res struct {
		Breakdown struct {
			Engines []struct {
				Label        string        `json:"label"`
				Surface      string        `json:"surface"`
				Market       client.Market `json:"market"`
				Localisation string        `json:"localisation"`
				Probes       int           `json:"probes"`
				Mention      rate          `json:"mention_rate"`
				Presence     rate          `json:"overview_presence"`
			} `json:"engines"`
			Markets []struct {
				Market  client.Market `json:"market"`
				Mention rate          `json:"mention_rate"`
			} `json:"markets"`
			Surfaces []struct {
				Surface string `json:"surface"`
				Mention rate   `json:"mention_rate"`
			} `json:"surfaces"`
			Overall struct {
				Mention rate `json:"mention_rate"`
			} `json:"overall"`
			Prompts []json.RawMessage `json:"prompts"`
			Runs    int               `json:"runs"`
		} `json:"breakdown"`
	}
	if err := json.Unmarshal(sc.Result, &res); err != nil {
		t.Fatal(err)
	}
	b := res.Breakdown
	n := len(b.Prompts) * b.Runs
	if n == 0 || len(b.Engines) != 2 {
		t.Fatalf("engines %+v", b.Engines)
	}
	// In Germany every answer names the brand; in the United States none.
	for i, e := range b.Engines {
		hits := map[int]int{0: n, 1: 0}[i]
		if e.Label != "Chat" || e.Market != want[i] || e.Surface != "model" || e.Localisation != "prompt" || e.Probes != n ||
			e.Mention != (rate{hits, n}) || e.Presence != (rate{n, n}) {
			t.Errorf("engine %d: %+v, want %d of %d mentions in %v", i, e, hits, n, want[i])
		}
	}
	if len(b.Markets) != 2 || b.Markets[0].Market != want[0] || b.Markets[0].Mention != (rate{n, n}) || b.Markets[1].Mention != (rate{0, n}) {
		t.Errorf("markets %+v", b.Markets)
	}
	if len(b.Surfaces) != 1 || b.Surfaces[0].Surface != "model" || b.Surfaces[0].Mention != (rate{n, 2 * n}) || b.Overall.Mention != (rate{n, 2 * n}) {
		t.Errorf("surfaces %+v, overall %+v", b.Surfaces, b.Overall)
	}
	// The engine was asked each prompt in each market, the market in the prompt.
	inGerman, inEnglish := 0, 0
	for _, p := range engine.Prompts() {
		switch {
		case strings.HasSuffix(p, "(Answer in German, for someone in Germany.)"):
			inGerman++
		case strings.HasSuffix(p, "(Answer in English, for someone in United States.)"):
			inEnglish++
		}
	}
	if inGerman != n || inEnglish != n {
		t.Errorf("prompts in German %d, in English %d, want %d each", inGerman, inEnglish, n)
	}
	answers := walk[client.ScanAnswer](t, s, k, "/v1/visibility/scans/"+sc.ID+"/answers?")
	if len(answers) != 2*n {
		t.Fatalf("%d answers", len(answers))
	}
	for i, an := range answers {
		if an.Surface != "model" || an.Market == nil || *an.Market != want[i/n] || an.Absent || an.Mentioned != (i < n) {
			t.Errorf("answer %d: surface %q market %v absent %v mentioned %v", i, an.Surface, an.Market, an.Absent, an.Mentioned)
		}
	}
	// Filtered by market (its case as it comes), and a market that is none refused.
	german := walk[client.ScanAnswer](t, s, k, "/v1/visibility/scans/"+sc.ID+"/answers?market=de-de")
	if len(german) != n || slices.ContainsFunc(german, func(a client.ScanAnswer) bool { return *a.Market != want[0] }) {
		t.Errorf("answers in de-DE: %d", len(german))
	}
	for _, bad := range []string{"de", "de-XX", "DE-de-at"} {
		if r := s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID + "/answers?market=" + bad, header: bearer(k)}); r.Status != 400 {
			t.Errorf("market=%s: %d %s", bad, r.Status, r.Body)
		}
	}

	// The history of each market: a reading per scan, its score blended
	// from the scan's readiness and the market's answers; the overall
	// history has none of them.
	all := walk[client.VisibilityReading](t, s, k, "/v1/visibility/history?domain=acme.invalid")
	for _, tc := range []struct {
		tag  string
		m    client.Market
		more bool // scores higher: the brand named
	}{{"de-DE", want[0], true}, {"en-us", want[1], false}} {
		hs := walk[client.VisibilityReading](t, s, k, "/v1/visibility/history?domain=acme.invalid&market="+tc.tag)
		if len(hs) != 1 || hs[0].Market == nil || *hs[0].Market != tc.m || hs[0].Source != "scan" || !hs[0].MeasuredAt.Equal(*sc.FinishedAt) ||
			hs[0].FormulaVersion == nil || *hs[0].FormulaVersion != 3 {
			t.Fatalf("history in %s: %+v", tc.tag, hs)
		}
		if tc.more != (hs[0].VisibilityScore > all[0].VisibilityScore) {
			t.Errorf("history in %s: score %d, sentiment %s; overall %d", tc.tag, hs[0].VisibilityScore, hs[0].Sentiment, all[0].VisibilityScore)
		}
	}
	if hs := walk[client.VisibilityReading](t, s, k, "/v1/visibility/history?domain=acme.invalid&market=fr-FR"); len(hs) != 0 {
		t.Errorf("a market no scan asked: %+v", hs)
	}
	for _, a := range all {
		if a.Market != nil {
			t.Errorf("the overall history holds a market's reading %+v", a)
		}
	}
	_, rows := readCSV(t, s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid&market=de-DE&format=csv", header: bearer(k)}))
	if len(rows) != 1 || rows[0][8] != "de-DE" {
		t.Errorf("the market's history as CSV: %q", rows)
	}
	if r := s.do(t, req{method: "GET", path: "/v1/visibility/history?domain=acme.invalid&market=germany", header: bearer(k)}); r.Status != 400 {
		t.Errorf("market=germany: %d %s", r.Status, r.Body)
	}

	// PATCH replaces them; [] removes them.
	var up client.MonitoredDomain
	s.do(t, req{method: "PATCH", path: "/v1/domains/" + d.ID, header: bearer(k), body: `{"markets":[{"country":"fr","language":"fr"}]}`}).decode(t, &up)
	if !slices.Equal(up.Markets, []client.Market{{Country: "FR", Language: "fr"}}) {
		t.Errorf("after PATCH: %+v", up.Markets)
	}
	s.do(t, req{method: "PATCH", path: "/v1/domains/" + d.ID, header: bearer(k), body: `{"markets":[]}`}).decode(t, &up)
	if up.Markets == nil || len(up.Markets) != 0 {
		t.Errorf("after PATCH []: %+v", up.Markets)
	}
}

// TestAccountDefaultMarket: an account's default market, set by the CLI
// (normalised; none clears it; one that is not a market refused), is the
// market of its domains added without any, seen by the running server at
// once; a domain that names its markets keeps them.
func TestAccountDefaultMarket(t *testing.T) {
	dir := t.TempDir()
	var a account
	cli(t, dir, &a, "account", "create", "--name", "Acme", "--tier", "professional", "--market", "de-de")
	var shown map[string]any
	cli(t, dir, &shown, "account", "set-market", a.ID, "de-AT")
	if shown["market"] != "de-AT" {
		t.Errorf("set-market shows %v", shown)
	}
	if msg := cliFails(t, dir, "account", "set-market", a.ID, "germany"); !strings.Contains(msg, "not a market") {
		t.Errorf("set-market germany: %s", msg)
	}
	k := newKey(t, dir, a.ID)
	s := start(t, dir, queueOnly...)
	create := func(body string) client.MonitoredDomain {
		t.Helper()
		var d client.MonitoredDomain
		if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: body}); r.Status != 201 {
			t.Fatalf("%s: %d %s", body, r.Status, r.Body)
		} else {
			r.decode(t, &d)
		}
		return d
	}
	if d := create(`{"domain":"one.example"}`); !slices.Equal(d.Markets, []client.Market{{Country: "AT", Language: "de"}}) {
		t.Errorf("a domain without markets: %+v, want the account's de-AT", d.Markets)
	}
	if d := create(`{"domain":"two.example","markets":[{"country":"US","language":"en"}]}`); !slices.Equal(d.Markets, []client.Market{{Country: "US", Language: "en"}}) {
		t.Errorf("a domain with its own markets: %+v", d.Markets)
	}
	cli(t, dir, nil, "account", "set-market", a.ID, "none")
	if d := create(`{"domain":"three.example"}`); len(d.Markets) != 0 {
		t.Errorf("after the default is cleared: %+v", d.Markets)
	}
}
