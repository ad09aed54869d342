package probe

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aivis/aivis/core/probe/probefake"
)

// TestPerplexity: a reasoning model's answer, its <think> block left out,
// its [n] markers read as citations of the sentence they close; one that
// leaves out its sources; one cut inside its reasoning.
func TestPerplexity(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "pplx-right-0123456789"
	f.Script("sonar-reasoning-pro",
		probefake.Reply{Text: "Acme makes the fastest rocket skates. Reviewers rank Globex second, behind Acme.",
			Think: "The results favour Acme. Globex is second [sic].",
			Sources: []probefake.Source{{URL: "https://acme.example/skates", Title: "Acme skates"},
				{URL: "https://www.reviews.example/best", Title: "Best skates of 2026"}},
			Citations: []probefake.Citation{{URL: "https://acme.example/skates", Quote: "Acme makes the fastest rocket skates."},
				{URL: "https://www.reviews.example/best", Quote: "Acme makes the fastest rocket skates."},
				{URL: "https://globex.example/about", Quote: "Globex second"}}},
		probefake.Reply{Text: "Acme, I believe.", NoSearch: true})
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "Sonar", Kind: KindPerplexity, BaseURL: f.Root(), Model: "sonar-reasoning-pro", APIKey: f.Key,
		InputPricePerMTok: 2, OutputPricePerMTok: 8, SearchPricePer1K: 5}
	a, err := c.Complete(context.Background(), e, Request{System: "Answer briefly.", Prompt: "Who makes the fastest rocket skates?", MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	// The fake's text: "…skates.[1][2] Reviewers rank Globex second[3],
	// behind Acme." The third citation's page, not among the reply's
	// sources, is a result of its own, untitled.
	text := "Acme makes the fastest rocket skates.[1][2] Reviewers rank Globex second[3], behind Acme."
	first := Citation{Start: 0, End: 37, Text: "Acme makes the fastest rocket skates."}
	want := Answer{Text: text, SourcesReported: true, Searches: 1,
		Sources: []Source{{URL: "https://acme.example/skates", Title: "Acme skates", Domain: "acme.example"},
			{URL: "https://www.reviews.example/best", Title: "Best skates of 2026", Domain: "reviews.example"},
			{URL: "https://globex.example/about", Domain: "globex.example"}},
		Citations: []Citation{first, first,
			{URL: "https://globex.example/about", Domain: "globex.example", Start: 44, End: 72, Text: "Reviewers rank Globex second"}},
		InputTokens: 2 + 6, OutputTokens: 13 + 9, Attempts: 1}
	want.Citations[0].URL, want.Citations[0].Title, want.Citations[0].Domain = "https://acme.example/skates", "Acme skates", "acme.example"
	want.Citations[1].URL, want.Citations[1].Title, want.Citations[1].Domain = "https://www.reviews.example/best", "Best skates of 2026", "reviews.example"
	if !reflect.DeepEqual(a, want) {
		t.Errorf("answer\n%+v, want\n%+v", a, want)
	}
	// 8 tokens in at $2, 22 out (the reasoning's 9 with the text's) at $8
	// a million, and the request's search at $5 a thousand.
	if cost := e.Cost(a); !near(cost*1e6, 16+176+5_000) {
		t.Errorf("cost %v", cost)
	}

	a, err = c.Ask(context.Background(), e, "Who makes rocket skates?")
	if err != nil || a.Text != "Acme, I believe." || a.SourcesReported || a.Searches != 1 || a.Sources != nil || a.Citations != nil {
		t.Errorf("an answer without its sources: %+v %v", a, err)
	}
	if _, err := c.Ask(context.Background(), Engine{Label: "Sonar", Kind: KindPerplexity, BaseURL: f.Root(), Model: "sonar-max", APIKey: f.Key}, "hi"); !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "Invalid model 'sonar-max'") {
		t.Errorf("an unknown model: %v", err)
	}
}

// TestPerplexityLists: without citations the markers number the search
// results; with neither list the answer reports no sources.
func TestPerplexityLists(t *testing.T) {
	a, err := perplexity{}.parse([]byte(`{"choices":[{"message":{"role":"assistant","content":"Globex follows.[2]"}}],
		"search_results":[{"title":"Acme","url":"https://acme.example/","date":null},{"title":"Globex","url":"https://globex.example/","date":"2026-01-02"}],
		"usage":{"prompt_tokens":3,"completion_tokens":2}}`))
	want := Answer{Text: "Globex follows.[2]", SourcesReported: true, Searches: 1, InputTokens: 3, OutputTokens: 2,
		Sources:   []Source{{URL: "https://acme.example/", Title: "Acme", Domain: "acme.example"}, {URL: "https://globex.example/", Title: "Globex", Domain: "globex.example"}},
		Citations: []Citation{{URL: "https://globex.example/", Title: "Globex", Domain: "globex.example", Start: 0, End: 15, Text: "Globex follows."}}}
	if err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("%+v %v, want %+v", a, err, want)
	}
	a, err = perplexity{}.parse([]byte(`{"choices":[{"message":{"content":"Acme[1]."}}],"citations":null}`))
	if err != nil || a.SourcesReported || a.Sources != nil || a.Citations != nil || a.Searches != 1 {
		t.Errorf("neither list: %+v %v", a, err)
	}
}

// TestMarkerCitations: the span each [n] marker cites, by the rule of
// markerCitations.
func TestMarkerCitations(t *testing.T) {
	urls := []string{"https://a.example/", "https://b.example/", "https://c.example/"}
	for _, tc := range []struct {
		text string
		want []string // the cited spans, "url-letter:span"
	}{
		{"Acme leads.[1] Globex follows.[2][3]", []string{"a:Acme leads.", "b:Globex follows.", "c:Globex follows."}},
		{"Acme leads [1]. Globex follows [2] [3].", []string{"a:Acme leads", "b:Globex follows", "c:Globex follows"}},
		{"Acme leads in speed[1] and Globex in price[2].", []string{"a:Acme leads in speed", "b:and Globex in price"}},
		{"Brands:\n- Acme[1]\n- Globex! Cheap[2]", []string{"a:- Acme", "b:Cheap"}},
		{"[1] Acme.", []string{"a:"}},
		{"Acme, founded in [1999], leads[3]. Globex[4] follows.", []string{"c:Acme, founded in [1999], leads"}},
		{"No markers.", nil},
	} {
		var got []string
		for _, c := range markerCitations(tc.text, urls, nil) {
			got = append(got, c.URL[8:9]+":"+c.Text)
			if c.Start >= 0 && tc.text[c.Start:c.End] != c.Text || c.Start < 0 && (c.End >= 0 || c.Text != "") {
				t.Errorf("%q: span %d-%d is not %q", tc.text, c.Start, c.End, c.Text)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestWithoutThink: the reasoning before the answer goes; a cut answer
// still reasoning is empty; a <think> elsewhere stays.
func TestWithoutThink(t *testing.T) {
	for in, want := range map[string]string{
		"<think>\nsteps\n</think>\n\nAcme.": "Acme.",
		"  <think>steps</think>Acme.":       "Acme.",
		"<think>still reasoning":            "",
		"Acme. <think>x</think>":            "Acme. <think>x</think>",
	} {
		if got := withoutThink(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestPerplexityErrors(t *testing.T) {
	testKindErrors(t, KindPerplexity, 503, "503 Service Unavailable: The engine is currently overloaded", "401 Unauthorized: the API key is missing, wrong or revoked")
}
