package probe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/text"
)

// fuzzKey is the engine's API key in FuzzEngineAnswer: an engine that
// echoes it must not get it into a failure's words, the operator's log's
// included.
const fuzzKey = "sk-fuzz-0123456789abcdefOPERATOR"

// fuzzModels are the models of the kinds whose model names an endpoint
// ("m" for the others).
var fuzzModels = map[string]string{KindDataForSEO: DataForSEOOverview, KindSerpAPI: "google_ai_overview"}

// served is what the fuzz engine answers: a status, a Retry-After and a
// body.
type served struct {
	status     int
	retryAfter string
	body       []byte
}

// fakeAnswers are what the fake engine (probefake) answers each kind, in
// its provider's shape: answers with sources and citations (spans after
// multi-byte words among them), odd ones (no search, no metadata, a
// <think> block, a NUL and pages that are not web pages), and failures of
// each status, one naming the key, the seeds of FuzzEngineAnswer.
func fakeAnswers(tb testing.TB) map[string][]served {
	f := probefake.New()
	defer f.Close()
	replies := []probefake.Reply{
		searchReply,
		{Text: "Acme (日本語: アクメ) leads; très bon marché.", Sources: []probefake.Source{{URL: "https://acme.example/ja", Title: "アクメ"}},
			Citations: []probefake.Citation{{URL: "https://acme.example/ja", Title: "アクメ", Quote: "アクメ) leads"}}},
		{Text: "Acme\x00 rocks.", Sources: []probefake.Source{{URL: "javascript:alert(document.cookie)", Title: "evil"},
			{URL: "data:text/html,<script>x</script>"}, {URL: "HTTP://Globex.example/b"}},
			Citations: []probefake.Citation{{URL: "javascript:void(0)", Quote: "rocks"}, {URL: "https://acme.example/", Quote: "Acme"}}},
		{Text: "Acme is fine.", NoMetadata: true},
		{Text: "Plain answer.", NoSearch: true},
		{Text: "Acme, surely.[1]", Think: "Is Acme worth it?"},
	}
	failures := []probefake.Failure{
		{Status: 400}, {Status: 401}, {Status: 403}, {Status: 404}, {Status: 408}, {Status: 429, RetryAfter: "7"},
		{Status: 500}, {Status: 503}, {Status: 504}, {Status: 529},
		{Status: 429, Message: "Rate limit reached for org-Operator123, key " + fuzzKey},
	}
	out := map[string][]served{}
	for _, kind := range Kinds {
		e := Engine{Kind: kind, BaseURL: f.Root(), Model: cmp.Or(fuzzModels[kind], "fuzz-"+kind), APIKey: fuzzKey}
		if kind == KindOpenAIChat || kind == KindOpenAIResponses {
			e.BaseURL = f.URL()
		}
		if kind == KindXAI {
			e.BaseURL = f.XAI()
		}
		f.Script(e.Model, replies...)
		f.FailWith(e.Model, failures...)
		for range len(replies) + len(failures) {
			req, err := adapters[kind].request(context.Background(), e, Request{Prompt: "Which rocket skates should I buy?"})
			if err != nil {
				tb.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				tb.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				tb.Fatal(err)
			}
			out[kind] = append(out[kind], served{resp.StatusCode, resp.Header.Get("Retry-After"), b})
		}
	}
	return out
}

