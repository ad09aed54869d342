package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// The page of the analysis's hand-checked test, given as content: 32 points
// for "best widgets for home".
func defectivePage(t *testing.T) string {
	b, err := os.ReadFile("../../core/content/analysis/testdata/defective.html")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	engineRewrite = "# Best widgets for home\n\nThe best widgets for home are Acme widgets: they last 3 times longer than other widgets, and 87% of buyers come back.\n\n" +
		"## Best widgets for home\n\nAcme widgets suit every home, and 45% of owners use two. [SOURCE NEEDED: a survey of owners]\n\n" +
		"## Why choose Acme widgets?\n\nAcme widgets last 3 times longer than other widgets."
	engineDrafts = `{"faq":[{"question":"Why choose Acme widgets?","answer":"They last 3 times longer than other widgets."}],"summary":"Acme's guide to widgets."}`
)

// contentConfig writes a configuration with one engine at prices where a
// call costs its input tokens plus twice its output tokens (µ$).
func contentConfig(t *testing.T, dir string, engine *probefake.Fake) string {
	return writeConfig(t, dir, map[string]any{"engines": []map[string]any{{"label": "Fake", "base_url": engine.URL(), "model": "m",
		"input_price_per_mtok": 1, "output_price_per_mtok": 2}}, "content_prices": map[string]any{"fetch": 0.001, "analysis": 0.002}})
}

// writeConfig writes cfg as the configuration file aivis.json in dir and
// returns its path.
func writeConfig(t *testing.T, dir string, cfg map[string]any) string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "aivis.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// scanConfig configures engine, which wants the key sk-test, as the AI
// engine that scans ask (its key from the environment): its model
// fake-model, labelled Fake, and each of models, labelled by its name.
func scanConfig(t *testing.T, dir string, engine *probefake.Fake, models ...string) string {
	engine.Key = "sk-test"
	t.Setenv("AIVIS_TEST_ENGINE_KEY", "sk-test")
	var engines []map[string]any
	for i, model := range append([]string{"fake-model"}, models...) {
		label := model
		if i == 0 {
			label = "Fake"
		}
		engines = append(engines, map[string]any{"label": label, "base_url": engine.URL(), "model": model,
			"api_key_env": "AIVIS_TEST_ENGINE_KEY", "concurrency": 2, "input_price_per_mtok": 1, "output_price_per_mtok": 2})
	}
	return writeConfig(t, dir, map[string]any{"engines": engines})
}

func getCR(t *testing.T, s *server, k key, id string) client.ContentRequest {
	t.Helper()
	r := s.do(t, req{method: "GET", path: crPath + "/" + id, header: keyed(k)})
	if r.Status != 200 {
		t.Fatalf("get %s: %d %s", id, r.Status, r.Body)
	}
	var env client.Envelope[client.ContentRequest]
	r.decode(t, &env)
	return env.Data
}

type contentResult struct {
	ScoreBefore   int     `json:"score_before"`
	ScoreAfter    int     `json:"score_after"`
	OptimizedText *string `json:"optimized_text"`
	Diff          *string `json:"diff"`
	Engine        *string `json:"engine"`
	Drafts        struct {
		Source    string          `json:"source"`
		FAQJSONLD json.RawMessage `json:"faq_json_ld"`
		LLMsTxt   string          `json:"llms_txt_entry"`
	} `json:"drafts"`
	Charges []struct {
		Item   string     `json:"item"`
		Amount client.USD `json:"amount"`
	} `json:"charges"`
}

// poll waits for cond, asking every quarter second (the tier's rate
// limit counts each look).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	pollEvery(t, 30*time.Second, 250*time.Millisecond, what, cond)
}

func words(s string) client.USD { return client.USD(len(strings.Fields(s))) }

// optimizedEvents reads the content_optimized events of a request from
// the event log.
func optimizedEvents(t *testing.T, s *server, k key, id string) []map[string]any {
	r := s.do(t, req{method: "GET", path: "/v1/events?event=content_optimized&limit=100", header: bearer(k)})
	if r.Status != 200 {
		t.Fatalf("events: %d %s", r.Status, r.Body)
	}
	var page client.List[struct {
		Data map[string]any `json:"data"`
	}]
	r.decode(t, &page)
	var out []map[string]any
	for _, it := range page.Items {
		if it.Data["id"] == id {
			out = append(out, it.Data)
		}
	}
	return out
}

