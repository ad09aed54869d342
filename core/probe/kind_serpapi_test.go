package probe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
)

const serpKey = "serp-key-0123456789abcdef"

// serpReply is an AI Overview with a heading, a list with a nested list
// and three citations, one of a nested item.
var serpReply = probefake.Reply{
	Text: "Acme makes the fastest rocket skates.\n\n# Top picks\n\n- Acme: fast and light\n  - Acme Pro: for racers\n- Globex: cheap\n\nReviewers rank Globex second.",
	Sources: []probefake.Source{{URL: "https://acme.example/skates", Title: "Acme skates"},
		{URL: "https://www.reviews.example/best", Title: "Best skates"}},
	Citations: []probefake.Citation{{URL: "https://acme.example/skates", Quote: "fastest rocket"},
		{URL: "https://www.reviews.example/best", Quote: "for racers"},
		{URL: "https://globex.example/", Quote: "Globex second"}},
}

// serpText is serpReply as the adapter reads it.
const serpText = "Acme makes the fastest rocket skates.\n\nTop picks\n\n- Acme: fast and light\n  - Acme Pro: for racers\n- Globex: cheap\n\nReviewers rank Globex second."

// serpWant is the answer of serpReply: each citation spans the block (the
// list item) it supports, each page once though SerpApi gives it twice.
func serpWant(searches int) Answer {
	acme, reviews, globex := "https://acme.example/skates", "https://www.reviews.example/best", "https://globex.example/"
	at := func(s string) (int, int) { i := strings.Index(serpText, s); return i, i + len(s) }
	c := func(u, title, domain, quote string) Citation {
		start, end := at(quote)
		return Citation{URL: u, Title: title, Domain: domain, Start: start, End: end, Text: quote}
	}
	return Answer{Text: serpText, SourcesReported: true, Searches: searches, Attempts: 1,
		Sources: []Source{{URL: acme, Title: "Acme skates", Domain: "acme.example"},
			{URL: reviews, Title: "Best skates", Domain: "reviews.example"}, {URL: globex, Domain: "globex.example"}},
		Citations: []Citation{c(acme, "Acme skates", "acme.example", "Acme makes the fastest rocket skates."),
			c(reviews, "Best skates", "reviews.example", "Acme Pro: for racers"),
			c(globex, "", "globex.example", "Reviewers rank Globex second.")}}
}

func serpEngine(f *probefake.Fake, model string) Engine {
	return Engine{Label: model, Kind: KindSerpAPI, BaseURL: f.Root(), Model: model, APIKey: serpKey, SearchPricePer1K: 15}
}

// TestSerpAPIOverview: Google's page with its AI Overview inline, then
// deferred to a page_token (a second search, made at once with engine,
// page_token and the key alone). The related question's overview is not
// the page's. A market is asked as gl and hl, the prompt as it is.
func TestSerpAPIOverview(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = serpKey
	deferred := serpReply
	deferred.SERP = probefake.SERPDeferred
	f.Script("google_ai_overview", serpReply, deferred)
	c := &Client{HTTP: http.DefaultClient}
	e := serpEngine(f, "google_ai_overview")
	for _, searches := range []int{1, 2} {
		a, err := c.Complete(context.Background(), e, Request{Prompt: "best rocket skates", Market: Market{Country: "GB", Language: "en"}})
		if err != nil {
			t.Fatal(err)
		}
		if want := serpWant(searches); !reflect.DeepEqual(a, want) {
			t.Errorf("%d searches: answer\n%+v, want\n%+v", searches, a, want)
		}
		if cost := e.Cost(a); !near(cost, float64(searches)*0.015) {
			t.Errorf("%d searches cost %v", searches, cost)
		}
	}
	qs := f.SERPQueries()
	if len(qs) != 3 {
		t.Fatalf("queries %v", qs)
	}
	for _, q := range qs[:2] {
		if q.Get("engine") != "google" || q.Get("q") != "best rocket skates" || q.Get("gl") != "gb" || q.Get("hl") != "en" || q.Get("no_cache") != "true" {
			t.Errorf("the search %v", q)
		}
	}
	if q := qs[2]; q.Get("engine") != "google_ai_overview" || q.Get("page_token") == "" || len(q) != 2 {
		t.Errorf("the follow-up %v", q)
	}
	if p := f.Prompts(); len(p) != 2 || p[0] != "best rocket skates" {
		t.Errorf("prompts %q", p)
	}
}

