package probe

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
)

const dfsKey = "api-login@acme.example:0123456789abcdef"

func dfsEngine(f *probefake.Fake, model string) Engine {
	return Engine{Label: "AIO", Kind: KindDataForSEO, BaseURL: f.Root(), Model: model, APIKey: dfsKey}
}

// TestDataForSEOOverview: an AI Overview among a page's items, in a
// market: its paragraphs, an expanded element's title and components and
// a table in order, each element's references citing its text, the
// overview's references and the elements' its sources (text fragments
// gone), DataForSEO's cost its cost; the keyword sent as DataForSEO
// decodes it, the market in the task's codes and not in the prompt.
func TestDataForSEOOverview(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = dfsKey
	f.Script(DataForSEOOverview, probefake.Reply{
		Text: "Acme makes the fastest rocket skates.\n\n## Why Acme\nIts wheels last.\nIts brakes work.\n\n| Brand | Speed |\n|---|---|\n| Acme | 90 |",
		Sources: []probefake.Source{{URL: "https://acme.example/skates", Title: "Acme skates"},
			{URL: "https://www.reviews.example/best", Title: "Best skates"}},
		Citations: []probefake.Citation{{URL: "https://acme.example/skates", Title: "Acme skates", Quote: "fastest rocket skates"},
			{URL: "https://globex.example/about", Title: "About Globex", Quote: "Its brakes work."},
			{URL: "https://www.reviews.example/best", Title: "Best skates", Quote: "| Acme | 90 |"}}})
	c := &Client{HTTP: http.DefaultClient}
	e := dfsEngine(f, DataForSEOOverview)
	a, err := c.Complete(context.Background(), e, Request{System: "ignored", Prompt: "c++ skates 100% fast", MaxTokens: 50,
		Market: Market{Country: "DE", Language: "de"}})
	if err != nil {
		t.Fatal(err)
	}
	text := "Acme makes the fastest rocket skates.\n\nWhy Acme\n\nIts wheels last.\n\nIts brakes work.\n\n| Brand | Speed |\n|---|---|\n| Acme | 90 |"
	want := Answer{Text: text, SourcesReported: true, CostUSD: probefake.DataForSEOPrice(DataForSEOOverview, true), Attempts: 1,
		Sources: []Source{{URL: "https://acme.example/skates", Title: "Acme skates", Domain: "acme.example"},
			{URL: "https://www.reviews.example/best", Title: "Best skates", Domain: "reviews.example"},
			{URL: "https://globex.example/about", Title: "About Globex", Domain: "globex.example"}},
		Citations: []Citation{
			{URL: "https://acme.example/skates", Title: "Acme skates", Domain: "acme.example", Start: 0, End: 37, Text: "Acme makes the fastest rocket skates."},
			{URL: "https://globex.example/about", Title: "About Globex", Domain: "globex.example", Start: 67, End: 83, Text: "Its brakes work."},
			{URL: "https://www.reviews.example/best", Title: "Best skates", Domain: "reviews.example", Start: 85, End: len(text), Text: "| Brand | Speed |\n|---|---|\n| Acme | 90 |"}}}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("answer\n%+v, want\n%+v", a, want)
	}
	if cost := e.Cost(a); !near(cost*1e4, 26) {
		t.Errorf("cost %v, want DataForSEO's", cost)
	}
	if got, want := f.Tasks(), []probefake.Task{{Keyword: "c++ skates 100% fast", LocationCode: 2276, LanguageCode: "de", Device: "desktop", LoadAsync: true}}; !reflect.DeepEqual(got, want) {
		t.Errorf("tasks %+v, want %+v", got, want)
	}
	if e.Localisation() != LocaliseNative {
		t.Errorf("localisation %s", e.Localisation())
	}
}

