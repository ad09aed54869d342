package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
)

// The scripted answer of the search kinds' tests: three sources, two of
// them citing the same span, one a span after a non-ASCII word (spans are
// in bytes).
const searchText = "Acme makes the fastest rocket skates. Globex sells cheaper ones (très bon marché), and Initech's are sturdy."

var searchReply = probefake.Reply{
	Text: searchText,
	Sources: []probefake.Source{
		{URL: "https://www.acme.example/skates", Title: "Acme skates"},
		{URL: "https://shop.globex.example/cheap", Title: "Globex shop"},
		{URL: "https://reviews.example.org/skates", Title: "Skate reviews"},
	},
	Citations: []probefake.Citation{
		{URL: "https://www.acme.example/skates", Title: "Acme skates", Quote: "Acme makes the fastest rocket skates."},
		{URL: "https://reviews.example.org/skates", Title: "Skate reviews", Quote: "Acme makes the fastest rocket skates."},
		{URL: "https://shop.globex.example/cheap", Title: "Globex shop", Quote: "Initech's are sturdy."},
	},
	Queries: []string{"fastest rocket skates", "rocket skates reviews"},
}

// checkCitations: each citation's span holds its quote, its domain is
// the one expected, in order.
func checkCitations(t *testing.T, a Answer, want [][3]string) {
	t.Helper()
	if len(a.Citations) != len(want) {
		t.Fatalf("citations %+v, want %d", a.Citations, len(want))
	}
	for i, c := range a.Citations {
		if c.Start < 0 || c.End > len(a.Text) || a.Text[c.Start:c.End] != want[i][0] || c.Text != want[i][0] || c.Domain != want[i][1] || c.URL != want[i][2] {
			t.Errorf("citation %d: %+v, want %q of %s (%s)", i, c, want[i][0], want[i][1], want[i][2])
		}
	}
}

func domains(ss []Source) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Domain)
	}
	return out
}

const skatesPrompt = "Which rocket skates should I buy?" // 6 words

// TestAnthropic: the interleaved blocks read into one answer: the text
// blocks joined, each citation's span its block, the searches' results
// as sources, their queries, the searches charged.
func TestAnthropic(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "sk-ant-right"
	f.Script("claude", searchReply)
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "Claude", Kind: KindAnthropic, BaseURL: f.Root(), Model: "claude", APIKey: "sk-ant-right",
		InputPricePerMTok: 3, OutputPricePerMTok: 15, SearchPricePer1K: 10}
	a, err := c.Ask(context.Background(), e, skatesPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != searchText || !a.SourcesReported || a.Searches != 2 || a.Attempts != 1 {
		t.Fatalf("%+v", a)
	}
	if !reflect.DeepEqual(a.Queries, searchReply.Queries) {
		t.Errorf("queries %q", a.Queries)
	}
	// Two searches share the three results out: the first gets the 1st
	// and 3rd, the second the 2nd.
	if got := domains(a.Sources); strings.Join(got, " ") != "acme.example reviews.example.org shop.globex.example" || a.Sources[0].Title != "Acme skates" {
		t.Errorf("sources %+v", a.Sources)
	}
	checkCitations(t, a, [][3]string{
		{"Acme makes the fastest rocket skates.", "acme.example", "https://www.acme.example/skates"},
		{"Acme makes the fastest rocket skates.", "reviews.example.org", "https://reviews.example.org/skates"},
		{"Initech's are sturdy.", "shop.globex.example", "https://shop.globex.example/cheap"},
	})
	// The fake charges a word a token: 6 in, 17 out; $3 and $15 a
	// million, and two searches at $10 a thousand.
	if a.InputTokens != 6 || a.OutputTokens != 17 || !near(e.Cost(a)*1e6, 6*3+17*15+20_000) {
		t.Errorf("tokens %d/%d, cost %v", a.InputTokens, a.OutputTokens, e.Cost(a))
	}
}