// TestSerpAPIAbsent: a page without an overview, one whose search found
// nothing (200 with an error), and one whose overview failed are answers
// without one (Absent), one search each, not failures.
func TestSerpAPIAbsent(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = serpKey
	f.Script("google_ai_overview", probefake.Reply{Text: "unseen", NoOverview: true}, probefake.Reply{Text: "unseen", SERP: probefake.SERPNoResults},
		probefake.Reply{Text: "unseen", SERP: probefake.SERPFailed})
	f.Script("google_ai_mode", probefake.Reply{Text: "unseen", SERP: probefake.SERPNoResults})
	c := &Client{HTTP: http.DefaultClient, MaxAttempts: 1}
	for _, model := range []string{"google_ai_overview", "google_ai_overview", "google_ai_overview", "google_ai_mode"} {
		a, err := c.Ask(context.Background(), serpEngine(f, model), "best rocket skates")
		if err != nil || !reflect.DeepEqual(a, Answer{Absent: true, Searches: 1, Attempts: 1}) {
			t.Errorf("%s: %+v %v", model, a, err)
		}
	}
	if n := f.Requests(); n != 4 {
		t.Errorf("%d requests", n)
	}
}

// TestSerpAPIFollowUp: the follow-up fails as any answer: a token expired
// (an overview SerpApi could not make) or a 503 is retried, the next
// attempt a new search; a token refused (a wrong key) is not.
func TestSerpAPIFollowUp(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = serpKey
	expired, deferred := serpReply, serpReply
	expired.SERP, deferred.SERP = probefake.SERPExpired, probefake.SERPDeferred
	// The first follow-up fails (503), the second's token has expired.
	f.Script("google_ai_overview", deferred, expired, deferred)
	f.FailWith("page_token", probefake.Failure{Status: 503})
	c := &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond}
	e := serpEngine(f, "google_ai_overview")
	a, err := c.Ask(context.Background(), e, "best rocket skates")
	want := serpWant(2)
	want.Attempts = 3
	if err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("after an expired token and a 503: %+v %v", a, err)
	}
	if n := f.Requests(); n != 6 {
		t.Errorf("%d requests, want 3 searches and 3 follow-ups", n)
	}

	f.Script("google_ai_overview", expired)
	_, err = (&Client{HTTP: http.DefaultClient, MaxAttempts: 1}).Ask(context.Background(), e, "best rocket skates")
	if fl := FailureOf(err); errors.Is(err, ErrPermanent) || fl.Category != FailProvider || fl.Status != 200 {
		t.Errorf("an expired token: %v (%+v)", err, fl)
	}
	f.Script("google_ai_overview", deferred)
	f.FailWith("page_token", probefake.Failure{Status: 401})
	_, err = c.Ask(context.Background(), e, "best rocket skates")
	if fl := FailureOf(err); !errors.Is(err, ErrPermanent) || fl.Category != FailRefusedKey || strings.Contains(err.Error(), serpKey) {
		t.Errorf("a follow-up refused: %v (%+v)", err, fl)
	}
}

// TestSerpAPIModeAndCopilot: AI Mode's blocks at the top level, or its
// markdown alone; a market asked as gl and hl. Copilot's header before
// its blocks; it takes no market, so the prompt asks for it.
func TestSerpAPIModeAndCopilot(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = serpKey
	markdownOnly := serpReply
	markdownOnly.NoMetadata = true
	f.Script("google_ai_mode", serpReply, markdownOnly)
	copilot := serpReply
	copilot.Text = "# Rocket skates\n\n" + serpReply.Text
	f.Script("bing_copilot", copilot)
	c := &Client{HTTP: http.DefaultClient}
	de := Market{Country: "DE", Language: "de"}

	mode := serpEngine(f, "google_ai_mode")
	a, err := c.Complete(context.Background(), mode, Request{Prompt: "beste Rollschuhe", Market: de})
	if want := serpWant(1); err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("AI Mode: %+v %v", a, err)
	}
	a, err = c.Complete(context.Background(), mode, Request{Prompt: "beste Rollschuhe", Market: de})
	if err != nil || a.Text != serpReply.Text || a.SourcesReported || a.Sources != nil || a.Citations != nil || a.Absent {
		t.Errorf("AI Mode's markdown: %+v %v", a, err)
	}

	pilot := serpEngine(f, "bing_copilot")
	a, err = c.Complete(context.Background(), pilot, Request{Prompt: "best rocket skates", Market: de})
	want := serpWant(1)
	want.Text = "Rocket skates\n\n" + serpText
	for i := range want.Citations {
		want.Citations[i].Start += len("Rocket skates\n\n")
		want.Citations[i].End += len("Rocket skates\n\n")
	}
	if err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("Copilot: %+v %v", a, err)
	}

	qs := f.SERPQueries()
	for _, q := range qs[:2] {
		if q.Get("engine") != "google_ai_mode" || q.Get("gl") != "de" || q.Get("hl") != "de" || q.Get("q") != "beste Rollschuhe" {
			t.Errorf("AI Mode's query %v", q)
		}
	}
	if q := qs[2]; q.Get("engine") != "bing_copilot" || q.Has("gl") || q.Has("hl") ||
		q.Get("q") != "best rocket skates\n\n(Answer in German, for someone in Germany.)" {
		t.Errorf("Copilot's query %v", q)
	}
	if mode.Localisation() != LocaliseNative || pilot.Localisation() != LocalisePrompt || serpEngine(f, "google_ai_overview").Localisation() != LocaliseNative {
		t.Errorf("localisation %s, %s", mode.Localisation(), pilot.Localisation())
	}
}