// TestContentEngineEndToEnd: aivis serve optimizes a request against the
// fake engine; the API shows its result and what it spent, budget-status
// the unspent part released, the event log its content_optimized.
func TestContentEngineEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("m", engineRewrite, engineDrafts)
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", contentConfig(t, dir, engine))

	cr, r := create(t, s, keyed(k), jsonBody(client.CreateContentRequest{Domain: "acme.example", Budget: client.Dollars(1),
		Content: defectivePage(t), TargetQueries: []string{"best widgets for home"}}))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	poll(t, "the request completes", func() bool { cr = getCR(t, s, k, cr.ID); return cr.Status != "queued" && cr.Status != "processing" })
	if cr.Status != "completed" || cr.Step == nil || *cr.Step != "done" || cr.Reserved != 0 || cr.EndedAt == nil {
		t.Fatalf("request %+v", cr)
	}
	var res contentResult
	if err := json.Unmarshal(cr.Result, &res); err != nil {
		t.Fatal(err)
	}
	prompts := engine.Prompts()
	if len(prompts) != 2 {
		t.Fatalf("engine prompts %d", len(prompts))
	}
	want := client.Dollars(0.002)*2 + words(prompts[0]) + 2*words(engineRewrite) + words(prompts[1]) + 2*words(engineDrafts)
	if cr.Spent != want {
		t.Errorf("spent %s, want %s (%+v)", cr.Spent, want, res.Charges)
	}
	if res.ScoreBefore != 32 || res.ScoreAfter <= 32 || res.OptimizedText == nil ||
		!strings.Contains(*res.OptimizedText, "[FACT NEEDED: 45 is not in the original]% of owners") || res.Diff == nil ||
		res.Engine == nil || *res.Engine != "Fake" || res.Drafts.Source != "engine" || !strings.Contains(string(res.Drafts.FAQJSONLD), `"FAQPage"`) ||
		res.Drafts.LLMsTxt != "- [Widgets guide](https://acme.example/): Acme's guide to widgets." {
		t.Errorf("result %s", cr.Result)
	}
	st := budgetStatus(t, s, k)
	if st.Budget.Spent != cr.Spent || st.Budget.Reserved != 0 || st.ActiveRequests.Current != 0 {
		t.Errorf("budget-status %+v", st.Budget)
	}
	var evs []map[string]any
	poll(t, "content_optimized in the event log", func() bool { evs = optimizedEvents(t, s, k, cr.ID); return len(evs) > 0 })
	if len(evs) != 1 || evs[0]["score_before"] != float64(32) || evs[0]["score_after"] != float64(res.ScoreAfter) ||
		evs[0]["spent"] != float64(cr.Spent)/1e6 || evs[0]["domain"] != "acme.example" || evs[0]["url"] != nil {
		t.Errorf("content_optimized %v", evs)
	}
}

// TestContentEngineSurvivesKill: the server is killed (SIGKILL) while the
// engine is rewriting; restarted, it takes the request again once its
// lease has ended and completes it, its analysis charged once.
func TestContentEngineSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	slow := probefake.New()
	defer slow.Close()
	slow.Answer("m", engineRewrite, engineDrafts)
	slow.Delay = 8 * time.Second
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", contentConfig(t, dir, slow), "--content-lease", "2s")

	cr, r := create(t, s, keyed(k), jsonBody(client.CreateContentRequest{Domain: "acme.example", Budget: client.Dollars(1),
		Content: defectivePage(t), TargetQueries: []string{"best widgets for home"}}))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	poll(t, "the rewrite starts", func() bool {
		cr = getCR(t, s, k, cr.ID)
		return cr.Step != nil && *cr.Step == "rewrite" && slow.Requests() == 1
	})
	if cr.Status != "processing" || cr.Spent != client.Dollars(0.002) {
		t.Fatalf("before the kill: %+v", cr)
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()

	fast := probefake.New()
	defer fast.Close()
	fast.Answer("m", engineRewrite, engineDrafts)
	s = start(t, dir, "--config", contentConfig(t, dir, fast), "--content-lease", "2s")
	poll(t, "the request completes after the restart", func() bool {
		cr = getCR(t, s, k, cr.ID)
		return cr.Status != "queued" && cr.Status != "processing"
	})
	prompts := fast.Prompts()
	if cr.Status != "completed" || len(prompts) != 2 {
		t.Fatalf("after the restart: %+v, %d prompts", cr, len(prompts))
	}
	want := client.Dollars(0.002)*2 + words(prompts[0]) + 2*words(engineRewrite) + words(prompts[1]) + 2*words(engineDrafts)
	if cr.Spent != want {
		t.Errorf("spent %s, want %s", cr.Spent, want)
	}
	if st := budgetStatus(t, s, k); st.Budget.Spent != cr.Spent || st.Budget.Reserved != 0 {
		t.Errorf("budget-status %+v", st.Budget)
	}
	// Its event committed with the completion; once the fan-out has
	// handled every event committed so far, the log holds each of them.
	s.eventsHandled(t)
	if evs := optimizedEvents(t, s, k, cr.ID); len(evs) != 1 {
		t.Errorf("content_optimized %d times", len(evs))
	}
}

// TestContentEngineCancelEndToEnd: a request cancelled while the engine
// works stays cancelled with what it had spent; the rest is released.
func TestContentEngineCancelEndToEnd(t *testing.T) {
	dir := t.TempDir()
	slow := probefake.New()
	defer slow.Close()
	slow.Answer("m", engineRewrite, engineDrafts)
	slow.Delay = 2 * time.Second
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", contentConfig(t, dir, slow), "--log-level", "info")
	cr, _ := create(t, s, keyed(k), jsonBody(client.CreateContentRequest{Domain: "acme.example", Budget: client.Dollars(1),
		Content: defectivePage(t), TargetQueries: []string{"best widgets for home"}}))
	poll(t, "the rewrite starts", func() bool { cr = getCR(t, s, k, cr.ID); return cr.Step != nil && *cr.Step == "rewrite" })
	c := s.do(t, req{method: "POST", path: crPath + "/" + cr.ID + "/cancel", header: keyed(k)})
	if c.Status != 200 {
		t.Fatalf("cancel: %d %s", c.Status, c.Body)
	}
	// The worker logs that it left the request once it is done with it,
	// the engine's answer (or the call's cancellation) included.
	poll(t, "the worker leaves the cancelled request", func() bool { return s.logged("content: request left", "request="+cr.ID) })
	cr = getCR(t, s, k, cr.ID)
	if cr.Status != "cancelled" || cr.Spent != client.Dollars(0.002) || cr.Reserved != 0 || string(cr.Result) != "null" {
		t.Errorf("after the cancel: %+v", cr)
	}
	if st := budgetStatus(t, s, k); st.Budget.Spent != client.Dollars(0.002) || st.Budget.Reserved != 0 {
		t.Errorf("budget-status %+v", st.Budget)
	}
}