// TestDataForSEOAIMode: AI Mode's one item; without a market the United
// States in English; a language AI Mode may not take is sent all the
// same.
func TestDataForSEOAIMode(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = dfsKey
	f.Script(DataForSEOAIMode, probefake.Reply{Text: "Globex leads. Acme follows.",
		Citations: []probefake.Citation{{URL: "https://globex.example/#:~:text=leads", Title: "Globex", Quote: "Globex leads."}}})
	c := &Client{HTTP: http.DefaultClient}
	e := dfsEngine(f, DataForSEOAIMode)
	a, err := c.Ask(context.Background(), e, "best skates")
	want := Answer{Text: "Globex leads. Acme follows.", SourcesReported: true, CostUSD: probefake.DataForSEOPrice(DataForSEOAIMode, true), Attempts: 1,
		Sources:   []Source{{URL: "https://globex.example/", Title: "Globex", Domain: "globex.example"}},
		Citations: []Citation{{URL: "https://globex.example/", Title: "Globex", Domain: "globex.example", Start: 0, End: 27, Text: "Globex leads. Acme follows."}}}
	if err != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("answer\n%+v %v, want\n%+v", a, err, want)
	}
	if _, err := c.Complete(context.Background(), e, Request{Prompt: "best skates", Market: Market{Country: "JP", Language: "ja"}}); err != nil {
		t.Fatal(err)
	}
	want2 := []probefake.Task{{Keyword: "best skates", LocationCode: 2840, LanguageCode: "en", Device: "desktop"},
		{Keyword: "best skates", LocationCode: 2392, LanguageCode: "ja", Device: "desktop"}}
	if got := f.Tasks(); !reflect.DeepEqual(got, want2) {
		t.Errorf("tasks %+v, want %+v", got, want2)
	}
}

// TestDataForSEOAbsent: a page without an AI Overview is an answer that
// is absent, not a failure, at its cost; so is AI Mode's empty page.
func TestDataForSEOAbsent(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Script(DataForSEOOverview, probefake.Reply{NoOverview: true})
	f.Script(DataForSEOAIMode, probefake.Reply{NoOverview: true})
	c := &Client{HTTP: http.DefaultClient}
	for _, model := range []string{DataForSEOOverview, DataForSEOAIMode} {
		a, err := c.Ask(context.Background(), dfsEngine(f, model), "rocket skates")
		want := Answer{Absent: true, CostUSD: probefake.DataForSEOPrice(model, false), Attempts: 1}
		if err != nil || !reflect.DeepEqual(a, want) {
			t.Errorf("%s: %+v %v, want %+v", model, a, err, want)
		}
	}
}

// TestDataForSEOFailures: a task Google failed (40101) is retried and
// billed, each attempt's cost in the answer's or the failure's; the daily
// cost limit (40203) and a body not of one task are permanent; HTTP 401
// and 402 permanent, 500 retried; the credentials never in an error.
func TestDataForSEOFailures(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = dfsKey
	f.Answer(DataForSEOOverview, "Acme.")
	c := &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond, MaxAttempts: 3}
	e := dfsEngine(f, DataForSEOOverview)
	billed := probefake.DataForSEOPrice(DataForSEOOverview, false)

	f.FailWith(DataForSEOOverview, probefake.Failure{Status: 40101}, probefake.Failure{Status: 500})
	a, err := c.Ask(context.Background(), e, "skates")
	if err != nil || a.Text != "Acme." || a.Attempts != 3 || !near(a.CostUSD*1e4, (billed+probefake.DataForSEOPrice(DataForSEOOverview, true))*1e4) {
		t.Errorf("after a 40101 and a 500: %+v %v", a, err)
	}

	f.FailWith(DataForSEOOverview, probefake.Failure{Status: 40101}, probefake.Failure{Status: 40101}, probefake.Failure{Status: 40101})
	_, err = c.Ask(context.Background(), e, "skates")
	fl := FailureOf(err)
	if errors.Is(err, ErrPermanent) || fl.Category != FailProvider || fl.Status != 200 || !near(fl.CostUSD*1e4, 3*billed*1e4) ||
		!strings.Contains(err.Error(), "40101 Internal SE Server Error.") {
		t.Errorf("three 40101s: %+v %v", fl, err)
	}

	for _, tc := range []struct {
		fail     probefake.Failure
		category string
		status   int
		text     string
	}{
		{probefake.Failure{Status: 40203}, FailRateLimited, 200, "40203 Daily cost limit exceeded"},
		{probefake.Failure{Status: 402}, FailBadRequest, 402, "402 Payment Required: 40200 We had a problem billing"},
		{probefake.Failure{Status: 401}, FailRefusedKey, 401, "401 Unauthorized: 40100 You are not authorized"},
	} {
		f.FailWith(DataForSEOOverview, tc.fail)
		before := f.Requests()
		_, err := c.Ask(context.Background(), e, "skates")
		fl := FailureOf(err)
		if !errors.Is(err, ErrPermanent) || fl.Category != tc.category || fl.Status != tc.status || fl.CostUSD != 0 ||
			!strings.Contains(err.Error(), tc.text) || f.Requests() != before+1 {
			t.Errorf("%d: %+v %v, %d requests", tc.fail.Status, fl, err, f.Requests()-before)
		}
	}

	// The fake refuses wrong credentials; DataForSEO's words may hold the
	// password or the Basic credentials, which the error does not.
	wrong := e
	wrong.APIKey = "api-login@acme.example:wrong-password-42"
	if _, err := c.Ask(context.Background(), wrong, "skates"); FailureOf(err).Status != 401 || !errors.Is(err, ErrPermanent) {
		t.Errorf("wrong credentials: %v", err)
	}
	basic := base64.StdEncoding.EncodeToString([]byte(dfsKey))
	f.FailWith(DataForSEOOverview, probefake.Failure{Status: 500, Message: "no such login: " + dfsKey + ", password 0123456789abcdef, Basic " + basic})
	_, err = (&Client{HTTP: http.DefaultClient, MaxAttempts: 1}).Ask(context.Background(), e, "skates")
	if err == nil || strings.Contains(err.Error(), "0123456789abcdef") || strings.Contains(err.Error(), basic) || !strings.Contains(err.Error(), "no such login") {
		t.Errorf("credentials in %v", err)
	}
}

