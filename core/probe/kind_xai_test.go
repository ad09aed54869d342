package probe

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
)

// TestXAI: Grok searched the web twice and X once; it lists every page
// it looked at (one the text never uses, one post on X) as annotations
// with a URL alone, and cites one page inline, after a quote with
// characters of more than a byte, with a span counted in characters. Its
// cost is the one xAI bills, in ticks, whatever the engine's prices.
func TestXAI(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "xai-right-0123456789"
	text := "Café Acme makes the fastest rocket skates — Globex sells cheaper ones."
	f.Script("grok-4",
		probefake.Reply{Text: text, Queries: []string{"fastest rocket skates", "rocket skates brands"}, XQueries: []string{"rocket skates"},
			Sources: []probefake.Source{{URL: "https://acme.example/skates"}, {URL: "https://unused.example/"},
				{URL: "https://x.com/i/status/1850000000000000000"}},
			Citations: []probefake.Citation{{URL: "https://globex.example/", Quote: "Globex sells cheaper ones"}}},
		probefake.Reply{Text: "Acme, I believe.", NoSearch: true})
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "Grok", Kind: KindXAI, BaseURL: f.XAI(), Model: "grok-4", APIKey: f.Key, XSearch: true,
		InputPricePerMTok: 3, OutputPricePerMTok: 15, SearchPricePer1K: 5}
	prompt := "Who makes the fastest rocket skates?"
	a, err := c.Complete(context.Background(), e, Request{System: "Answer briefly.", Prompt: prompt, MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	marked := "Café Acme makes the fastest rocket skates — Globex sells cheaper ones[[4]](https://globex.example/)."
	at := strings.Index(marked, "[[4]]")
	want := Answer{Text: marked, Queries: []string{"fastest rocket skates", "rocket skates brands", "rocket skates"}, SourcesReported: true, Searches: 3,
		Sources: []Source{{URL: "https://acme.example/skates", Domain: "acme.example"}, {URL: "https://unused.example/", Domain: "unused.example"},
			{URL: "https://x.com/i/status/1850000000000000000", Domain: "x.com"}, {URL: "https://globex.example/", Domain: "globex.example"}},
		Citations: []Citation{{URL: "https://globex.example/", Domain: "globex.example", Start: at, End: len(marked) - 1,
			Text: "[[4]](https://globex.example/)"}},
		InputTokens: 2 + 6, OutputTokens: 12, Attempts: 1}
	// The fake's ticks: tokens at $0.20 and $0.50 a million, $5 a
	// thousand searches.
	want.CostUSD = float64(8*probefake.XAIInputTicks+12*probefake.XAIOutputTicks+3*probefake.XAISearchTicks) / 1e10
	if !reflect.DeepEqual(a, want) {
		t.Errorf("answer\n%+v, want\n%+v", a, want)
	}
	if cost := e.Cost(a); cost != want.CostUSD {
		t.Errorf("cost %v, want xAI's %v alone", cost, want.CostUSD)
	}

	// No search: no sources, and tokens alone billed.
	a, err = c.Ask(context.Background(), e, prompt)
	if err != nil || a.Text != "Acme, I believe." || a.SourcesReported || a.Searches != 0 || a.Sources != nil || a.Citations != nil || a.Queries != nil ||
		a.CostUSD != float64(6*probefake.XAIInputTicks+3*probefake.XAIOutputTicks)/1e10 {
		t.Errorf("an answer that did not search: %+v %v", a, err)
	}

	// Without XSearch the request gives Grok the web alone.
	e.XSearch = false
	f.Script("grok-4", probefake.Reply{Text: "Acme.", XQueries: []string{"rocket skates"}})
	a, err = c.Ask(context.Background(), e, prompt)
	if err != nil || !reflect.DeepEqual(a.Queries, []string{prompt}) || a.Searches != 1 {
		t.Errorf("web search alone: %+v %v", a, err)
	}
}

// TestXAIParse: the answer of sources.md's example (annotations with a
// URL alone, a URL the text links to without a span), a top-level
// citations list, usage without the tool details (the calls counted) and
// without a cost (the engine's prices then), spans that do not fall in
// the text, and an error in a 200's body, of either shape.
func TestXAIParse(t *testing.T) {
	a, err := xai{}.parse([]byte(`{"id":"25de2f84","object":"response","model":"grok-4-fast-reasoning","status":"completed",
		"output":[
			{"type":"web_search_call","id":"fc_1","name":"web_search","call_id":"","arguments":"{\"query\":\"what is xAI\",\"num_results\":5}","status":"completed"},
			{"type":"x_search_call","id":"fc_2","name":"x_semantic_search","call_id":"","arguments":"not json","status":"completed"},
			{"type":"message","role":"assistant","status":"completed","content":[
				{"type":"output_text","text":"xAI is an AI company (see https://x.ai/company).","logprobs":[],"annotations":[
					{"type":"url_citation","url":"https://x.ai/company"},
					{"type":"url_citation","url":"https://en.wikipedia.org/wiki/XAI_%28company%29"},
					{"type":"url_citation","url":"https://x.ai/company"},
					{"type":"url_citation","url":"https://far.example/","title":"7","start_index":40,"end_index":400}]}]}],
		"citations":["https://news.example/xai"],
		"usage":{"input_tokens":1941,"output_tokens":583,"total_tokens":2524}}`))
	want := Answer{Text: "xAI is an AI company (see https://x.ai/company).", Queries: []string{"what is xAI"}, SourcesReported: true, Searches: 2,
		Sources: []Source{{URL: "https://x.ai/company", Domain: "x.ai"}, {URL: "https://en.wikipedia.org/wiki/XAI_%28company%29", Domain: "en.wikipedia.org"},
			{URL: "https://far.example/", Domain: "far.example"}, {URL: "https://news.example/xai", Domain: "news.example"}},
		Citations:   []Citation{{URL: "https://x.ai/company", Domain: "x.ai", Start: -1, End: -1}},
		InputTokens: 1941, OutputTokens: 583}
	if err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("%+v %v, want %+v", a, err, want)
	}
	e := Engine{InputPricePerMTok: 1, OutputPricePerMTok: 1, SearchPricePer1K: 5}
	if cost := e.Cost(a); !near(cost*1e6, 1941+583+10_000) {
		t.Errorf("cost without xAI's: %v", cost)
	}
	a, err = xai{}.parse([]byte(`{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"x","annotations":[]}]}],
		"usage":{"input_tokens":1,"output_tokens":1,"cost_in_usd_ticks":37756000,"server_side_tool_usage_details":{"web_search_calls":0,"x_search_calls":0}}}`))
	if err != nil || a.SourcesReported || a.Searches != 0 || !near(a.CostUSD, 0.0037756) {
		t.Errorf("no search, 37756000 ticks: %+v %v", a, err)
	}
	for _, body := range []string{`{"status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}`,
		`{"code":"Internal error","error":"The model failed."}`} {
		if _, err := (xai{}).parse([]byte(body)); err == nil || err.Error() != "The model failed." {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestCharSpan: xAI's character offsets as bytes.
func TestCharSpan(t *testing.T) {
	for _, tc := range []struct {
		s          string
		start, end int
		bs, be     int
		ok         bool
	}{
		{"abc", 0, 3, 0, 3, true}, {"abc", 3, 3, 3, 3, true}, {"é—x", 1, 2, 2, 5, true}, {"é—x", 2, 3, 5, 6, true},
		{"é—x", 0, 4, 0, 0, false}, {"é—x", 2, 1, 0, 0, false}, {"", 0, 0, 0, 0, true}, {"a", -1, 1, 0, 0, false},
	} {
		bs, be, ok := charSpan(tc.s, tc.start, tc.end)
		if ok != tc.ok || ok && (bs != tc.bs || be != tc.be) {
			t.Errorf("charSpan(%q, %d, %d) = %d, %d, %v", tc.s, tc.start, tc.end, bs, be, ok)
		}
	}
}

// TestXAIErrors: throttling and server errors are retried with the wait
// asked; a bad key is refused at once without showing any of it; a 410
// (Live Search's answer) is permanent and says so; either error body is
// read.
func TestXAIErrors(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "xai-right-0123456789"
	f.Answer("grok-4", "hello")
	c := &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond, MaxAttempts: 5}
	e := Engine{Label: "Grok", Kind: KindXAI, BaseURL: f.XAI(), Model: "grok-4", APIKey: f.Key}
	for _, tc := range []struct {
		fail probefake.Failure
		wait time.Duration
		text string
	}{
		{probefake.Failure{Status: 429, RetryAfter: "7"}, 7 * time.Second, "429 Too Many Requests: Too many requests: Your team has reached"},
		{probefake.Failure{Status: 503}, 0, "503 Service Unavailable"},
		{probefake.Failure{Status: 500}, 0, "500 Internal Server Error: Internal error: An internal error occurred."},
	} {
		f.FailWith("grok-4", tc.fail)
		_, wait, err := c.once(context.Background(), e, xai{}, Request{Prompt: "hi"})
		if err == nil || errors.Is(err, ErrPermanent) || wait != tc.wait || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%d: wait %v, %v", tc.fail.Status, wait, err)
		}
	}
	f.FailWith("grok-4", probefake.Failure{Status: 429, RetryAfter: "0.01"}, probefake.Failure{Status: 503}, probefake.Failure{Status: 500})
	if a, err := c.Ask(context.Background(), e, "hi"); err != nil || a.Text != "hello" || a.Attempts != 4 {
		t.Errorf("after three retried failures: %+v %v", a, err)
	}

	f.FailWith("grok-4", probefake.Failure{Status: http.StatusGone})
	before := f.Requests()
	_, err := c.Ask(context.Background(), e, "hi")
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "410 Gone") || !strings.Contains(err.Error(), "Live search is deprecated") ||
		FailureOf(err).Category != FailBadRequest || f.Requests()-before != 1 {
		t.Errorf("410: %v", err)
	}

	before = f.Requests()
	e.APIKey = "xai-wrong-secret-key"
	_, err = c.Ask(context.Background(), e, "hi")
	if !errors.Is(err, ErrPermanent) || FailureOf(err).Category != FailRefusedKey || !strings.Contains(err.Error(), "the API key is missing, wrong or revoked") ||
		strings.Contains(err.Error(), "ey***") || strings.Contains(err.Error(), e.APIKey) || f.Requests()-before != 1 {
		t.Errorf("a bad key: %v", err)
	}

	// The Chat Completions body, nested, read too.
	_, err = xai{}.failure(400, nil, []byte(`{"error":{"message":"Model not found: grok-9","type":"invalid_request_error","code":"model_not_found"}}`))
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "400 Bad Request: invalid_request_error: Model not found: grok-9") {
		t.Errorf("the nested body: %v", err)
	}
}