// TestSerpAPIErrors: SerpApi's {"error"} bodies: a refused key is
// permanent and never shows the key; its hourly throughput (429) and a
// server error are retried; a plan out of searches is not; an unknown
// model is not asked.
func TestSerpAPIErrors(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = serpKey
	f.Script("google_ai_mode", serpReply)
	c := &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond, MaxAttempts: 4}
	e := serpEngine(f, "google_ai_mode")

	f.FailWith("google_ai_mode", probefake.Failure{Status: 429}, probefake.Failure{Status: 500}, probefake.Failure{Status: 503})
	a, err := c.Ask(context.Background(), e, "best rocket skates")
	if err != nil || a.Attempts != 4 || a.Text != serpText {
		t.Errorf("after a 429, a 500 and a 503: %+v %v", a, err)
	}

	before := f.Requests()
	f.FailWith("google_ai_mode", probefake.Failure{Status: 429, Message: "Your account has run out of searches."})
	_, err = c.Ask(context.Background(), e, "best rocket skates")
	if fl := FailureOf(err); !errors.Is(err, ErrPermanent) || fl.Category != FailRateLimited || fl.Status != 429 ||
		!strings.Contains(err.Error(), "run out of searches") || f.Requests()-before != 1 {
		t.Errorf("out of searches: %v (%+v), %d requests", err, fl, f.Requests()-before)
	}

	before = f.Requests()
	wrong := e
	wrong.APIKey = "serp-key-wrong-secret-42"
	_, err = c.Ask(context.Background(), wrong, "best rocket skates")
	if fl := FailureOf(err); !errors.Is(err, ErrPermanent) || fl.Category != FailRefusedKey || !strings.Contains(err.Error(), "Invalid API key") ||
		strings.Contains(err.Error(), wrong.APIKey) || f.Requests()-before != 1 {
		t.Errorf("a wrong key: %v (%+v)", err, fl)
	}

	// An engine that says the key is told without it.
	f.FailWith("google_ai_mode", probefake.Failure{Status: 400, Message: "Invalid request for key " + serpKey})
	_, err = c.Ask(context.Background(), e, "best rocket skates")
	if !errors.Is(err, ErrPermanent) || strings.Contains(err.Error(), serpKey) || FailureOf(err).Category != FailBadRequest {
		t.Errorf("a 400 naming the key: %v", err)
	}

	before = f.Requests()
	_, err = c.Ask(context.Background(), serpEngine(f, "bing"), "best rocket skates")
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), `model "bing" is not one of google_ai_overview, google_ai_mode, bing_copilot`) || f.Requests() != before {
		t.Errorf("an unknown model: %v", err)
	}
}

// TestSerpAPIKeyInNoError: the key rides in the URL, which no failure
// names: an engine out of reach, a base URL that is no URL.
func TestSerpAPIKeyInNoError(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	c := &Client{HTTP: http.DefaultClient, MaxAttempts: 1}
	for _, base := range []string{"http://" + addr, "http://bad host\x7f/"} {
		e := Engine{Label: "SerpApi", Kind: KindSerpAPI, BaseURL: base, Model: "google_ai_overview", APIKey: serpKey}
		_, err := c.Ask(context.Background(), e, "best rocket skates")
		if err == nil || strings.Contains(err.Error(), serpKey) || strings.Contains(FailureOf(err).Detail, serpKey) {
			t.Errorf("%q: %v", base, err)
		}
	}
}

