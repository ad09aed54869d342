package main

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe/probefake"
)

// TestScanAnswersEndToEnd: a scan over two engines keeps its 36 answers
// (one a failed probe); the answers API pages through them and filters
// them by engine, prompt, mention, citation and text, alone or together,
// refuses bad filters in the envelope, and shows a client's scan to that
// client and the account only. Past answer_retention the retention loop
// forgets a scan's answers and keeps a newer scan's.
func TestScanAnswersEndToEnd(t *testing.T) {
	dir := t.TempDir()
	engine := probefake.New()
	defer engine.Close()
	// Search answers in turn R1 (names and cites Acme) and R2 (neither),
	// 9 each of its 18; Plain's first request fails (400, not retried),
	// then it answers P1 (names Acme, links to it) and P2 in turn: 9 and 8.
	r1 := "Acme skates are the safest (https://acme.invalid/safety). Globex is cheaper."
	engine.Script("fake-search-model",
		probefake.Reply{Text: r1, Citations: []probefake.Citation{{URL: "https://acme.invalid/safety", Title: "Safety", Quote: "Acme skates are the safest"},
			{URL: "https://reviews.example/skates", Title: "Reviews", Quote: "Globex is cheaper."}}},
		probefake.Reply{Text: "Globex leads the market.", Citations: []probefake.Citation{{URL: "https://reviews.example/skates", Title: "Reviews"}}})
	engine.Answer("fake-model", "I would pick Acme (https://acme.invalid). Ünïcode skates exist too.", "Initech is fine.")
	engine.Fail("fake-model", 400)
	cfg := writeConfig(t, dir, map[string]any{"engines": []map[string]any{
		{"label": "Search", "base_url": engine.URL(), "model": "fake-search-model", "concurrency": 2},
		{"label": "Plain", "base_url": engine.URL(), "model": "fake-model", "concurrency": 2}}})
	a := newAccount(t, dir, "professional", true)
	var cl, other struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client")
	cli(t, dir, &other, "client", "create", "--account", a.ID, "--name", "Other client")
	ck, ok, ak := newKey(t, dir, a.ID, "--client", cl.ID), newKey(t, dir, a.ID, "--client", other.ID), newKey(t, dir, a.ID)
	stranger := newKey(t, dir, newAccount(t, dir, "enterprise", false).ID)
	args := []string{"--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--answer-retention", "48h"}
	s := start(t, dir, args...)

	var d client.MonitoredDomain
	s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(ck), body: `{"domain":"acme.invalid","brands":["Acme"],"competitors":["Globex"]}`}).decode(t, &d)
	if r := s.do(t, req{method: "PUT", path: "/v1/domains/" + d.ID + "/prompts", header: bearer(ck),
		body: `{"prompts":[{"text":"Which rocket skates should I buy?","intent":"discovery"},{"text":"Are Acme skates safe?"}]}`}); r.Status != 200 {
		t.Fatalf("prompts: %d %s", r.Status, r.Body)
	}
	first := completedScan(t, s, ck, "acme.invalid")

	// list walks every page of the answers of a scan with a query, and
	// checks that the pages hold limit each, in the order of seq, once.
	list := func(k key, scanID, query string, limit int) []client.ScanAnswer {
		t.Helper()
		var all []client.ScanAnswer
		cursor := ""
		for pages := 0; ; pages++ {
			q, _ := url.ParseQuery(query)
			q.Set("limit", fmt.Sprint(limit))
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var page client.List[client.ScanAnswer]
			r := s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + scanID + "/answers?" + q.Encode(), header: bearer(k)})
			if r.Status != 200 {
				t.Fatalf("answers?%s: %d %s", q.Encode(), r.Status, r.Body)
			}
			r.decode(t, &page)
			if len(page.Items) > limit || page.HasMore != (page.NextCursor != nil) || (page.HasMore && len(page.Items) != limit) || pages > 100 {
				t.Fatalf("answers?%s: a page of %d, has_more %v", q.Encode(), len(page.Items), page.HasMore)
			}
			all = append(all, page.Items...)
			if !page.HasMore {
				break
			}
			cursor = *page.NextCursor
		}
		for i := 1; i < len(all); i++ {
			if all[i].Seq <= all[i-1].Seq {
				t.Fatalf("answers?%s: seq %d after %d", query, all[i].Seq, all[i-1].Seq)
			}
		}
		return all
	}

	all := list(ck, first.ID, "", 5)
	if len(all) != 36 || all[0].Seq != 0 || all[35].Seq != 35 {
		t.Fatalf("%d answers, want 36 (6 prompts, 3 runs, 2 engines)", len(all))
	}
	var failed, search []client.ScanAnswer
	for _, an := range all {
		if an.Error != nil {
			failed = append(failed, an)
		}
		if an.Engine == "Search" {
			search = append(search, an)
		}
	}
	if len(failed) != 1 || failed[0].Engine != "Plain" || failed[0].Text != "" || failed[0].Mentioned {
		t.Errorf("failed probes: %+v", failed)
	}
	// One answer in full: R1 from Search, its citations with their spans.
	i := slices.IndexFunc(search, func(an client.ScanAnswer) bool { return an.Text == r1 })
	if i < 0 {
		t.Fatal("no answer R1")
	}
	got := search[i]
	at := strings.Index(r1, "Globex is cheaper.")
	if got.Kind != "openai-chat" || !got.SourcesReported || !got.Mentioned || !got.Cited || got.Position != 1 ||
		!slices.Equal(got.Competitors, []string{"Globex"}) || len(got.Citations) != 2 || len(got.Sources) != 2 ||
		got.Citations[1].Domain != "reviews.example" || got.Citations[1].Start == nil || *got.Citations[1].Start != at ||
		*got.Citations[1].End != at+len("Globex is cheaper.") || len(got.Sentences) != 1 || got.Sentences[0].Sentiment <= 0 ||
		got.Prompt.Text == "" || got.Prompt.Intent == "" {
		t.Errorf("R1 as the API shows it: %+v", got)
	}

	// Filters, alone and together, paged; with their counts worked out
	// from the script above.
	for _, tc := range []struct {
		query string
		want  int
		keep  func(client.ScanAnswer) bool
	}{
		{"engine=Search", 18, func(an client.ScanAnswer) bool { return an.Engine == "Search" }},
		{"engine=Nope", 0, nil},
		{"prompt=0", 6, func(an client.ScanAnswer) bool { return an.Prompt.Index == 0 && an.Prompt.Intent == "discovery" }},
		{"prompt=1", 6, func(an client.ScanAnswer) bool {
			return an.Prompt.Text == "Are Acme skates safe?" && an.Prompt.Intent == "custom"
		}},
		{"mentioned=true", 18, func(an client.ScanAnswer) bool { return an.Mentioned }},
		{"mentioned=false", 18, func(an client.ScanAnswer) bool { return !an.Mentioned }},
		{"cited=true", 18, func(an client.ScanAnswer) bool { return an.Cited }},
		{"q=ÜNÏCODE+SKATES", 9, func(an client.ScanAnswer) bool { return strings.Contains(an.Text, "Ünïcode skates") }},
		{"q=globex", 18, func(an client.ScanAnswer) bool { return strings.Contains(an.Text, "Globex") }},
		{"q=%25", 0, nil},
		{"engine=Plain&mentioned=true&cited=true&q=pick", 9, func(an client.ScanAnswer) bool {
			return an.Engine == "Plain" && an.Mentioned && an.Cited && strings.Contains(an.Text, "pick")
		}},
	} {
		got := list(ck, first.ID, tc.query, 4)
		if len(got) != tc.want || (tc.keep != nil && slices.ContainsFunc(got, func(an client.ScanAnswer) bool { return !tc.keep(an) })) {
			t.Errorf("answers?%s: %d answers, want %d: %+v", tc.query, len(got), tc.want, got)
		}
	}

	// Bad filters are refused in the envelope, each named.
	for _, tc := range []struct{ query, field string }{
		{"prompt=-1", "prompt"}, {"prompt=first", "prompt"}, {"mentioned=yes", "mentioned"}, {"cited=1", "cited"},
		{"q=" + strings.Repeat("x", 201), "q"}, {"limit=0", "limit"}, {"cursor=bm90IGEgY3Vyc29y", "cursor"},
	} {
		r := s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + first.ID + "/answers?" + tc.query, header: bearer(ck)})
		var e client.ErrorEnvelope
		r.decode(t, &e)
		if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || len(e.Error.Details) != 1 || e.Error.Details[0].Field != tc.field {
			t.Errorf("answers?%.40s: %d %s", tc.query, r.Status, r.Body)
		}
	}

	// The client's scan: its client and the account see it; another
	// client's key and another account's do not.
	if n := len(list(ak, first.ID, "", 100)); n != 36 {
		t.Errorf("the account's key lists %d answers", n)
	}
	for name, k := range map[string]key{"another client's key": ok, "another account's key": stranger} {
		r := s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + first.ID + "/answers", header: bearer(k)})
		if r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	if r := s.do(t, req{method: "GET", path: "/v1/visibility/scans/scan_none/answers", header: bearer(ck)}); r.Status != 404 {
		t.Errorf("an unknown scan: %d %s", r.Status, r.Body)
	}

	// Retention: the first scan's answers, made 3 days old, are forgotten
	// by the retention loop the next start runs (answer_retention 48h);
	// the second scan's stay, and both scans with their results.
	second := completedScan(t, s, ck, "acme.invalid")
	s.stop()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE scan_answers SET recorded_at = recorded_at - ? WHERE scan_id = ?`, int64(72*time.Hour), first.ID); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = start(t, dir, append(args, "--log-level", "info")...)
	waitFor(t, "the retention of scan answers", func() bool { return s.logged("retention: pruned", `what="scan answers"`) })
	if n := len(list(ck, first.ID, "", 100)); n != 0 {
		t.Errorf("the old scan's answers past the retention: %d left", n)
	}
	if n := len(list(ck, second.ID, "", 100)); n != 36 {
		t.Errorf("the newer scan's answers: %d, want 36", n)
	}
	if r := s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + first.ID, header: bearer(ck)}); r.Status != 200 {
		t.Errorf("the old scan itself: %d %s", r.Status, r.Body)
	}
}