// TestAnthropicOdd: a search past max_uses fails and is not charged; an
// answer whose searches all fail, and one that did not search, report no
// sources; a system prompt and the default max_tokens pass the API's
// checks.
func TestAnthropicOdd(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	nocite := searchReply
	nocite.NoMetadata = true
	f.Script("claude", searchReply, nocite, probefake.Reply{Text: "Acme, from memory.", NoSearch: true})
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "Claude", Kind: KindAnthropic, BaseURL: f.Root(), Model: "claude", MaxSearches: 1}
	a, err := c.Complete(context.Background(), e, Request{System: "Answer briefly.", Prompt: skatesPrompt})
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != searchText || !a.SourcesReported || a.Searches != 1 || len(a.Queries) != 2 || len(a.Sources) != 3 || len(a.Citations) != 3 {
		t.Errorf("past max_uses: %+v", a)
	}
	a, err = c.Ask(context.Background(), e, skatesPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != searchText || a.SourcesReported || a.Searches != 0 || len(a.Queries) != 2 || a.Sources != nil || a.Citations != nil {
		t.Errorf("the searches failed: %+v", a)
	}
	a, err = c.Ask(context.Background(), e, skatesPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if a.Text != "Acme, from memory." || a.SourcesReported || a.Searches != 0 || a.Queries != nil || a.Sources != nil || a.Citations != nil {
		t.Errorf("no search: %+v", a)
	}
}

// TestKindRequests: each kind's request as its contract has it.
func TestKindRequests(t *testing.T) {
	type got struct {
		path   string
		header http.Header
		body   map[string]any
	}
	var reqs []got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := got{path: r.URL.Path, header: r.Header}
		if err := json.NewDecoder(r.Body).Decode(&g.body); err != nil {
			t.Error(err)
		}
		reqs = append(reqs, g)
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	c := &Client{HTTP: srv.Client()}
	for _, tc := range []struct {
		e         Engine
		r         Request
		path, key string
		header    map[string]string
		body      string
	}{
		{Engine{Kind: KindAnthropic, Model: "claude-x", APIKey: "k1"}, Request{Prompt: "hi", Temperature: 0.7},
			"/v1/messages", "k1", map[string]string{"x-api-key": "k1", "anthropic-version": "2023-06-01"},
			`{"model":"claude-x","max_tokens":1024,"messages":[{"role":"user","content":"hi"}],
			  "tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]}`},
		{Engine{Kind: KindAnthropic, Model: "claude-x", MaxSearches: 2}, Request{System: "rules", Prompt: "hi", MaxTokens: 300},
			"/v1/messages", "", map[string]string{"anthropic-version": "2023-06-01"},
			`{"model":"claude-x","max_tokens":300,"system":"rules","messages":[{"role":"user","content":"hi"}],
			  "tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2}]}`},
		{Engine{Kind: KindGemini, Model: "gemini-x", APIKey: "k2"}, Request{Prompt: "hi", Temperature: 0.7},
			"/v1beta/models/gemini-x:generateContent", "k2", map[string]string{"x-goog-api-key": "k2"},
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"google_search":{}}]}`},
		{Engine{Kind: KindGemini, Model: "models/gemini-x"}, Request{System: "rules", Prompt: "hi", MaxTokens: 300},
			"/v1beta/models/gemini-x:generateContent", "", nil,
			`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"rules"}]},
			  "tools":[{"google_search":{}}],"generationConfig":{"maxOutputTokens":300}}`},
		{Engine{Kind: KindOpenAIResponses, Model: "gpt-x", APIKey: "k3"}, Request{Prompt: "hi", Temperature: 0.7},
			"/responses", "k3", map[string]string{"Authorization": "Bearer k3"},
			`{"model":"gpt-x","input":"hi","tools":[{"type":"web_search"}],"include":["web_search_call.action.sources"]}`},
		{Engine{Kind: KindOpenAIResponses, Model: "gpt-x"}, Request{System: "rules", Prompt: "hi", MaxTokens: 300},
			"/responses", "", nil,
			`{"model":"gpt-x","instructions":"rules","input":"hi","tools":[{"type":"web_search"}],"include":["web_search_call.action.sources"],
			  "max_output_tokens":300}`},
		{Engine{Kind: KindPerplexity, Model: "sonar", APIKey: "k4"}, Request{Prompt: "hi", Temperature: 0.7},
			"/chat/completions", "k4", map[string]string{"Authorization": "Bearer k4"},
			`{"model":"sonar","messages":[{"role":"user","content":"hi"}]}`},
		{Engine{Kind: KindPerplexity, Model: "sonar"}, Request{System: "rules", Prompt: "hi", MaxTokens: 300},
			"/chat/completions", "", nil,
			`{"model":"sonar","messages":[{"role":"system","content":"rules"},{"role":"user","content":"hi"}],"max_tokens":300}`},
	} {
		reqs = nil
		tc.e.BaseURL = srv.URL + "/"
		if _, err := c.Complete(context.Background(), tc.e, tc.r); !errors.Is(err, ErrPermanent) {
			t.Errorf("%s: a 400 is permanent: %v", tc.e.Kind, err)
		}
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests", tc.e.Kind, len(reqs))
		}
		var want map[string]any
		if err := json.Unmarshal([]byte(tc.body), &want); err != nil {
			t.Fatal(err)
		}
		g := reqs[0]
		if g.path != tc.path || !reflect.DeepEqual(g.body, want) || g.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s %v, want %s %v", tc.e.Kind, g.path, g.body, tc.path, want)
		}
		for k, v := range tc.header {
			if g.header.Get(k) != v {
				t.Errorf("%s: header %s %q, want %q", tc.e.Kind, k, g.header.Get(k), v)
			}
		}
		if tc.key == "" && (g.header.Get("x-api-key") != "" || g.header.Get("x-goog-api-key") != "" || g.header.Get("Authorization") != "") {
			t.Errorf("%s: a key header without a key", tc.e.Kind)
		}
	}
}

func TestAnthropicErrors(t *testing.T) {
	testKindErrors(t, KindAnthropic, 529, "overloaded_error: Overloaded", "authentication_error: invalid x-api-key")
}

// testKindErrors: a kind's throttling waits what the engine asks (or
// backs off when it asks nothing); throttling, server errors and the
// overloaded status are retried until the answer; a bad key fails at
// once and its error never shows the key, nor the part of it OpenAI
// shows.
func testKindErrors(t *testing.T, kind string, overloaded int, overloadedText, badKeyText string) {
	f := probefake.New()
	defer f.Close()
	f.Key = "key-right"
	f.Answer("m", "hello")
	c := &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond, MaxAttempts: 5}
	e := Engine{Label: "E", Kind: kind, BaseURL: f.Root(), Model: "m", APIKey: "key-right"}
	if kind == KindOpenAIResponses {
		e.BaseURL = f.URL()
	}
	ad, err := adapterOf(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fail probefake.Failure
		wait time.Duration
		text string
	}{
		{probefake.Failure{Status: 429, RetryAfter: "7"}, 7 * time.Second, "429 Too Many Requests"},
		{probefake.Failure{Status: 429}, 0, "429 Too Many Requests"},
		{probefake.Failure{Status: overloaded}, 0, overloadedText},
		{probefake.Failure{Status: 500}, 0, "500 Internal Server Error"},
	} {
		f.FailWith("m", tc.fail)
		_, wait, err := c.once(context.Background(), e, ad, Request{Prompt: "hi"})
		if err == nil || errors.Is(err, ErrPermanent) || wait != tc.wait || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%d (Retry-After %q): wait %v, %v", tc.fail.Status, tc.fail.RetryAfter, wait, err)
		}
	}
	f.FailWith("m", probefake.Failure{Status: 429, RetryAfter: "0.01"}, probefake.Failure{Status: 429},
		probefake.Failure{Status: overloaded}, probefake.Failure{Status: 503})
	a, err := c.Ask(context.Background(), e, "hi")
	if err != nil || a.Text != "hello" || a.Attempts != 5 {
		t.Errorf("after four retried failures: %+v %v", a, err)
	}
	before := f.Requests()
	e.APIKey = "key-wrong-secret"
	_, err = c.Ask(context.Background(), e, "hi")
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), badKeyText) || strings.Contains(err.Error(), e.APIKey) ||
		strings.Contains(err.Error(), e.APIKey[len(e.APIKey)-4:]) {
		t.Errorf("a bad key: %v", err)
	}
	if n := f.Requests() - before; n != 1 {
		t.Errorf("a bad key was tried %d times", n)
	}
}