// TestSerpAPIBlocks: every kind of block, read in order; references by
// their index field (not their place), a missing one skipped; the same
// page once (its #:~:text= fragment gone) in citations and sources; a
// list's snippet_links cite their words; unknown blocks and top stories
// skipped.
func TestSerpAPIBlocks(t *testing.T) {
	a, err := serpAPI{}.parse([]byte(`{"search_metadata":{"id":"x","status":"Success"},"search_parameters":{"engine":"google","q":"crm","num":"10"},
	"related_questions":[{"question":"q","type":"ai_overview","page_token":"decoy"}],
	"ai_overview":{"text_blocks":[
		{"type":"paragraph","snippet":"CRMs compared.","reference_indexes":[9,0,7]},
		{"type":"top_stories","stories":[{"title":"news"}]},
		{"type":"carousel","items":[1]},
		{"type":"expandable","title":"Acme","subtitle":"the leader","text_blocks":[{"type":"paragraph","snippet":"Acme is cheap.","reference_indexes":[3]}]},
		{"type":"table","table":[["Name","Price"],["Acme",10],["Globex",null]]},
		{"type":"comparison","product_labels":["Acme","Globex"],"comparison":[{"feature":"Price","values":["$10","$20"]}]},
		{"type":"list","list":[{"snippet":"Reuters reports growth.","snippet_links":[{"text":"Reuters","link":"https://reuters.example/a"}]}]},
		{"type":"paragraph","snippet":"Odd indexes.","reference_indexes":"all"}],
	 "references":[
		{"title":"CRM guide","link":"https://www.guide.example/crm","snippet":"…","source":"Guide","index":9},
		{"link":"https://www.guide.example/crm#:~:text=CRMs%20compared","source":"guide.example","index":0},
		{"title":"Acme","link":"https://acme.example/#top:~:text=cheap","index":3},
		"not a reference"]}}`))
	const text = "CRMs compared.\n\nAcme the leader\n\nAcme is cheap.\n\nName | Price\nAcme | 10\nGlobex |\n\nAcme | Globex\nPrice: $10 | $20\n\n- Reuters reports growth.\n\nOdd indexes."
	guide := "https://www.guide.example/crm"
	want := Answer{Text: text, SourcesReported: true, Searches: 1,
		Sources: []Source{{URL: guide, Title: "CRM guide", Domain: "guide.example"}, {URL: "https://acme.example/#top", Title: "Acme", Domain: "acme.example"}},
		Citations: []Citation{{URL: guide, Title: "CRM guide", Domain: "guide.example", Start: 0, End: 14, Text: "CRMs compared."},
			{URL: "https://acme.example/#top", Title: "Acme", Domain: "acme.example", Start: 33, End: 47, Text: "Acme is cheap."},
			{URL: "https://reuters.example/a", Domain: "reuters.example", Start: 116, End: 123, Text: "Reuters"}}}
	if err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("%+v %v, want\n%+v", a, err, want)
	}
	for _, c := range a.Citations {
		if text[c.Start:c.End] != c.Text {
			t.Errorf("span %d-%d is %q", c.Start, c.End, text[c.Start:c.End])
		}
	}
}

// TestSerpAPIParse: what else a 200 may be.
func TestSerpAPIParse(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Answer
		err        string
	}{
		{"Copilot", `{"search_metadata":{"status":"Success"},"header":"Rocket skates","text_blocks":[{"type":"code_block","code":"go run ."}],"references":[]}`,
			Answer{Text: "Rocket skates\n\ngo run .", SourcesReported: true, Searches: 1}, ""},
		{"AI Mode, markdown", `{"search_metadata":{"status":"Success"},"reconstructed_markdown":"**Acme** leads.","text_blocks":[{"type":"nope"}]}`,
			Answer{Text: "**Acme** leads.", Searches: 1}, ""},
		{"AI Mode, nothing", `{"search_metadata":{"status":"Success"},"search_parameters":{"engine":"google_ai_mode"}}`, Answer{Absent: true, Searches: 1}, ""},
		{"deferred", `{"search_metadata":{"status":"Success"},"ai_overview":{"page_token":"t","serpapi_link":"x"}}`, Answer{Absent: true, Searches: 1}, ""},
		{"an error", `{"search_metadata":{"status":"Error"},"error":"Something went wrong."}`, Answer{}, "Something went wrong."},
		{"an error alone", `{"error":"Something went wrong."}`, Answer{}, "Something went wrong."},
		{"not SerpApi's", `{"answer":"Acme"}`, Answer{}, "no search_metadata"},
	} {
		a, err := serpAPI{}.parse([]byte(tc.body))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: %+v %v, want %q", tc.name, a, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(a, tc.want) {
			t.Errorf("%s: %+v %v, want %+v", tc.name, a, err, tc.want)
		}
	}
}

// googleLanguage: Google's hl of a market's language.
func TestGoogleLanguage(t *testing.T) {
	for in, want := range map[string]string{"en": "en", "de": "de", "pt": "pt", "zh-Hant": "zh-tw", "zh-Hans": "zh-cn", "zh": "zh-cn", "sr-Latn": "sr"} {
		if got := googleLanguage(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	if !slices.Equal(SerpAPIModels, []string{"google_ai_overview", "google_ai_mode", "bing_copilot"}) {
		t.Errorf("models %v", SerpAPIModels)
	}
}