// FuzzEngineAnswer serves arbitrary answers (a status, a Retry-After, a
// body) to Client.once for an engine of each kind, over a real loopback
// server, seeded with each kind's answers in its provider's shape. An
// answer comes back fit to keep (its words and its pages' text, http(s)
// pages alone, each citation's span within the text and holding its
// quote); a failure comes back as its category, fixed by the status, and
// the status, which is all a tenant reads of it (Public), never the
// engine's words; its detail, for the operator's log, is text without the
// key.
func FuzzEngineAnswer(f *testing.F) {
	var next atomic.Pointer[served]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := next.Load()
		if a.retryAfter != "" {
			w.Header()["Retry-After"] = []string{a.retryAfter}
		}
		w.WriteHeader(a.status)
		w.Write(a.body)
	}))
	f.Cleanup(srv.Close)
	seeds := fakeAnswers(f)
	for i, kind := range Kinds {
		for _, a := range seeds[kind] {
			f.Add(uint8(i), a.status, a.retryAfter, a.body)
		}
	}
	for _, s := range []struct {
		kind   string
		status int
		body   string
	}{
		// A span past the text, NULs and pages that are not web pages, an
		// error naming the key in each kind's shape (testdata/fuzz holds
		// more, and the spans that cut a character).
		{KindOpenAIChat, 200, `{"choices":[{"message":{"content":"Acme\u0000\u0000 x","annotations":[{"type":"url_citation","url_citation":{"url":"https://a.example/","start_index":5,"end_index":99}}]}}]}`},
		{KindAnthropic, 200, `{"content":[{"type":"text","text":"a\u0000b","citations":[{"type":"web_search_result_location","url":"vbscript:x"},{"type":"web_search_result_location","url":"https://a.example/"}]}]}`},
		{KindPerplexity, 200, `{"choices":[{"message":{"content":"<think>x</think>Acme.[1][2] Then [1999]."}}],"citations":["https://a.example/","javascript:alert(1)"]}`},
		{KindAnthropic, 529, `{"type":"error","error":{"type":"overloaded_error","message":"` + fuzzKey + `"}}`},
		{KindGemini, 429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"` + fuzzKey + `","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`},
		{KindPerplexity, 502, "<html>bad gateway \xff\xfe\x00</html>"},
		// SerpApi's overview deferred (the second request answered the
		// same: deferred again), a search that found nothing, blocks
		// citing a reference that is no web page and one missing, a plan
		// out of searches.
		{KindSerpAPI, 200, `{"search_metadata":{"status":"Success"},"ai_overview":{"page_token":"tok","serpapi_link":"x"}}`},
		{KindSerpAPI, 200, `{"search_metadata":{"status":"Success"},"error":"Google hasn't returned any results for this query."}`},
		{KindSerpAPI, 200, `{"search_metadata":{"status":"Success"},"ai_overview":{"text_blocks":[{"type":"list","list":[{"snippet":"Acme\u0000 leads.","reference_indexes":[3,99],"list":[{"title":"x"}]}]}],"references":[{"link":"javascript:alert(1)","index":3}]}}`},
		{KindSerpAPI, 429, `{"error":"Your account has run out of searches. ` + fuzzKey + `"}`},
	} {
		f.Add(uint8(indexOf(Kinds, s.kind)), s.status, "", []byte(s.body))
	}
	c := &Client{HTTP: srv.Client()}
	f.Fuzz(func(t *testing.T, kindIndex uint8, status int, retryAfter string, body []byte) {
		kind := Kinds[int(kindIndex)%len(Kinds)]
		if status < 200 || status > 999 {
			// What net/http can answer, informational answers aside.
			status = 200 + int(uint(status)%800)
		}
		// What net/http can send as a header's value.
		retryAfter = strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return -1
			}
			return r
		}, retryAfter)
		next.Store(&served{status, retryAfter, body})
		e := Engine{Label: "fuzz", Kind: kind, BaseURL: srv.URL, Model: cmp.Or(fuzzModels[kind], "m"), APIKey: fuzzKey, Timeout: 10 * time.Second}
		a, wait, err := c.once(context.Background(), e, adapters[kind], Request{Prompt: "Which rocket skates should I buy?"})
		if wait < 0 {
			t.Fatalf("wait %s", wait)
		}
		if err != nil {
			checkFailure(t, status, err)
			return
		}
		if status != http.StatusOK {
			t.Fatalf("an answer of status %d: %+v", status, a)
		}
		checkAnswer(t, a)
	})
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	panic(s)
}

// checkFailure: the failure of an answer of status is of the category its
// status makes it (provider_error for a 200 that could not be read), with
// that status; a tenant reads the category's fixed words and the status
// alone; what it says for the log is text without the key.
func checkFailure(t *testing.T, status int, err error) {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("%v (%T) is not a *Failure", err, err)
	}
	want := FailProvider
	switch {
	case status == http.StatusOK && f.Category != FailProvider:
		// A failure the answer of 200 tells by a code of the engine's
		// own (DataForSEO's), of any category.
		if _, ok := failurePhrases[f.Category]; !ok {
			t.Fatalf("a 200 answered is of category %q", f.Category)
		}
		want = f.Category
	case status == http.StatusOK:
	case status == 429:
		want = FailRateLimited
	case status == 401 || status == 403:
		want = FailRefusedKey
	case status == 408 || status == 504:
		want = FailTimeout
	case status >= 400 && status < 500:
		want = FailBadRequest
	}
	if f.Category != want || f.Status != status {
		t.Fatalf("a %d answered is %s %d, want %s", status, f.Category, f.Status, want)
	}
	// A SerpApi plan out of searches (429) is permanent.
	outOfSearches := status == 429 && strings.Contains(f.Detail, "run out of searches")
	if permanent := errors.Is(err, ErrPermanent); status != http.StatusOK && !outOfSearches && permanent != !(status == 429 || status == 408 || status >= 500) {
		t.Fatalf("a %d answered is permanent: %v", status, permanent)
	}
	if got, phrase := f.Public(), failurePhrases[f.Category]; phrase == "" || got != fmt.Sprintf("%s (HTTP %d)", phrase, status) {
		t.Fatalf("a tenant reads %q", got)
	}
	if !text.Valid(f.Detail) || len(f.Detail) > 1024 || strings.Contains(f.Detail, fuzzKey) {
		t.Fatalf("the log reads %q", f.Detail)
	}
}

// checkAnswer: an answer is text throughout; its sources and citations
// are web pages (or none named); a citation's span lies within the text
// and holds its quote, or there is none.
func checkAnswer(t *testing.T, a Answer) {
	t.Helper()
	strs := append([]string{a.Text}, a.Queries...)
	for _, s := range a.Sources {
		if !webURL(s.URL) {
			t.Fatalf("source %q", s.URL)
		}
		strs = append(strs, s.URL, s.Title, s.Domain)
	}
	for _, c := range a.Citations {
		if !webURL(c.URL) {
			t.Fatalf("citation %q", c.URL)
		}
		strs = append(strs, c.URL, c.Title, c.Domain, c.Text)
		switch {
		case c.Start == -1 && c.End == -1:
			if c.Text != "" {
				t.Fatalf("a citation without a span quotes %q", c.Text)
			}
		case c.Start < 0 || c.Start > c.End || c.End > len(a.Text):
			t.Fatalf("citation span [%d, %d] of a text of %d bytes", c.Start, c.End, len(a.Text))
		case a.Text[c.Start:c.End] != c.Text:
			t.Fatalf("citation span [%d, %d] holds %q, its quote is %q", c.Start, c.End, a.Text[c.Start:c.End], c.Text)
		}
	}
	for _, s := range strs {
		if !text.Valid(s) {
			t.Fatalf("%q is not text", s)
		}
	}
}
