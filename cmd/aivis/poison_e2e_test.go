package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// TestPoisonedDestinationOnPostgres: one tenant's workflow connection
// targets a hook that answers every event with 400 and a body of a NUL
// and bytes that are not UTF-8, which PostgreSQL's text refuses; another
// tenant's webhook answers 200. On one instance of a cluster, the first
// tenant's deliveries end as failed with the answer's words as text, and
// the other's are delivered once each and recorded: none of them is
// left pending under its lease, to be sent again when it ends.
func TestPoisonedDestinationOnPostgres(t *testing.T) {
	c := newCluster(t)
	cli(t, c.dir, nil, "plugin", "register", buildPlugin(t, "../../connectors/workflow", "workflow"))
	poisoner := newKey(t, c.dir, newAccount(t, c.dir, "enterprise", false).ID)
	victim := newKey(t, c.dir, newAccount(t, c.dir, "enterprise", false).ID)
	s := c.start(t, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")

	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Aivis-Event") == "webhook_test" {
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte("bad\x00request \xff\xfe"))
	}))
	defer hook.Close()
	conn := connect(t, s.server, poisoner, "workflow", `{"webhook_url":"`+hook.URL+`/webhook/aivis"}`)
	rc := newHookReceiver(t)
	var wh client.Webhook
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(victim),
		body: `{"domain":"victim.example","events":["ai_visibility_change"],"url":"` + rc.URL + `"}`})
	r.decode(t, &wh)
	if r.Status != 201 {
		t.Fatalf("the victim's webhook: %d %s", r.Status, r.Body)
	}

	const readings = 8
	for i := range readings {
		for _, p := range []struct {
			k      key
			domain string
		}{{poisoner, "poisoner.example"}, {victim, "victim.example"}} {
			body := fmt.Sprintf(`{"domain":"%s","visibility_score":%d,"sentiment":"neutral"}`, p.domain, 10+5*i)
			if r := s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(p.k), body: body}); r.Status != 201 {
				t.Fatalf("reading: %d %s", r.Status, r.Body)
			}
		}
	}
	deliveries := func(k key, path string) []client.Delivery {
		var dl client.List[client.Delivery]
		s.do(t, req{method: "GET", path: path + "?limit=100", header: bearer(k)}).decode(t, &dl)
		return dl.Items
	}
	settled := func(k key, path, status string) bool {
		n := 0
		for _, d := range deliveries(k, path) {
			if d.Event == "webhook_test" {
				continue
			}
			if d.Status != status {
				return false
			}
			n++
		}
		return n == readings
	}
	waitFor(t, "the poisoner's deliveries recorded as failed", func() bool {
		return settled(poisoner, "/v1/connections/"+conn.ID+"/deliveries", "failed")
	})
	waitFor(t, "the victim's deliveries recorded as delivered", func() bool {
		return settled(victim, "/v1/webhooks/"+wh.ID+"/deliveries", "succeeded")
	})
	for _, d := range deliveries(poisoner, "/v1/connections/"+conn.ID+"/deliveries") {
		if d.Event == "webhook_test" {
			continue
		}
		if d.LastError == nil || !utf8.ValidString(*d.LastError) || !strings.Contains(*d.LastError, "400: badrequest \uFFFD") {
			t.Errorf("the poisoner's delivery %s: last error %v", d.ID, d.LastError)
		}
	}
	// Every outcome is recorded (above): no lease is left to end, and each
	// of the victim's events reached it once.
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.ids) != readings+1 { // and the webhook's test
		t.Errorf("the victim's receiver got %d events, want %d", len(rc.ids), readings+1)
	}
	for id, n := range rc.ids {
		if n != 1 {
			t.Errorf("the victim's receiver got %s %d times", id, n)
		}
	}
}

// TestPoisonedAnswersOnPostgres: an engine answers with a NUL in its text
// and sources whose URLs are javascript: and data:, another fails with a
// 429 whose words name the operator's organisation. On a cluster the scan
// completes; its answers are text with only web pages for sources, and
// the failures read as a category and a status, without the engine's
// words, which the operator's log keeps.
func TestPoisonedAnswersOnPostgres(t *testing.T) {
	c := newCluster(t)
	engine := probefake.New()
	defer engine.Close()
	engine.Script("sonar", probefake.Reply{Text: "Acme\x00 makes the best skates.",
		Sources: []probefake.Source{{URL: "https://acme.invalid/skates", Title: "Skates"}, {URL: "javascript:alert(document.cookie)", Title: "x"},
			{URL: "data:text/html,<script>alert(1)</script>", Title: "y"}}})
	words := "Rate limit reached for gpt-0 in organization org-Operator123 on requests per min (RPM): Limit 3"
	for range 6 * 4 { // each probe's every attempt
		engine.FailWith("limited", probefake.Failure{Status: 429, Message: words, RetryAfter: "0.01"})
	}
	engine.Answer("limited", "Globex, mostly.")
	engine.Key = "sk-test"
	t.Setenv("AIVIS_TEST_ENGINE_KEY", engine.Key)
	cfg := writeConfig(t, t.TempDir(), map[string]any{"engines": []map[string]any{
		{"label": "Search", "kind": "perplexity", "base_url": engine.Root(), "model": "sonar", "api_key_env": "AIVIS_TEST_ENGINE_KEY"},
		{"label": "limited", "base_url": engine.URL(), "model": "limited", "api_key_env": "AIVIS_TEST_ENGINE_KEY"}}})
	k := newKey(t, c.dir, newAccount(t, c.dir, "enterprise", false).ID)
	s := c.start(t, "--config", cfg)
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: `{"domain":"acme.invalid","brands":["Acme"]}`}); r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	sc := completedScan(t, s.server, k, "acme.invalid")
	var page client.List[client.ScanAnswer]
	s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + sc.ID + "/answers?limit=100", header: bearer(k)}).decode(t, &page)
	var limited, sources int
	for _, a := range page.Items {
		sources += len(a.Sources)
		if strings.ContainsRune(a.Text, 0) {
			t.Errorf("answer %d keeps a NUL: %q", a.Seq, a.Text)
		}
		for _, src := range a.Sources {
			if !strings.HasPrefix(src.URL, "https://") {
				t.Errorf("answer %d keeps the source %q", a.Seq, src.URL)
			}
		}
		if a.Error == nil {
			continue
		}
		limited++
		if *a.Error != "the engine is rate limited (HTTP 429)" || a.ErrorCategory == nil || *a.ErrorCategory != "rate_limited" ||
			a.ErrorStatus == nil || *a.ErrorStatus != 429 {
			t.Errorf("answer %d of %s: error %q, category %v, status %v", a.Seq, a.Engine, *a.Error, a.ErrorCategory, a.ErrorStatus)
		}
	}
	if limited != 6 || sources != 6 || strings.Contains(string(sc.Result), "org-Operator123") {
		t.Errorf("%d failed answers, %d sources; the result %s", limited, sources, sc.Result)
	}
	if !s.logged("probe: an engine failed", "org-Operator123") {
		t.Error("the operator's log does not keep the engine's words")
	}
}
