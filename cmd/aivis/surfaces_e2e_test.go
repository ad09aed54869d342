package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/internal/browsertest"
)

// TestSurfacesAndMarketsEndToEnd: an xAI engine (a search API, asked the
// market in the prompt) and a SerpApi AI Overview engine (the page people
// see, asked the market as gl and hl), a domain in Germany and the United
// States; one scan, read per engine and market, per surface and per
// market through the API, the dashboard (a headless browser: the market
// switch) and the MCP server.
func TestSurfacesAndMarketsEndToEnd(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	// Grok names the brand when asked in German; Google shows an AI
	// Overview naming it for every other search, none for the rest.
	engine.AnswerTo("grok-4", "Answer in German, for someone in Germany.", "Acme ist die beste Wahl.")
	engine.Answer("grok-4", "Globex is the best buy.")
	engine.Script("google_ai_overview", probefake.Reply{Text: "Acme makes the safest rocket skates."}, probefake.Reply{Text: "unseen", NoOverview: true})
	cfg := writeConfig(t, dir, map[string]any{"engines": []map[string]any{
		{"label": "Grok", "kind": "xai", "base_url": engine.XAI(), "model": "grok-4", "api_key": "xai-test-key"},
		{"label": "AI Overviews", "kind": "serpapi", "base_url": engine.Root(), "model": "google_ai_overview", "api_key": "serp-test-key"}}})
	s := start(t, dir, "--config", cfg)
	run, text := ownerBrowser(t, browser, s, "Acme Skates", "owner@acme.example")
	var accounts []account
	cli(t, dir, &accounts, "account", "list")
	cli(t, dir, nil, "account", "set-tier", accounts[0].ID, "enterprise")
	k := newKey(t, dir, accounts[0].ID)

	want := []client.Market{{Country: "DE", Language: "de"}, {Country: "US", Language: "en"}}
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k),
		body: `{"domain":"acme.invalid","brands":["Acme"],"competitors":["Globex"],"markets":[{"country":"DE","language":"de"},{"country":"US","language":"en"}]}`}); r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	sc := completedScan(t, s, k, "acme.invalid")

	// The API: an entry per engine and market, each with its surface and
	// how it asked the market.
	type figures struct {
		Label        string         `json:"label"`
		Surface      string         `json:"surface"`
		Market       *client.Market `json:"market"`
		Localisation string         `json:"localisation"`
		Probes       int            `json:"probes"`
		Mention      rate           `json:"mention_rate"`
		Presence     rate           `json:"overview_presence"`
	}
	var res struct {
		Breakdown struct {
			Engines  []figures `json:"engines"`
			Surfaces []figures `json:"surfaces"`
			Markets  []figures `json:"markets"`
		} `json:"breakdown"`
	}
	if err := json.Unmarshal(sc.Result, &res); err != nil {
		t.Fatal(err)
	}
	b := res.Breakdown
	if len(b.Engines) != 4 {
		t.Fatalf("engines %+v", b.Engines)
	}
	n := b.Engines[0].Probes
	for i, e := range b.Engines {
		label, surface, how := "Grok", "search_api", "prompt"
		if i >= 2 {
			label, surface, how = "AI Overviews", "serp", "native"
		}
		if e.Label != label || e.Surface != surface || e.Localisation != how || e.Market == nil || *e.Market != want[i%2] || e.Probes != n {
			t.Errorf("engine %d: %+v", i, e)
		}
	}
	// Grok: every German answer names Acme, no English one. The page: an
	// overview for half the searches, each naming Acme.
	if b.Engines[0].Mention != (rate{n, n}) || b.Engines[1].Mention != (rate{0, n}) || b.Engines[0].Presence != (rate{n, n}) {
		t.Errorf("Grok: %+v, %+v", b.Engines[0], b.Engines[1])
	}
	if len(b.Surfaces) != 2 || b.Surfaces[0].Surface != "search_api" || b.Surfaces[1].Surface != "serp" ||
		b.Surfaces[1].Presence != (rate{n, 2 * n}) || b.Surfaces[1].Mention != (rate{n, 2 * n}) {
		t.Errorf("surfaces %+v", b.Surfaces)
	}
	if len(b.Markets) != 2 || *b.Markets[0].Market != want[0] || *b.Markets[1].Market != want[1] {
		t.Errorf("markets %+v", b.Markets)
	}
	var gl []string
	for _, q := range engine.SERPQueries() {
		if g := q.Get("gl"); !strings.Contains(strings.Join(gl, ","), g) {
			gl = append(gl, g)
		}
	}
	if strings.Join(gl, ",") != "de,us" {
		t.Errorf("SerpApi was asked for gl %v, want de then us", gl)
	}
	if german := walk[client.ScanAnswer](t, s, k, "/v1/visibility/scans/"+sc.ID+"/answers?market=de-DE"); len(german) != 2*n {
		t.Errorf("%d answers in de-DE, want %d", len(german), 2*n)
	}

	// MCP: the scan's figures, per surface and market.
	hc := &http.Client{Transport: bearerTransport{key: k.Key, next: s.HTTP.Transport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	out, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_scan_figures", Arguments: map[string]any{"scan_id": sc.ID}})
	if err != nil || out.IsError {
		t.Fatalf("get_scan_figures: %v %+v", err, out)
	}
	raw, _ := json.Marshal(out.StructuredContent)
	var viaMCP struct {
		Engines  []figures `json:"engines"`
		Surfaces []figures `json:"surfaces"`
		Markets  []figures `json:"markets"`
	}
	if err := json.Unmarshal(raw, &viaMCP); err != nil || len(viaMCP.Engines) != 4 || len(viaMCP.Surfaces) != 2 || len(viaMCP.Markets) != 2 ||
		viaMCP.Engines[2].Label != "AI Overviews" || *viaMCP.Engines[2].Market != want[0] || viaMCP.Engines[2].Presence != b.Engines[2].Presence {
		t.Errorf("the MCP figures %s, %v", raw, err)
	}

	// And a market's history and answers through MCP.
	out, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_visibility_history",
		Arguments: map[string]any{"domain": "acme.invalid", "market": "de-DE"}})
	raw, _ = json.Marshal(out.StructuredContent)
	var hist struct {
		Items []client.VisibilityReading `json:"items"`
	}
	if err != nil || out.IsError || json.Unmarshal(raw, &hist) != nil || len(hist.Items) != 1 || *hist.Items[0].Market != want[0] {
		t.Errorf("the German history through MCP: %v %s", err, raw)
	}
	out, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_answers",
		Arguments: map[string]any{"scan_id": sc.ID, "market": "en-US", "limit": 100}})
	raw, _ = json.Marshal(out.StructuredContent)
	var found struct {
		Items []client.ScanAnswer `json:"items"`
	}
	if err != nil || out.IsError || json.Unmarshal(raw, &found) != nil || len(found.Items) != 2*n ||
		slices.ContainsFunc(found.Items, func(a client.ScanAnswer) bool { return *a.Market != want[1] }) {
		t.Errorf("the answers in en-US through MCP: %v, %d", err, len(found.Items))
	}

	// The dashboard: every engine in each market, then the market switch.
	var rows [][]string
	run("figures", chromedp.Navigate(s.URL+"/domains/acme.invalid"), chromedp.WaitVisible(`#market`, chromedp.ByQuery),
		chromedp.Evaluate(rowsJS("#engines tbody tr"), &rows))
	if len(rows) != 4 || !strings.HasPrefix(rows[0][3], "de-DE") || !strings.HasPrefix(rows[3][3], "en-US") || rows[2][2] != "search page (SERP)" {
		t.Fatalf("the per-engine rows read %q", rows)
	}
	if s := text(`#surfaces tbody`); !strings.Contains(s, "search API") || !strings.Contains(s, "search page (SERP)") {
		t.Errorf("the surfaces read %q", s)
	}
	run("switch", chromedp.SetValue(`#market`, "de-DE", chromedp.ByQuery), browsertest.Leaving(chromedp.Submit(`#market`, chromedp.ByQuery)),
		chromedp.WaitReady(`#market option[selected]`, chromedp.ByQuery), chromedp.Poll(`document.readyState === "complete"`, nil),
		chromedp.Evaluate(rowsJS("#engines tbody tr"), &rows))
	if len(rows) != 2 || !strings.HasPrefix(rows[0][3], "de-DE") || !strings.HasPrefix(rows[1][3], "de-DE") {
		t.Errorf("in de-DE the rows read %q", rows)
	}
	if f := text(`#engines tfoot th`); f != "All engines in de-DE" {
		t.Errorf("the total reads %q", f)
	}
}

// bearerTransport adds an API key as a bearer token.
type bearerTransport struct {
	key  string
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}