// TestDataForSEOOneTask: the fake answers a body of two tasks 40000 in a
// 200, which the adapter reads as a request refused.
func TestDataForSEOOneTask(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Answer(DataForSEOOverview, "Acme.")
	resp, err := http.Post(f.Root()+"/v3/serp/google/organic/live/advanced", "application/json",
		bytes.NewReader([]byte(`[{"keyword":"a","location_code":2840,"language_code":"en"},{"keyword":"b","location_code":2840,"language_code":"en"}]`)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = dataForSEO{}.parse(b)
	if fl := FailureOf(err); resp.StatusCode != 200 || !errors.Is(err, ErrPermanent) || fl.Category != FailBadRequest || !strings.Contains(fl.Detail, "40000") {
		t.Errorf("two tasks: %d %s: %v", resp.StatusCode, b, err)
	}
}

// TestLocationCodes: a country's location code is 2000 and its ISO
// 3166-1 numeric code, which x/text's M49 gives for these countries.
func TestLocationCodes(t *testing.T) {
	for country, want := range map[string]int{"US": 2840, "GB": 2826, "DE": 2276, "FR": 2250, "JP": 2392, "BR": 2076, "IN": 2356, "AU": 2036, "": 2840} {
		if got := locationCode(country); got != want {
			t.Errorf("%q: %d, want %d", country, got, want)
		}
	}
	for lang, want := range map[string]string{"": "en", "en": "en", "de": "de", "zh-Hans": "zh-CN", "zh-Hant": "zh-TW"} {
		if got := languageCode(lang); got != want {
			t.Errorf("%q: %q, want %q", lang, got, want)
		}
	}
}

// TestDataForSEOModel: an engine of another model makes no request.
func TestDataForSEOModel(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	_, err := (&Client{HTTP: http.DefaultClient}).Ask(context.Background(), dfsEngine(f, "google"), "skates")
	if !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), `not "google"`) || f.Requests() != 0 {
		t.Errorf("%v, %d requests", err, f.Requests())
	}
}

// TestDataForSEOScanCost: a scan's cost counts what failed answers were
// billed (Google failed the search twice: 40101) beside the answers'.
func TestDataForSEOScanCost(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Answer(DataForSEOOverview, "Acme.")
	f.FailWith(DataForSEOOverview, probefake.Failure{Status: 40101}, probefake.Failure{Status: 40101})
	e := dfsEngine(f, DataForSEOOverview)
	e.Concurrency = 1
	p := &Prober{Client: &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond, MaxAttempts: 2}, Engines: []Engine{e}, Runs: 2, MaxPrompts: 1}
	res := p.Run(context.Background(), Subject{Domain: "acme.example", Brands: []string{"Acme"}, Prompts: []Prompt{{Text: "rocket skates"}}})
	billed := 2 * probefake.DataForSEOPrice(DataForSEOOverview, false)
	answered := probefake.DataForSEOPrice(DataForSEOOverview, true)
	if st := res.Engines[0].Stats; st.Probes != 2 || st.Failed != 1 || !near(st.CostUSD*1e4, (billed+answered)*1e4) || !near(res.Overall.CostUSD*1e4, (billed+answered)*1e4) {
		t.Errorf("%d probes, %d failed, cost %v (overall %v), want %v", st.Probes, st.Failed, st.CostUSD, res.Overall.CostUSD, billed+answered)
	}
}
