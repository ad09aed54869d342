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

// TestOpenAIResponses: an answer that searched twice, its sources spread
// over the two searches, a page it cites without the searches listing it;
// one that did not search; one whose search names no query.
func TestOpenAIResponses(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "sk-proj-right-0123456789"
	text := "Acme makes the fastest rocket skates. Globex sells cheaper ones."
	f.Script("gpt-5",
		probefake.Reply{Text: text, Queries: []string{"fastest rocket skates", "rocket skates brands"},
			Sources: []probefake.Source{{URL: "https://acme.example/skates"}, {URL: "https://globex.example/"}, {URL: "https://www.reviews.example/best"}},
			Citations: []probefake.Citation{{URL: "https://acme.example/skates", Title: "Acme skates", Quote: "Acme makes the fastest rocket skates."},
				{URL: "https://reviews.example/cheap", Title: "Cheap skates", Quote: "Globex sells cheaper ones."}}},
		probefake.Reply{Text: "Acme, I believe.", NoSearch: true},
		probefake.Reply{Text: "Acme.", Sources: []probefake.Source{{URL: "https://acme.example/"}}})
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "GPT", Kind: KindOpenAIResponses, BaseURL: f.URL(), Model: "gpt-5", APIKey: f.Key,
		InputPricePerMTok: 2, OutputPricePerMTok: 8, SearchPricePer1K: 10}
	prompt := "Who makes the fastest rocket skates?"
	a, err := c.Complete(context.Background(), e, Request{System: "Answer briefly.", Prompt: prompt, MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	// The first search found the first and third source, the second the
	// second; the cited page the searches did not list comes last.
	want := Answer{Text: text, Queries: []string{"fastest rocket skates", "rocket skates brands"}, SourcesReported: true, Searches: 2,
		Sources: []Source{{URL: "https://acme.example/skates", Title: "Acme skates", Domain: "acme.example"},
			{URL: "https://www.reviews.example/best", Domain: "reviews.example"},
			{URL: "https://globex.example/", Domain: "globex.example"},
			{URL: "https://reviews.example/cheap", Title: "Cheap skates", Domain: "reviews.example"}},
		Citations: []Citation{{URL: "https://acme.example/skates", Title: "Acme skates", Domain: "acme.example", Start: 0, End: 37, Text: "Acme makes the fastest rocket skates."},
			{URL: "https://reviews.example/cheap", Title: "Cheap skates", Domain: "reviews.example", Start: 38, End: 64, Text: "Globex sells cheaper ones."}},
		InputTokens: 2 + 6, OutputTokens: 10, Attempts: 1}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("answer\n%+v, want\n%+v", a, want)
	}
	// 8 tokens in at $2, 10 out at $8 a million, 2 searches at $10 a thousand.
	if cost := e.Cost(a); !near(cost*1e6, 16+80+20_000) {
		t.Errorf("cost %v", cost)
	}

	a, err = c.Ask(context.Background(), e, prompt)
	if err != nil || a.Text != "Acme, I believe." || a.SourcesReported || a.Searches != 0 || a.Sources != nil || a.Citations != nil || a.Queries != nil {
		t.Errorf("an answer that did not search: %+v %v", a, err)
	}
	a, err = c.Ask(context.Background(), e, prompt)
	if err != nil || !a.SourcesReported || a.Searches != 1 || !reflect.DeepEqual(a.Queries, []string{prompt}) ||
		!reflect.DeepEqual(a.Sources, []Source{{URL: "https://acme.example/", Domain: "acme.example"}}) || a.Citations != nil {
		t.Errorf("a search that names no query: %+v %v", a, err)
	}
	// What OpenAI refuses, refused for good.
	if _, err := c.Complete(context.Background(), e, Request{Prompt: prompt, MaxTokens: 8}); !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "max_output_tokens") {
		t.Errorf("8 output tokens: %v", err)
	}
	if _, err := c.Ask(context.Background(), Engine{Label: "GPT", Kind: KindOpenAIResponses, BaseURL: f.URL(), Model: "gpt-0", APIKey: f.Key}, prompt); !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("an unknown model: %v", err)
	}
}

// TestOpenAIResponsesParts: the text is the output_text parts one after
// the other, each part's annotations moved to where the part lies; other
// items and parts (reasoning, a refusal, a file citation) are no part of
// it; a failed response is an error.
func TestOpenAIResponsesParts(t *testing.T) {
	a, err := openAIResponses{}.parse([]byte(`{"status":"completed","output":[
		{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"message","role":"assistant","content":[
			{"type":"output_text","text":"Acme leads. ","annotations":[{"type":"url_citation","url":"https://acme.example/","title":"Acme","start_index":0,"end_index":11}]},
			{"type":"refusal","refusal":"no"},
			{"type":"output_text","text":"Globex follows.","annotations":[
				{"type":"file_citation","file_id":"f","index":3},
				{"type":"url_citation","url":"https://globex.example/","title":"Globex","start_index":0,"end_index":15},
				{"type":"url_citation","url":"https://globex.example/x","title":"X","start_index":9,"end_index":99}]}]}],
		"usage":{"input_tokens":3,"output_tokens":4}}`))
	want := Answer{Text: "Acme leads. Globex follows.", SourcesReported: true, InputTokens: 3, OutputTokens: 4,
		Citations: []Citation{{URL: "https://acme.example/", Title: "Acme", Domain: "acme.example", Start: 0, End: 11, Text: "Acme leads."},
			{URL: "https://globex.example/", Title: "Globex", Domain: "globex.example", Start: 12, End: 27, Text: "Globex follows."},
			{URL: "https://globex.example/x", Title: "X", Domain: "globex.example", Start: -1, End: -1}},
		Sources: []Source{{URL: "https://acme.example/", Title: "Acme", Domain: "acme.example"},
			{URL: "https://globex.example/", Title: "Globex", Domain: "globex.example"},
			{URL: "https://globex.example/x", Title: "X", Domain: "globex.example"}}}
	if err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("%+v %v, want %+v", a, err, want)
	}
	if _, err := (openAIResponses{}).parse([]byte(`{"status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}`)); err == nil || err.Error() != "The model failed." {
		t.Errorf("a failed response: %v", err)
	}
}

func TestOpenAIResponsesErrors(t *testing.T) {
	testKindErrors(t, KindOpenAIResponses, 503, "503 Service Unavailable: The engine is currently overloaded", "401 Unauthorized: the API key is missing, wrong or revoked")
}
