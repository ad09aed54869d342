package kit

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/plugins/sdk"
)

func TestDecode(t *testing.T) {
	var s struct {
		URL   string     `json:"url"`
		Notes *bool      `json:"notes"`
		At    *time.Time `json:"at"`
	}
	for in, field := range map[string]string{
		`[]`:                   "",
		`"x"`:                  "",
		`{"url": 5}`:           "url",
		`{"notes": "yes"}`:     "notes",
		`{"colour": "red"}`:    "colour",
		`{"url": "a"} {"b":1}`: "",
		`{"url": `:             "",
		`{"at": 5}`:            "",
	} {
		f := Decode(json.RawMessage(in), &s)
		if len(f) != 1 || f[0].Field != field || f[0].Message == "" || strings.Contains(f[0].Message, "json:") ||
			strings.Contains(f[0].Message, "Unmarshal") {
			t.Errorf("%s: %+v, want one problem on %q, in words of the API's", in, f, field)
		}
	}
	if f := Decode(json.RawMessage(` {"url": "https://x", "notes": false}`), &s); f != nil || s.URL != "https://x" || *s.Notes {
		t.Errorf("%+v %+v", f, s)
	}
	var fs Fields
	fs.URL("a", "https://user:pw@x", true, false)
	fs.URL("b", "http://x", true, true)
	fs.URL("c", "", true, false)
	fs.URL("d", "", false, false)
	if len(fs) != 3 || fs[0].Field != "a" || fs[1].Field != "b" || fs[2].Field != "c" {
		t.Errorf("%+v", fs)
	}
}

func TestRetryAfterAndStatus(t *testing.T) {
	h := http.Header{}
	if RetryAfter(h) != 0 {
		t.Error("absent")
	}
	h.Set("Retry-After", "2.5")
	if RetryAfter(h) != 2500*time.Millisecond {
		t.Error(RetryAfter(h))
	}
	h.Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
	if d := RetryAfter(h); d < 59*time.Minute || d > time.Hour {
		t.Error(d)
	}
	for status, want := range map[int]sdk.Outcome{200: sdk.Delivered, 204: sdk.Delivered, 302: sdk.PermanentFailure, 404: sdk.PermanentFailure,
		408: sdk.Retry, 410: sdk.Gone, 429: sdk.Retry, 500: sdk.Retry} {
		if r := ByStatus(Response{Status: status, Body: []byte("  no\n  way ")}, "X"); r.Outcome != want || (want != sdk.Delivered && r.Reason == "") {
			t.Errorf("%d: %+v", status, r)
		}
	}
}

// A destination's answer becomes a reason that is text: on one line, a
// NUL gone, bytes that are not UTF-8 replaced, cut on a character.
func TestSnippetIsText(t *testing.T) {
	for body, want := range map[string]string{
		"bad\x00request":           "badrequest",
		"\xff\xfe{\"error\": 1}\n": "\uFFFD{\"error\": 1}",
		strings.Repeat("日本", 150):  strings.Repeat("日本", 99) + "日…",
	} {
		r := ByStatus(Response{Status: 400, Body: []byte(body)}, "X")
		if r.Reason != "X answered 400: "+want {
			t.Errorf("body %q: reason %q", body, r.Reason)
		}
	}
}

func TestParse(t *testing.T) {
	ev := sdk.Event{ID: "evt_1", Kind: "content_optimized", Timestamp: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
		Body: []byte(`{"id":"evt_1","event":"content_optimized","data":{"id":"cr_1","domain":"example.com","url":"https://example.com/a","spent":1.25,"score_before":40,"score_after":71}}`)}
	a := Parse(ev)
	if a.Domain != "example.com" || *a.ScoreBefore != 40 || *a.ScoreAfter != 71 || *a.Spent != 1.25 || a.URL != "https://example.com/a" {
		t.Fatalf("%+v", a)
	}
	want := "Content optimized: example.com\nContent score: 40 → 71\nURL: https://example.com/a\nSpent: $1.25\nWhen: 2026-01-02 03:04 UTC"
	if a.Text() != want {
		t.Errorf("text %q", a.Text())
	}
	if got := Parse(sdk.Event{Kind: "x_y", Body: []byte("not json")}); got.Kind != "x_y" || Title("x_y") != "X y" {
		t.Errorf("%+v %q", got, Title("x_y"))
	}
	if Truncate("héllo", 3) != "hé…" || Truncate("hé", 3) != "hé" {
		t.Error(Truncate("héllo", 3))
	}
}

