package probe

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

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

// TestOpenAIResponsesErrors: OpenAI's failures as the contract says.
func TestOpenAIResponsesErrors(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	kindErrors(t, f, Engine{Label: "GPT", Kind: KindOpenAIResponses, BaseURL: f.URL(), Model: "gpt-5"})
}

// kindErrors checks a kind's reading of failures against the fake, for
// the engine e of its kind: a refused key is permanent, asked once, and
// its error shows no part of the key; 429 waits what Retry-After says,
// else backs off as 5xx do; all are retried until the answer comes; a
// refused request is permanent.
func kindErrors(t *testing.T, f *probefake.Fake, e Engine) {
	t.Helper()
	f.Key = "sk-live-0123456789abcdef"
	f.Answer(e.Model, "Acme leads.")
	c := &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond}
	ctx := context.Background()

	wrong := e
	wrong.APIKey = "sk-wrong-key-98765"
	_, err := c.Ask(ctx, wrong, "hi")
	if err == nil || !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "401") || f.Requests() != 1 {
		t.Errorf("a wrong key: %v after %d requests", err, f.Requests())
	}
	for _, secret := range []string{wrong.APIKey, "8765", f.Key} {
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error %q shows %q", err, secret)
		}
	}

	e.APIKey = f.Key
	ad, _ := adapterOf(e)
	for _, tc := range []struct {
		fail      probefake.Failure
		wait      time.Duration
		permanent bool
	}{
		{probefake.Failure{Status: 429, RetryAfter: "7"}, 7 * time.Second, false},
		{probefake.Failure{Status: 429}, 0, false},
		{probefake.Failure{Status: 500}, 0, false},
		{probefake.Failure{Status: 503, RetryAfter: "2"}, 2 * time.Second, false},
		{probefake.Failure{Status: 400, Type: "invalid_request_error"}, 0, true},
	} {
		f.FailWith(e.Model, tc.fail)
		_, wait, err := c.once(ctx, e, ad, Request{Prompt: "hi"})
		if wait != tc.wait || err == nil || errors.Is(err, ErrPermanent) != tc.permanent || !strings.Contains(err.Error(), http.StatusText(tc.fail.Status)) {
			t.Errorf("%+v: wait %v, error %v", tc.fail, wait, err)
		}
	}

	// Retried until the answer comes; a backoff of an hour, which the
	// answer after a Retry-After of 10 ms cannot have waited.
	f.FailWith(e.Model, probefake.Failure{Status: 429, RetryAfter: "0.01"}, probefake.Failure{Status: 429, RetryAfter: "0.01"})
	slow := &Client{HTTP: http.DefaultClient, Backoff: time.Hour, MaxWait: time.Hour}
	if a, err := slow.Ask(ctx, e, "hi"); err != nil || a.Attempts != 3 || a.Text != "Acme leads." {
		t.Errorf("after two 429s with Retry-After: %+v %v", a, err)
	}
	f.FailWith(e.Model, probefake.Failure{Status: 429}, probefake.Failure{Status: 500}, probefake.Failure{Status: 502})
	if a, err := c.Ask(ctx, e, "hi"); err != nil || a.Attempts != 4 || a.Text != "Acme leads." {
		t.Errorf("after 429 without Retry-After, 500 and 502: %+v %v", a, err)
	}
	f.FailWith(e.Model, probefake.Failure{Status: 503}, probefake.Failure{Status: 503}, probefake.Failure{Status: 503}, probefake.Failure{Status: 503})
	before := f.Requests()
	if _, err := c.Ask(ctx, e, "hi"); err == nil || !strings.Contains(err.Error(), "503") || f.Requests()-before != 4 {
		t.Errorf("503 four times: %v after %d requests", err, f.Requests()-before)
	}
}
