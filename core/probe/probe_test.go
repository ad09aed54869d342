package probe

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
)

var subject = Subject{Domain: "acme.example", Brands: []string{"Acme"}, Aliases: []string{"Acme Corp"},
	Competitors: []string{"Globex", "Initech"}, Topics: []string{"rocket skates"},
	Prompts: []Prompt{{Text: "Which rocket skates should I buy?"}, {Text: "Who makes the fastest rocket skates?", Intent: Discovery}}}

// The canned answers, and what a hand reading of each finds.
const (
	a1 = "The best options are Acme (https://acme.example/pricing) and Globex. Acme is excellent and reliable."
	a2 = "Globex is the leader, followed by Initech and Acme."
	a3 = "I recommend Globex or Initech."
	a4 = "Acme has poor support and terrible pricing."
)

func near(a, b float64) bool { return math.Abs(a-b) < 5e-4 }

func TestAnalyze(t *testing.T) {
	f := Analyze(subject, Answer{Text: a1})
	if !f.Mentioned || f.Position != 1 || !f.Cited || f.CitedURLs[0] != "https://acme.example/pricing" || len(f.Competitors) != 1 || len(f.Sentences) != 2 {
		t.Errorf("a1: %+v", f)
	}
	if f := Analyze(subject, Answer{Text: a2}); !f.Mentioned || f.Position != 3 || f.Cited || len(f.Competitors) != 2 {
		t.Errorf("a2: %+v", f)
	}
	if f := Analyze(subject, Answer{Text: a3}); f.Mentioned || f.Position != 0 || len(f.Competitors) != 2 {
		t.Errorf("a3: %+v", f)
	}
	// Names are matched as whole words; the domain counts as a mention; a
	// subdomain's URL is a citation; another domain's is not.
	for text, want := range map[string]bool{
		"Acmeology is a field.":               false,
		"See docs.acme.example/start.":        true,
		"Visit https://notacme.example today": false,
		"ACME CORP makes them.":               true,
	} {
		if got := Analyze(subject, Answer{Text: text}).Mentioned; got != want {
			t.Errorf("%q: mentioned %v", text, got)
		}
	}
	if f := Analyze(subject, Answer{Text: "Docs: https://docs.acme.example/a, and https://evil.example/acme.example."}); len(f.CitedURLs) != 1 || f.CitedURLs[0] != "https://docs.acme.example/a" {
		t.Errorf("citations %+v", f.CitedURLs)
	}
	if Compound("Acme is excellent and reliable.") <= 0.5 || Compound("Acme has poor support and terrible pricing.") >= -0.5 {
		t.Error("VADER's compound has the wrong sign")
	}
}

func TestPrompts(t *testing.T) {
	ps := Prompts(subject, 20)
	if ps[0].Intent != Custom || ps[1].Intent != Discovery || ps[2].Intent != Discovery || ps[3].Intent != Comparison || ps[4].Intent != Branded {
		t.Fatalf("order %+v", ps)
	}
	if len(ps) != 2+2+4+2 {
		t.Errorf("%d prompts: %+v", len(ps), ps)
	}
	if !strings.Contains(ps[3].Text, "Acme compare to Globex") || strings.Contains(ps[2].Text, "Acme") {
		t.Errorf("texts %+v", ps)
	}
	if n := len(Prompts(subject, 5)); n != 5 {
		t.Errorf("capped: %d", n)
	}
	// The cap takes only generated prompts: the owner's are all asked.
	if ps := Prompts(subject, 1); len(ps) != 2 || ps[1].Text != subject.Prompts[1].Text {
		t.Errorf("a cap below the owner's prompts: %+v", ps)
	}
}

func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		k, n      int
		low, high float64
	}{{3, 4, 0.3006, 0.9544}, {0, 10, 0, 0.2775}, {10, 10, 0.7225, 1}, {50, 100, 0.4038, 0.5962}} {
		iv := Wilson(tc.k, tc.n)
		if !near(iv.Low, tc.low) || !near(iv.High, tc.high) {
			t.Errorf("Wilson(%d, %d) = %+v, want [%.4f, %.4f]", tc.k, tc.n, iv, tc.low, tc.high)
		}
	}
	if iv := Wilson(0, 0); iv.Low != 0 || iv.High != 1 {
		t.Errorf("no trials: %+v", iv)
	}
}

