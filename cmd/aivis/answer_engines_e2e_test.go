package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// TestAnswerEnginesEndToEnd: engines of three kinds (OpenAI's Responses
// API with web search, Anthropic's Messages API with web search, Gemini
// with Google Search), each the fake in its provider's shape, scan a
// domain; the scan's figures are those worked out below, its answers are
// read back through the API with their sources, and a second scan in
// which one engine stops citing the domain sends citation_change for that
// engine alone to a webhook.
func TestAnswerEnginesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	engine.Key = "sk-test"
	t.Setenv("AIVIS_TEST_ENGINE_KEY", "sk-test")
	kinds := []struct{ label, kind, base, model string }{
		{"ChatGPT search", "openai-responses", engine.URL(), "gpt-search"},
		{"Claude", "anthropic", engine.Root(), "claude"},
		{"Gemini", "gemini", engine.Root(), "gemini"},
	}
	var engines []map[string]any
	for _, k := range kinds {
		engines = append(engines, map[string]any{"label": k.label, "kind": k.kind, "base_url": k.base, "model": k.model,
			"api_key_env": "AIVIS_TEST_ENGINE_KEY", "concurrency": 2, "search_price_per_1k": 10})
	}
	cited := probefake.Reply{Text: "Acme makes the best rocket skates. Reviewers agree they are excellent.",
		Queries: []string{"best rocket skates"},
		Sources: []probefake.Source{{URL: "https://acme.invalid/skates", Title: "Acme skates"}, {URL: "https://reviews.example/skates", Title: "Skate reviews"}},
		Citations: []probefake.Citation{{URL: "https://acme.invalid/skates", Title: "Acme skates", Quote: "Acme makes the best rocket skates."},
			{URL: "https://reviews.example/skates", Title: "Skate reviews", Quote: "Reviewers agree they are excellent."}}}
	uncited := probefake.Reply{Text: "Globex sells rocket skates too.", Queries: []string{"rocket skates"},
		Sources:   []probefake.Source{{URL: "https://globex.example/", Title: "Globex"}},
		Citations: []probefake.Citation{{URL: "https://globex.example/", Title: "Globex", Quote: "Globex sells rocket skates too."}}}
	reviewed := probefake.Reply{Text: "Acme is well reviewed.", Queries: []string{"acme reviews"},
		Sources:   []probefake.Source{{URL: "https://reviews.example/acme", Title: "Acme reviewed"}},
		Citations: []probefake.Citation{{URL: "https://reviews.example/acme", Title: "Acme reviewed", Quote: "Acme is well reviewed."}}}
	// Gemini searched but left its grounding metadata out: no sources
	// reported, which is not zero citations.
	unreported := probefake.Reply{Text: "Acme is a popular brand of rocket skates.", NoMetadata: true}
	engine.Script("gpt-search", cited, uncited)
	engine.Script("claude", reviewed)
	engine.Script("gemini", unreported)

	cfgFile := writeConfig(t, dir, map[string]any{"engines": engines})
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", cfgFile, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")
	rc := newHookReceiver(t)
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: fmt.Sprintf(`{"domain":"acme.invalid","events":["citation_change","scan_completed"],"url":%q,"min_citation_change":10}`, rc.URL)})
	var hook client.Webhook
	r.decode(t, &hook)
	if r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Competitors: []string{"Globex", "Initech"}, Prompts: []string{"Which rocket skates should I buy?"}})})
	if r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	first := completedScan(t, s, k, "acme.invalid")

	// 7 prompts (the owner's, 4 comparisons, 2 branded) asked 3 times:
	// 21 answers an engine. ChatGPT search's two replies come in turn: 11
	// cite acme.invalid (sources acme.invalid and reviews.example), 10 cite
	// globex.example alone. Claude's 21 cite reviews.example alone;
	// Gemini's 21 report no sources.
	//   citation rate: ChatGPT 11/21, Claude 0/21, Gemini 0/21; overall 11/63
	//   source share: ChatGPT 11 of 11×2+10 = 32; Claude 0 of 21; Gemini
	//   none (null); overall 11 of 53
	var res struct {
		Breakdown struct {
			FormulaVersion int `json:"formula_version"`
			Overall        struct {
				Citation     rate  `json:"citation_rate"`
				SourceShare  *rate `json:"source_share"`
				CitedDomains []struct {
					Domain string `json:"domain"`
					Count  int    `json:"count"`
				} `json:"cited_domains"`
			} `json:"overall"`
			Engines []struct {
				Label           string `json:"label"`
				Kind            string `json:"kind"`
				Citation        rate   `json:"citation_rate"`
				SourceShare     *rate  `json:"source_share"`
				SourcesReported rate   `json:"sources_reported"`
			} `json:"engines"`
		} `json:"breakdown"`
	}
	if err := json.Unmarshal(first.Result, &res); err != nil {
		t.Fatalf("%v: %s", err, first.Result)
	}
	b := res.Breakdown
	if b.FormulaVersion != 3 || b.Overall.Citation != (rate{11, 63}) || b.Overall.SourceShare == nil || *b.Overall.SourceShare != (rate{11, 53}) {
		t.Fatalf("overall: %s", first.Result)
	}
	want := map[string]struct {
		kind          string
		cited, shared rate
		reported      int
	}{
		"ChatGPT search": {"openai-responses", rate{11, 21}, rate{11, 32}, 21},
		"Claude":         {"anthropic", rate{0, 21}, rate{0, 21}, 21},
		"Gemini":         {"gemini", rate{0, 21}, rate{}, 0},
	}
	for _, e := range b.Engines {
		w := want[e.Label]
		if e.Kind != w.kind || e.Citation != w.cited || e.SourcesReported.Hits != w.reported {
			t.Errorf("%s: %+v, want %+v", e.Label, e, w)
		}
		if (w.reported == 0) != (e.SourceShare == nil) || (e.SourceShare != nil && *e.SourceShare != w.shared) {
			t.Errorf("%s: source share %+v, want %+v", e.Label, e.SourceShare, w.shared)
		}
	}
	// The competition: reviews.example in 11 + 21 answers, acme.invalid in
	// 11, globex.example in 10.
	var top []string
	for _, d := range b.Overall.CitedDomains {
		top = append(top, fmt.Sprintf("%s %d", d.Domain, d.Count))
	}
	if got := strings.Join(top, ", "); got != "reviews.example 32, acme.invalid 11, globex.example 10" {
		t.Errorf("cited domains %s", got)
	}

	checkAnswers(t, s, k, first.ID)

	// The second scan: ChatGPT search no longer cites the domain (0/21, a
	// fall of 52.38 points); Claude's and Gemini's figures stay.
	engine.Script("gpt-search", uncited)
	second := completedScan(t, s, k, "acme.invalid")
	var change struct {
		Domain         string  `json:"domain"`
		Engine         string  `json:"engine"`
		Kind           string  `json:"kind"`
		CitationRate   rate    `json:"citation_rate"`
		Previous       rate    `json:"previous_citation_rate"`
		CitationChange float64 `json:"citation_change"`
		ScanID         string  `json:"scan_id"`
		PreviousScanID string  `json:"previous_scan_id"`
	}
	waitFor(t, "the second scan's scan_completed and a citation_change", func() bool {
		return rc.has("scan_completed", second.ID) && rc.has("citation_change", second.ID)
	})
	// A fence: the webhook's test event is created after the scan's
	// events; once it has come, any other citation_change would have too.
	if r := s.do(t, req{method: "POST", path: "/v1/webhooks/" + hook.ID + "/test", header: bearer(k)}); r.Status >= 300 {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	waitFor(t, "the webhook's test event", func() bool { return len(rc.all("webhook_test")) > 0 })
	changes := rc.all("citation_change")
	if len(changes) != 1 {
		t.Fatalf("%d citation_change events, want 1: %s", len(changes), changes)
	}
	if err := json.Unmarshal(changes[0], &change); err != nil {
		t.Fatal(err)
	}
	if change.Domain != "acme.invalid" || change.Engine != "ChatGPT search" || change.Kind != "openai-responses" ||
		change.CitationRate != (rate{0, 21}) || change.Previous != (rate{11, 21}) || math.Abs(change.CitationChange+52.38) > 0.005 ||
		change.ScanID != second.ID || change.PreviousScanID != first.ID {
		t.Errorf("citation_change %s", changes[0])
	}
}