// TestFakeXAIRules: the fake answers as xAI does what the adapter never
// sends: Live Search's search_parameters (410, flat body), a tool option
// xAI does not document (a location), an empty message.
func TestFakeXAIRules(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Answer("grok-4", "ok")
	for _, tc := range []struct {
		name, body string
		status     int
		says       string
	}{
		{"live search", `{"model":"grok-4","input":[{"role":"user","content":"hi"}],"search_parameters":{"mode":"auto"}}`, 410, `"error":"Live search is deprecated`},
		{"a location", `{"model":"grok-4","input":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search","user_location":{"country":"DE"}}]}`, 400, "unknown field `user_location`"},
		{"OpenAI's preview tool", `{"model":"grok-4","input":"hi","tools":[{"type":"web_search_preview"}]}`, 400, "unknown variant"},
		{"an empty message", `{"model":"grok-4","input":[{"role":"user","content":""}]}`, 400, "Each message must have at least one content element."},
		{"x_search dates", `{"model":"grok-4","input":"hi","tools":[{"type":"x_search","from_date":"2026-10-01","to_date":"10/10/2026"}]}`, 400, "YYYY-MM-DD"},
		{"both tools", `{"model":"grok-4","input":"hi","tools":[{"type":"web_search","allowed_domains":["x.ai"]},{"type":"x_search","from_date":"2026-10-01"}]}`, 200, `"call_id":""`},
	} {
		resp, err := http.Post(f.XAI()+"/responses", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(b.String(), tc.says) {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b.String())
		}
	}
}
