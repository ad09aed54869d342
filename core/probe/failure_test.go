package probe

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/text"
)

// An engine's failure reaches tenants as a fixed category and the status
// the engine answered, never in the engine's words, which may name the
// operator's organisation, quota or key; the operator's log keeps those
// words, the key redacted.
func TestFailuresTellTenantsACategory(t *testing.T) {
	f := probefake.New()
	defer f.Close()
	const key = "sk-operator-0123456789abcdef"
	f.Key = key
	words := "Rate limit reached for gpt-0 in organization org-Operator123 on requests per min (RPM): Limit 3, Used 3. Key " + key
	f.FailWith("limited", probefake.Failure{Status: 429, Message: words})
	f.FailWith("broken", probefake.Failure{Status: 503, Message: "upstream connect error for org-Operator123"})
	f.Answer("slow", "too late")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := "http://" + closed.Addr().String() + "/v1"
	closed.Close()

	var log bytes.Buffer
	f.Delay = 200 * time.Millisecond // past the slow engine's timeout alone
	p := &Prober{Client: &Client{HTTP: &http.Client{}, MaxAttempts: 1}, Runs: 1, MaxPrompts: 1, Log: slog.New(slog.NewTextHandler(&log, nil)),
		Engines: []Engine{
			{Label: "limited", BaseURL: f.URL(), Model: "limited", APIKey: key},
			{Label: "refused", BaseURL: f.URL(), Model: "limited", APIKey: "sk-wrong"},
			{Label: "unknown", BaseURL: f.URL(), Model: "no-such-model", APIKey: key},
			{Label: "broken", BaseURL: f.URL(), Model: "broken", APIKey: key},
			{Label: "slow", BaseURL: f.URL(), Model: "slow", APIKey: key, Timeout: 50 * time.Millisecond},
			{Label: "nowhere", BaseURL: nowhere, Model: "x", APIKey: key},
		}}
	want := map[string]struct {
		category string
		status   int
		public   string
	}{
		"limited": {FailRateLimited, 429, "the engine is rate limited (HTTP 429)"},
		"refused": {FailRefusedKey, 401, "the engine refused the API key (HTTP 401)"},
		"unknown": {FailBadRequest, 404, "the engine refused the request (HTTP 404)"},
		"broken":  {FailProvider, 503, "the engine failed (HTTP 503)"},
		"slow":    {FailTimeout, 0, "the engine did not answer in time"},
		"nowhere": {FailProvider, 0, "the engine failed"},
	}
	res := p.Run(context.Background(), Subject{Domain: "acme.example", Brands: []string{"Acme"}})
	for _, pr := range res.Probes {
		w := want[pr.Engine]
		if pr.Failure == nil || pr.Failure.Category != w.category || pr.Failure.Status != w.status || pr.Err != w.public {
			t.Errorf("%s: %+v %q, want %s %d %q", pr.Engine, pr.Failure, pr.Err, w.category, w.status, w.public)
		}
	}
	for _, e := range res.Engines {
		for _, msg := range e.Errors {
			if strings.Contains(msg, "org-") || strings.Contains(msg, "sk-") || strings.Contains(msg, "127.0.0.1") {
				t.Errorf("%s: a tenant reads %q", e.Label, msg)
			}
		}
	}
	logged := log.String()
	if !strings.Contains(logged, "org-Operator123 on requests per min") || strings.Contains(logged, key) {
		t.Errorf("the operator's log: %s", logged)
	}
}

// An engine's answer is kept as text with only web pages for sources: a
// NUL goes (the spans of its citations move with the text), and a source
// or citation whose URL is not http(s) (javascript:, data:) is dropped.
func TestAnswersKeepTextAndWebPages(t *testing.T) {
	a := Answer{Text: "Acme\x00 rocks. See \x00https://acme.example/a.",
		Sources: []Source{{URL: "https://acme.example/a", Title: "A\x00", Domain: "acme.example"},
			{URL: "javascript:alert(document.cookie)", Title: "evil"}, {URL: "data:text/html,<script>x</script>"},
			{URL: "HTTP://Globex.example/b"}, {Title: "named by its title", Domain: "initech.example"}},
		Citations: []Citation{{URL: "https://acme.example/a", Start: 18, End: 41, Text: "https://acme.example/a."},
			{URL: "javascript:void(0)", Start: 0, End: 4, Text: "Acme"}},
		Queries: []string{"rocket\x00 skates"}}
	got := a.tidy()
	if got.Text != "Acme rocks. See https://acme.example/a." {
		t.Errorf("text %q", got.Text)
	}
	if len(got.Sources) != 3 || got.Sources[0].Title != "A" || got.Sources[1].URL != "HTTP://Globex.example/b" || got.Sources[2].Title != "named by its title" {
		t.Errorf("sources %+v", got.Sources)
	}
	if len(got.Citations) != 1 || got.Text[got.Citations[0].Start:got.Citations[0].End] != "https://acme.example/a." {
		t.Errorf("citations %+v", got.Citations)
	}
	if got.Queries[0] != "rocket skates" {
		t.Errorf("queries %q", got.Queries)
	}
	if !text.Valid(got.Text) {
		t.Error("not text")
	}
}