// The citation figures read as people read them: percentages with their
// counts, the previous scan's, the change in points.
func TestCitationAlerts(t *testing.T) {
	a := Parse(kittest.Citation("evt_c", "example.com"))
	when := "\nWhen: " + a.Time.Format("2006-01-02 15:04 MST")
	if h := a.Headline(); h != "Citation rate changed: example.com in Perplexity (de-DE) 12.5% (-27.5 pts)" {
		t.Errorf("headline %q", h)
	}
	want := "Citation rate changed: example.com in Perplexity (de-DE) 12.5% (-27.5 pts)\nEngine: Perplexity (perplexity, search_api)\nMarket: de-DE" +
		"\nCitation rate: 12.5% (1 of 8), was 40% (4 of 10): -27.5 pts\nSource share: 3.3% (1 of 30), was 7.5% (3 of 40)" + when
	if a.Text() != want {
		t.Errorf("text %q\nwant %q", a.Text(), want)
	}
	s := Parse(kittest.Scan("evt_s", "example.com"))
	want = "Visibility scan completed: example.com 64\nVisibility score: 64/100\nSentiment: positive\nReadiness score: 80/100" +
		"\nCitation rate: 25% (5 of 20)\nSource share: 7.5% (3 of 40)" +
		"\nCitations by engine: ChatGPT: cited in 10% (1 of 10)\nPerplexity: cited in 40% (4 of 10), 7.5% of sources" + when
	if s.Text() != want {
		t.Errorf("text %q\nwant %q", s.Text(), want)
	}
	for v, want := range map[float64]string{23.333: "+23.33 pts", -10: "-10 pts", 0.004: "0 pts", -0.004: "0 pts"} {
		if Points(v) != want {
			t.Errorf("Points(%v) = %q, want %q", v, Points(v), want)
		}
	}
}

// crawler_errors reads as people read it: the errors and the cited pages
// in the headline, each page with its agents' errors by status class and
// the engines that cite it; a page the event leaves out is counted.
func TestCrawlerErrorsAlert(t *testing.T) {
	a := Parse(kittest.CrawlerErrors("evt_e", "example.com"))
	when := "\nWhen: " + a.Time.Format("2006-01-02 15:04 MST")
	want := "AI crawlers got errors: example.com 14 errors on 2 cited pages\nCrawler errors: 14 errors on 2 cited pages\nDays: 2026-11-27" +
		"\nPages: /pricing: 11 errors (GPTBot 9 4xx, PerplexityBot 2 5xx), cited by ChatGPT (6), Perplexity (3)" +
		"\n/docs/setup: 3 errors (OAI-SearchBot 3 5xx), cited by Perplexity (1)" + when
	if a.Text() != want {
		t.Errorf("text %q\nwant %q", a.Text(), want)
	}
	more := 25
	a.PagesWithErrors, a.ErrorPages = &more, a.ErrorPages[:1]
	if fs := a.Facts(); !strings.HasSuffix(fs[3].Value, "\nand 24 more") {
		t.Errorf("facts %+v: want the pages left out counted", fs)
	}
	other := Parse(kittest.Citation("evt_c", "example.com"))
	if other.CrawlerErrors != nil || other.ErrorPages != nil {
		t.Errorf("a citation_change read as crawler errors: %+v", other)
	}
}

// A request that gets no answer is retried with a reason that keeps its
// URL to the host: the path, query and user information of a hook URL
// are its credentials.
func TestUnreachableTellsNoSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Do(ctx, sdk.HTTPClient(5*time.Second), http.MethodPost, "https://user:pw@aivis-test.invalid/hooks/catch/s3cr3t?api_secret=t0k3n", nil, []byte(`{}`))
	if err == nil {
		t.Fatal("a request to an .invalid host was answered")
	}
	r := Unreachable("Zapier", err)
	if r.Outcome != sdk.Retry || !strings.HasPrefix(r.Reason, "Zapier: POST https://aivis-test.invalid: ") {
		t.Fatalf("%+v", r)
	}
	for _, secret := range []string{"user", "pw", "s3cr3t", "api_secret", "t0k3n"} {
		if strings.Contains(r.Reason, secret) {
			t.Errorf("the reason %q carries %q", r.Reason, secret)
		}
	}
}

// A scan's engines of a SERP surface, per market: each line names its
// market, and says how often the page showed an AI answer when it did
// not always; so does the scan's figure.
func TestScanAlertOfMarketsAndPresence(t *testing.T) {
	body := `{"id":"evt_m","event":"scan_completed","timestamp":"2026-11-22T10:38:56Z","data":{"domain":"example.com",` +
		`"citation_rate":{"value":0.1,"hits":2,"of":20},"source_share":null,"overview_presence":{"value":0.5,"hits":10,"of":20},"engines":[` +
		`{"label":"AI Overviews","kind":"serpapi","surface":"serp","market":{"country":"DE","language":"de"},"citation_rate":{"value":0.2,"hits":2,"of":10},"source_share":null,"overview_presence":{"value":0.3,"hits":3,"of":10}},` +
		`{"label":"AI Overviews","kind":"serpapi","surface":"serp","market":{"country":"US","language":"en"},"citation_rate":{"value":0,"hits":0,"of":10},"source_share":null,"overview_presence":{"value":1,"hits":10,"of":10}}]}}`
	a := Parse(sdk.Event{ID: "evt_m", Kind: "scan_completed", Body: []byte(body)})
	var lines, shown string
	for _, f := range a.Facts() {
		switch f.Label {
		case "Citations by engine":
			lines = f.Value
		case "AI answer shown":
			shown = f.Value
		}
	}
	want := "AI Overviews (de-DE): cited in 20% (2 of 10), AI answer shown in 30% (3 of 10)\nAI Overviews (en-US): cited in 0% (0 of 10)"
	if lines != want || shown != "50% (10 of 20)" {
		t.Errorf("engines %q\nwant %q; shown %q", lines, want, shown)
	}
}
