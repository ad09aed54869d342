package probe

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
)

// TestRunEveryKindInTwoMarkets: one scan over an engine of each of the
// eight kinds at once, in Germany (German) and the United States
// (English), each engine answering from the fake in its provider's shape.
// Each market reaches each engine as its API allows (gl and hl, location
// codes, a web search's user location, or the prompt), and the figures
// per engine and market, per market, per surface and over all are worked
// out by hand below.
func TestRunEveryKindInTwoMarkets(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "acme-login:key-right"
	de := Market{Country: "DE", Language: "de"}
	us := Market{Country: "US", Language: "en"}
	named := probefake.Reply{Text: "Acme ist die beste Wahl."}
	other := probefake.Reply{Text: "Globex is the best buy."}
	none := probefake.Reply{Text: "unseen", NoOverview: true}
	// Replies are taken in turn, one request at a time per engine: the
	// German market's first. Google shows no AI Overview in the United
	// States (SerpApi), nor AI Mode's answer in Germany (DataForSEO).
	replies := map[string][2]probefake.Reply{
		"chat": {named, other}, "responses": {named, other}, "perplexity": {named, other}, "claude": {named, other},
		"gemini": {named, other}, "grok-4": {named, other}, "google_ai_overview": {named, none}, "ai_mode": {none, other},
	}
	for model, r := range replies {
		f.Script(model, r[0], r[1])
	}
	engine := func(label, kind, model string) Engine {
		base := f.Root()
		switch kind {
		case KindOpenAIChat, KindOpenAIResponses:
			base = f.URL()
		case KindXAI:
			base = f.XAI()
		}
		return Engine{Label: label, Kind: kind, BaseURL: base, Model: model, APIKey: f.Key, Concurrency: 1}
	}
	engines := []Engine{engine("Chat", KindOpenAIChat, "chat"), engine("ChatGPT search", KindOpenAIResponses, "responses"),
		engine("Perplexity", KindPerplexity, "perplexity"), engine("Claude", KindAnthropic, "claude"), engine("Gemini", KindGemini, "gemini"),
		engine("Grok", KindXAI, "grok-4"), engine("AI Overviews", KindSerpAPI, "google_ai_overview"), engine("AI Mode", KindDataForSEO, "ai_mode")}
	p := &Prober{Client: &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond}, Runs: 1, MaxPrompts: 1, Engines: engines}
	s := Subject{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex"},
		Prompts: []Prompt{{Text: "Which rocket skates are best?", Intent: Custom}}, Markets: []Market{de, us}}
	res := p.Run(context.Background(), s)
	if len(res.Engines) != 16 || res.Overall.Failed != 0 {
		t.Fatalf("%d engine results, %d failed: %+v", len(res.Engines), res.Overall.Failed, res.Engines)
	}

	// Per engine and market: the engine's results in market order; each
	// engine's surface and localisation; one answer each, naming Acme in
	// Germany, absent where Google showed nothing.
	want := map[string]struct{ surface, localisation string }{
		"Chat": {SurfaceModel, LocalisePrompt}, "ChatGPT search": {SurfaceSearchAPI, LocaliseCountry},
		"Perplexity": {SurfaceSearchAPI, LocaliseCountry}, "Claude": {SurfaceSearchAPI, LocaliseCountry},
		"Gemini": {SurfaceSearchAPI, LocalisePrompt}, "Grok": {SurfaceSearchAPI, LocalisePrompt},
		"AI Overviews": {SurfaceSERP, LocaliseNative}, "AI Mode": {SurfaceSERP, LocaliseNative},
	}
	for i, e := range res.Engines {
		m := []Market{de, us}[i%2]
		w := want[e.Label]
		shown := !(e.Label == "AI Overviews" && m == us || e.Label == "AI Mode" && m == de)
		mentioned := m == de && shown
		if e.Label != engines[i/2].Label || e.Market == nil || *e.Market != m || e.Surface != w.surface || e.Localisation != w.localisation ||
			e.Probes != 1 || e.Mention != NewRate(b2i(mentioned), 1) || e.Presence != NewRate(b2i(shown), 1) {
			t.Errorf("result %d: %s in %v: surface %s, localisation %s, mention %+v, presence %+v; want %+v, mentioned %v, shown %v",
				i, e.Label, e.Market, e.Surface, e.Localisation, e.Mention, e.Presence, w, mentioned, shown)
		}
	}
	// Per market, over its surfaces as over all: in Germany the model 1 of
	// 1, the search APIs 5 of 5, the SERP 1 of 2 (AI Mode showed nothing):
	// mention (1 + 1 + 1/2) / 3 = 0.83333, 7 of 8, and so is the presence;
	// in the United States no mention, and the SERP shows 1 of 2: presence
	// 0.83333, 7 of 8.
	m := res.Markets
	if len(m) != 2 || m[0].Market != de || !near(m[0].Mention.Value, 2.5/3) || m[0].Mention.Hits != 7 || m[0].Mention.Of != 8 ||
		!near(m[0].Presence.Value, 2.5/3) || m[0].Presence.Hits != 7 ||
		m[1].Market != us || m[1].Mention.Value != 0 || m[1].Mention.Of != 8 || !near(m[1].Presence.Value, 2.5/3) || m[1].Presence.Hits != 7 {
		t.Errorf("markets %+v", res.Markets)
	}
	// Per surface, pooled: the model 1 of 2; the search APIs 5 of 10; the
	// SERP 1 of 4, shown in 2 of 4.
	surfaces := map[string][2]Rate{SurfaceModel: {NewRate(1, 2), NewRate(2, 2)}, SurfaceSearchAPI: {NewRate(5, 10), NewRate(10, 10)},
		SurfaceSERP: {NewRate(1, 4), NewRate(2, 4)}}
	if len(res.Surfaces) != 3 {
		t.Fatalf("surfaces %+v", res.Surfaces)
	}
	for i, sr := range res.Surfaces {
		if sr.Surface != Surfaces[i] || sr.Mention != surfaces[sr.Surface][0] || sr.Presence != surfaces[sr.Surface][1] {
			t.Errorf("surface %s: mention %+v presence %+v, want %+v", sr.Surface, sr.Mention, sr.Presence, surfaces[sr.Surface])
		}
	}
	// Over all, each surface weighing the same: mention (1/2 + 5/10 + 1/4)
	// / 3 = 0.41667 of the 16 answers' 7; presence (1 + 1 + 1/2) / 3 =
	// 0.83333, 14 of 16.
	o := res.Overall
	if !near(o.Mention.Value, 1.25/3) || o.Mention.Hits != 7 || o.Mention.Of != 16 || !near(o.Presence.Value, 2.5/3) || o.Presence.Hits != 14 {
		t.Errorf("overall mention %+v, presence %+v", o.Mention, o.Presence)
	}

	// How each market reached each engine. In the prompt: "(Answer in
	// German, for someone in Germany.)" for Chat, Gemini and Grok; "(Answer
	// in German.)" for the three that took the country as a user location;
	// nothing for SerpApi and DataForSEO, which took both as parameters.
	count := func(suffix string) int {
		return len(slices.DeleteFunc(f.Prompts(), func(p string) bool { return !strings.HasSuffix(p, suffix) }))
	}
	if n := count("(Answer in German, for someone in Germany.)"); n != 3 {
		t.Errorf("%d prompts name German and Germany, want 3 (Chat, Gemini, Grok)", n)
	}
	if n := count("(Answer in German.)"); n != 3 {
		t.Errorf("%d prompts ask for German alone, want 3 (the user location's kinds)", n)
	}
	countries := map[string]int{}
	for _, l := range f.Locations() {
		countries[l.Country]++
	}
	if countries["DE"] != 3 || countries["US"] != 3 {
		t.Errorf("user locations %v, want DE and US three times each", countries)
	}
	var serp []string
	for _, q := range f.SERPQueries() {
		serp = append(serp, q.Get("gl")+"/"+q.Get("hl"))
	}
	if !slices.Equal(serp, []string{"de/de", "us/en"}) {
		t.Errorf("SerpApi's gl/hl %v", serp)
	}
	var tasks []string
	for _, tk := range f.Tasks() {
		tasks = append(tasks, tk.LanguageCode+"/"+strconv.Itoa(tk.LocationCode))
	}
	if !slices.Equal(tasks, []string{"de/2276", "en/2840"}) {
		t.Errorf("DataForSEO's tasks %v", tasks)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