// TestRun: three engines against the fake: one answers the four canned
// answers, one is throttled before it answers, one always fails. The
// figures are the hand-computed ones.
func TestRun(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Answer("alpha", a1, a2, a3, a4)
	f.Answer("beta", a3)
	f.Fail("beta", 429, 503)
	f.Answer("gamma", a1)
	f.Fail("gamma", 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500)
	p := &Prober{Client: &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond, MaxAttempts: 3}, Runs: 2, MaxPrompts: 2,
		Engines: []Engine{
			{Label: "Alpha", BaseURL: f.URL(), Model: "alpha", Concurrency: 2, InputPricePerMTok: 2, OutputPricePerMTok: 8},
			{Label: "Beta", BaseURL: f.URL(), Model: "beta", Concurrency: 1},
			{Label: "Gamma", BaseURL: f.URL(), Model: "gamma", Concurrency: 3},
		}}
	res := p.Run(context.Background(), subject)
	if len(res.Prompts) != 2 || res.Runs != 2 || len(res.Engines) != 3 {
		t.Fatalf("%+v", res)
	}
	al := res.Engines[0]
	if al.Probes != 4 || al.Failed != 0 || al.Mention.Hits != 3 || al.Mention.Value != 0.75 || al.Citation.Value != 0.25 ||
		al.FirstPosition.Value != 0.5 || !near(al.AveragePosition, 5.0/3) || !near(al.PositionScore, (1+1.0/3+1)/3) ||
		al.ShareOfVoice.Hits != 3 || al.ShareOfVoice.Of != 8 || al.Competitors["Globex"] != 3 || al.Competitors["Initech"] != 2 {
		t.Errorf("alpha: %+v", al.Stats)
	}
	// A plain model reports no sources: its citations are a1's text URL,
	// and it has no source share.
	if al.Kind != KindOpenAIChat || al.SourcesReported.Hits != 0 || al.SourcesReported.Of != 4 || al.SourceShare != nil ||
		!reflect.DeepEqual(al.CitedPages, []PageCount{{"https://acme.example/pricing", 1}}) {
		t.Errorf("alpha's sources: %+v", al)
	}
	if !near(al.Mention.Interval.Low, 0.3006) || !near(al.Mention.Interval.High, 0.9544) {
		t.Errorf("alpha's mention interval %+v", al.Mention.Interval)
	}
	// Sentiment: the four sentences that name Acme, two positive-leaning,
	// one neutral-leaning, one negative.
	cs := []float64{Compound("The best options are Acme (https://acme.example/pricing) and Globex."), Compound("Acme is excellent and reliable."),
		Compound("Globex is the leader, followed by Initech and Acme."), Compound("Acme has poor support and terrible pricing.")}
	mean := (cs[0] + cs[1] + cs[2] + cs[3]) / 4
	if al.Sentiment.Sentences != 4 || !near(al.Sentiment.Score, mean) || al.Sentiment.Negative != 1 || al.Sentiment.Label != "mixed" ||
		!near(al.Sentiment.Confidence, 4.0/9) {
		t.Errorf("alpha's sentiment %+v (compounds %v)", al.Sentiment, cs)
	}
	// Tokens: the fake counts words; cost at $2 and $8 per million.
	if al.InputTokens == 0 || !near(al.CostUSD*1e6, float64(al.InputTokens*2+al.OutputTokens*8)) {
		t.Errorf("alpha's cost %+v", al.Stats)
	}
	be := res.Engines[1]
	if be.Probes != 4 || be.Failed != 0 || be.Mention.Value != 0 || be.ShareOfVoice.Of != 8 || be.MaxInFlight != 1 {
		t.Errorf("beta (throttled, then answering): %+v", be)
	}
	ga := res.Engines[2]
	if ga.Failed != 4 || ga.Mention.Of != 0 || len(ga.Errors) != 3 || !strings.Contains(ga.Errors[0], "500") {
		t.Errorf("gamma (failing): %+v", ga)
	}
	if al.MaxInFlight > 2 || f.Requests() != 4+6+12 {
		t.Errorf("alpha in flight %d, %d requests", al.MaxInFlight, f.Requests())
	}
	ov := res.Overall
	if ov.Probes != 12 || ov.Failed != 4 || ov.Mention.Hits != 3 || ov.Mention.Of != 8 || ov.ShareOfVoice.Of != 16 {
		t.Errorf("overall %+v", ov)
	}
}