// rate is a figure's hits of its answers or sources, as the API gives it.
type rate struct {
	Hits int `json:"hits"`
	Of   int `json:"of"`
}

// has says whether an event of this kind whose data names the scan came.
func (h *hookReceiver) has(kind, scanID string) bool {
	for _, d := range h.all(kind) {
		if strings.Contains(string(d), `"scan_id":"`+scanID+`"`) {
			return true
		}
	}
	return false
}

// all is the data of the events of one kind that came, in order.
func (h *hookReceiver) all(kind string) []json.RawMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []json.RawMessage
	for _, ev := range h.events {
		if ev.Event == kind {
			out = append(out, ev.Data)
		}
	}
	return out
}

// checkAnswers reads the first scan's answers back through the API: the
// cited ones of ChatGPT search, page by page, with the sources and
// citations the engine gave, and Gemini's, which report no sources.
func checkAnswers(t *testing.T, s *server, k key, scanID string) {
	t.Helper()
	path := "/v1/visibility/scans/" + scanID + "/answers"
	var got []client.ScanAnswer
	cursor := ""
	for pages := 0; ; pages++ {
		var page client.List[client.ScanAnswer]
		r := s.do(t, req{method: "GET", path: path + "?engine=ChatGPT+search&cited=true&limit=5&cursor=" + cursor, header: bearer(k)})
		r.decode(t, &page)
		if r.Status != 200 || pages > 5 {
			t.Fatalf("answers: %d %s", r.Status, r.Body)
		}
		got = append(got, page.Items...)
		if !page.HasMore || page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(got) != 11 {
		t.Fatalf("%d cited answers of ChatGPT search, want 11", len(got))
	}
	for _, a := range got {
		if a.Engine != "ChatGPT search" || a.Kind != "openai-responses" || !a.Cited || !a.Mentioned || !a.SourcesReported ||
			len(a.Sources) != 2 || a.Sources[0].Domain != "acme.invalid" || len(a.Citations) != 2 || a.Citations[0].Start == nil ||
			a.Text[*a.Citations[0].Start:*a.Citations[0].End] != "Acme makes the best rocket skates." || len(a.Queries) != 1 {
			t.Fatalf("answer %+v", a)
		}
	}
	var gemini client.List[client.ScanAnswer]
	r := s.do(t, req{method: "GET", path: path + "?engine=Gemini&limit=100", header: bearer(k)})
	r.decode(t, &gemini)
	if r.Status != 200 || len(gemini.Items) != 21 || gemini.Items[0].SourcesReported || gemini.Items[0].Cited {
		t.Fatalf("Gemini's answers: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: path + "?cited=perhaps", header: bearer(k)}); r.Status != 400 {
		t.Errorf("a bad filter: %d %s", r.Status, r.Body)
	}
}
