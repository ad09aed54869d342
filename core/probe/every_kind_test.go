package probe

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
)

// TestRunEveryKind: one scan over an engine of each of the five kinds at
// once, each answering from the fake in its provider's shape, with the
// odd parts: a plain chat model reporting no sources, Perplexity's
// <think> block naming the brand where the answer does not, Anthropic's
// failed search, Gemini's missing grounding metadata and its redirect
// URIs. The figures per engine and over all are worked out by hand below.
func TestRunEveryKind(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "key-right"
	src := func(u string) probefake.Source { return probefake.Source{URL: u, Title: "page"} }
	cite := func(u, quote string) probefake.Citation {
		return probefake.Citation{URL: u, Title: "page", Quote: quote}
	}
	// Replies are taken in turn, one request at a time per engine.
	f.Script("chat", probefake.Reply{Text: a1}, probefake.Reply{Text: a3})
	f.Script("responses",
		probefake.Reply{Text: "Acme leads; Globex follows.",
			Sources:   []probefake.Source{src("https://acme.example/skates"), src("https://globex.example/")},
			Citations: []probefake.Citation{cite("https://acme.example/skates", "Acme leads")}},
		probefake.Reply{Text: "Globex is the best buy.",
			Sources:   []probefake.Source{src("https://globex.example/buy"), src("https://reviews.example/skates")},
			Citations: []probefake.Citation{cite("https://reviews.example/skates", "")}})
	f.Script("perplexity",
		probefake.Reply{Text: "Acme and Initech both make them.", Think: "Globex is out of stock.",
			Sources: []probefake.Source{src("https://docs.acme.example/x"), src("https://www.acme.example/y"), src("https://initech.example/")}},
		probefake.Reply{Text: "Initech is the one to buy.", Think: "Is Acme worth it? No.",
			Sources: []probefake.Source{src("https://initech.example/skates")}})
	f.Script("claude",
		probefake.Reply{Text: "Acme is great.", NoMetadata: true},
		probefake.Reply{Text: "See Acme for prices.",
			Citations: []probefake.Citation{cite("https://acme.example/pricing", "Acme for prices")}})
	f.Script("gemini",
		probefake.Reply{Text: "Acme is fine.", NoMetadata: true},
		probefake.Reply{Text: "Globex and Acme both sell skates.",
			Sources:   []probefake.Source{src("https://acme.example/skates"), src("https://globex.example/")},
			Citations: []probefake.Citation{cite("https://acme.example/skates", "Acme both sell")}})
	engine := func(label, kind, model string) Engine {
		base := f.Root()
		if kind == KindOpenAIChat || kind == KindOpenAIResponses {
			base = f.URL()
		}
		return Engine{Label: label, Kind: kind, BaseURL: base, Model: model, APIKey: "key-right", Concurrency: 1}
	}
	p := &Prober{Client: &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond}, Runs: 1, MaxPrompts: 2,
		Engines: []Engine{engine("Chat", KindOpenAIChat, "chat"), engine("ChatGPT search", KindOpenAIResponses, "responses"),
			engine("Perplexity", KindPerplexity, "perplexity"), engine("Claude", KindAnthropic, "claude"), engine("Gemini", KindGemini, "gemini")}}
	res := p.Run(context.Background(), subject)
	if f.Requests() != 10 || len(res.Engines) != 5 || res.Overall.Failed != 0 {
		t.Fatalf("%d requests, %+v", f.Requests(), res)
	}
	type want struct {
		mention, cited, reported, shareHits, shareOf int // of 2 answers
		domains                                      []DomainCount
		pages                                        []PageCount
	}
	wants := map[string]want{
		// a1 names Acme and its pricing page in the text; a3 does not.
		"Chat": {1, 1, 0, 0, 0, []DomainCount{}, []PageCount{{"https://acme.example/pricing", 1}}},
		// Both report sources: {acme, globex} and {globex, reviews}.
		"ChatGPT search": {1, 1, 2, 1, 4,
			[]DomainCount{{"globex.example", 2}, {"acme.example", 1}, {"reviews.example", 1}},
			[]PageCount{{"https://acme.example/skates", 1}}},
		// The <think> blocks are not the answer: the second names no Acme.
		// A subdomain is a source domain of its own, the domain's: {acme,
		// docs.acme, initech}, 2 of 3, then {initech}.
		"Perplexity": {1, 1, 2, 2, 4,
			[]DomainCount{{"initech.example", 2}, {"acme.example", 1}, {"docs.acme.example", 1}},
			[]PageCount{{"https://docs.acme.example/x", 1}, {"https://www.acme.example/y", 1}}},
		// The first search failed: no sources reported; the second cites
		// the pricing page.
		"Claude": {2, 1, 1, 1, 1, []DomainCount{{"acme.example", 1}}, []PageCount{{"https://acme.example/pricing", 1}}},
		// The first has no grounding metadata; the second's sources are
		// Google's redirects, their domains from the titles, and so no
		// pages of the domain's own.
		"Gemini": {2, 1, 1, 1, 2, []DomainCount{{"acme.example", 1}, {"globex.example", 1}}, []PageCount{}},
	}
	for _, e := range res.Engines {
		w, ok := wants[e.Label]
		if !ok {
			t.Fatalf("engine %q", e.Label)
		}
		if e.Probes != 2 || e.Mention.Hits != w.mention || e.Citation.Hits != w.cited || e.SourcesReported.Hits != w.reported {
			t.Errorf("%s: mention %d, cited %d, reported %d", e.Label, e.Mention.Hits, e.Citation.Hits, e.SourcesReported.Hits)
		}
		switch {
		case w.shareOf == 0 && e.SourceShare != nil:
			t.Errorf("%s: a share %+v without sources", e.Label, e.SourceShare)
		case w.shareOf > 0 && (e.SourceShare == nil || e.SourceShare.Hits != w.shareHits || e.SourceShare.Of != w.shareOf):
			t.Errorf("%s: share %+v, want %d of %d", e.Label, e.SourceShare, w.shareHits, w.shareOf)
		}
		if !reflect.DeepEqual(e.CitedDomains, w.domains) || !reflect.DeepEqual(e.CitedPages, w.pages) {
			t.Errorf("%s: cited domains %v, pages %v", e.Label, e.CitedDomains, e.CitedPages)
		}
	}
	// Over all ten answers: mentioned 7, cited 5 (one an engine), sources
	// reported 6; share (1 + 2 + 1 + 1) / (4 + 4 + 1 + 2) = 5/11.
	// Wilson(5, 11), z² = 3.8415: centre (5/11 + 3.8415/22) / (1 +
	// 3.8415/11) = 0.629159 / 1.349227 = 0.46631, half 1.95996/1.349227
	// × √((5/11)(6/11)/11 + 3.8415/484) = 1.452655 × 0.174574 =
	// 0.253597: [0.2127, 0.7199].
	o := res.Overall
	if o.Probes != 10 || o.Mention.Hits != 7 || o.Citation.Hits != 5 || o.Citation.Value != 0.5 || o.SourcesReported.Hits != 6 ||
		o.SourceShare == nil || o.SourceShare.Hits != 5 || o.SourceShare.Of != 11 ||
		!near(o.SourceShare.Interval.Low, 0.2127) || !near(o.SourceShare.Interval.High, 0.7199) {
		t.Errorf("overall: %+v, share %+v", o, o.SourceShare)
	}
	if want := []DomainCount{{"acme.example", 4}, {"globex.example", 3}, {"initech.example", 2}, {"docs.acme.example", 1}, {"reviews.example", 1}}; !reflect.DeepEqual(o.CitedDomains, want) {
		t.Errorf("cited domains %v", o.CitedDomains)
	}
	if want := []PageCount{{"https://acme.example/pricing", 2}, {"https://acme.example/skates", 1},
		{"https://docs.acme.example/x", 1}, {"https://www.acme.example/y", 1}}; !reflect.DeepEqual(o.CitedPages, want) {
		t.Errorf("cited pages %v", o.CitedPages)
	}
}