func TestAskErrors(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Key = "sk-right"
	f.Answer("m", "hello")
	c := &Client{HTTP: http.DefaultClient, Backoff: time.Millisecond}
	if _, err := c.Ask(context.Background(), Engine{Label: "E", BaseURL: f.URL(), Model: "m", APIKey: "sk-wrong"}, "hi"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong key: %v", err)
	}
	if f.Requests() != 1 {
		t.Errorf("a permanent error was retried: %d requests", f.Requests())
	}
	if _, err := c.Ask(context.Background(), Engine{Label: "E", BaseURL: f.URL(), Model: "nope", APIKey: "sk-right"}, "hi"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("an unknown model: %v", err)
	}
	f.Fail("m", 429, 429, 502)
	a, err := c.Ask(context.Background(), Engine{Label: "E", BaseURL: f.URL(), Model: "m", APIKey: "sk-right"}, "hi")
	if err != nil || a.Text != "hello" || a.Attempts != 4 {
		t.Errorf("after three retries: %+v %v", a, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Ask(ctx, Engine{Label: "E", BaseURL: f.URL(), Model: "m", APIKey: "sk-right"}, "hi"); err == nil {
		t.Error("a cancelled ask answered")
	}
}

// TestFakeAnswersTo: the fake answers a prompt by what it holds, the
// matching answer first, before its answers in turn, which the matched
// ones take no turn of.
func TestFakeAnswersTo(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	f.Answer("m", "first", "second")
	f.AnswerTo("m", "rewrite", "rewritten")
	f.AnswerTo("m", "draft", "drafted")
	c := &Client{HTTP: http.DefaultClient}
	e := Engine{Label: "E", BaseURL: f.URL(), Model: "m"}
	var got []string
	for _, p := range []string{"hi", "please rewrite this", "please draft that", "rewrite, then draft", "hello"} {
		a, err := c.Ask(context.Background(), e, p)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.Text)
	}
	if want := "first rewritten drafted rewritten second"; strings.Join(got, " ") != want {
		t.Errorf("answers %q, want %q", got, want)
	}
	f2 := probefake.New()
	defer f2.Close()
	f2.AnswerTo("m", "rewrite", "rewritten")
	if _, err := c.Ask(context.Background(), Engine{Label: "E", BaseURL: f2.URL(), Model: "m"}, "hi"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a prompt no answer matches, without answers in turn: %v", err)
	}
}

// TestComplete: the request carries the system message first, the answer
// cap and the temperature; Ask sends the user message alone.
func TestComplete(t *testing.T) {
	var got []chatRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cr chatRequest
		if err := json.NewDecoder(r.Body).Decode(&cr); err != nil {
			t.Error(err)
		}
		got = append(got, cr)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":7,"completion_tokens":1}}`))
	}))
	defer srv.Close()
	c := &Client{HTTP: srv.Client()}
	e := Engine{Label: "E", BaseURL: srv.URL + "/v1", Model: "m"}
	a, err := c.Complete(context.Background(), e, Request{System: "rules", Prompt: "text", MaxTokens: 512, Temperature: 0.2})
	if err != nil || a.Text != "ok" || a.InputTokens != 7 || a.OutputTokens != 1 {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := c.Ask(context.Background(), e, "hi"); err != nil {
		t.Fatal(err)
	}
	t02, t07 := 0.2, 0.7
	want := []chatRequest{
		{Model: "m", Messages: []chatMessage{{"system", "rules"}, {"user", "text"}}, Temperature: &t02, MaxTokens: 512},
		{Model: "m", Messages: []chatMessage{{"user", "hi"}}, Temperature: &t07},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests %+v, want %+v", got, want)
	}
}

// TestUnreachableEngineNamesNoAddress: an engine that cannot be reached
// fails with an error that names neither its URL nor an address.
func TestUnreachableEngineNamesNoAddress(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close()
	c := &Client{HTTP: &http.Client{}, MaxAttempts: 2, Backoff: time.Millisecond}
	_, err := c.Ask(context.Background(), Engine{Label: "local", BaseURL: base, Model: "m"}, "hi")
	if err == nil || !strings.Contains(err.Error(), "could not be reached") {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), base) {
		t.Errorf("the error names the address: %v", err)
	}
}
