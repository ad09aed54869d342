package traffic_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/traffic"
)

const (
	uaGPTBot    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot"
	uaClaudeBot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"
	uaBrowser   = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

// combined is a combined log line.
func combined(at time.Time, ip, target string, status, size int, referer, ua string) string {
	return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" %d %d %q %q\n", ip, at.Format("02/Jan/2006:15:04:05 -0700"), target, status, size, referer, ua)
}

// TestSummaryAndPages: a log of two days imported, then read back: per
// agent (spoofed requests counted in its verification but left out of
// purposes, pages and problems), per purpose and day, the top pages, the
// 4xx and 5xx problems, the referrals per assistant and day; and the pages
// joined with a scan's citations (a URL of another host left out).
func TestSummaryAndPages(t *testing.T) {
	ctx := context.Background()
	svc, d, _ := service(t)
	d1 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	d2 := d1.AddDate(0, 0, 1)
	log := combined(d1, "52.230.152.7", "/pricing", 200, 5000, "-", uaGPTBot) +
		combined(d1, "52.230.152.8", "/pricing?x=1", 404, 100, "-", uaGPTBot) +
		combined(d2, "52.230.152.7", "/docs", 200, 800, "-", uaGPTBot) +
		combined(d2, "203.0.113.9", "/secret", 200, 10, "-", uaGPTBot) + // spoofed
		combined(d2, "198.51.100.4", "/docs", 503, 0, "-", uaClaudeBot) +
		combined(d2, "198.51.100.4", "/docs", 200, 900, "-", uaClaudeBot) +
		combined(d1, "192.0.2.1", "/pricing?utm_source=chatgpt.com", 200, 7000, "-", uaBrowser) +
		combined(d2, "192.0.2.2", "/blog", 200, 7000, "https://www.perplexity.ai/search?q=x", uaBrowser) +
		combined(d2, "192.0.2.3", "/blog", 200, 7000, "https://chatgpt.com/", uaBrowser)
	if _, err := svc.Import(ctx, d, strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	sum, err := svc.Summary(ctx, d, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if sum.DomainID != d.ID || !sum.From.Equal(from) || !sum.To.Equal(to) || sum.LastBatch == nil {
		t.Errorf("summary: %+v", sum)
	}
	if len(sum.Agents) != 2 {
		t.Fatalf("agents: %+v", sum.Agents)
	}
	gpt, claude := sum.Agents[0], sum.Agents[1]
	if gpt.Agent != "GPTBot" || gpt.Operator != "OpenAI" || gpt.Purpose != traffic.Train || gpt.Hits != 4 || gpt.Bytes != 5910 ||
		gpt.ByVerification[traffic.Verified] != 3 || gpt.ByVerification[traffic.Spoofed] != 1 || gpt.Status != [5]int64{3, 0, 1, 0, 0} {
		t.Errorf("GPTBot: %+v", gpt)
	}
	if want := []int64{0, 2, 2}; !counts(gpt.Days, from, want) {
		t.Errorf("GPTBot per day: %+v; want %v", gpt.Days, want)
	}
	if claude.Agent != "ClaudeBot" || claude.Hits != 2 || claude.ByVerification[traffic.Unverified] != 2 || claude.Status != [5]int64{1, 0, 0, 1, 0} {
		t.Errorf("ClaudeBot: %+v", claude)
	}
	// Purposes: GPTBot trains, ClaudeBot too; the spoofed request is out.
	if len(sum.Purposes) != 1 || sum.Purposes[0].Purpose != traffic.Train || sum.Purposes[0].Hits != 5 ||
		!counts(sum.Purposes[0].Days, from, []int64{0, 2, 3}) {
		t.Errorf("purposes: %+v", sum.Purposes)
	}
	wantTop := []traffic.PageTraffic{{Page: "/docs", Hits: 3, Agents: 2}, {Page: "/pricing", Hits: 2, Agents: 1}}
	if fmt.Sprint(sum.TopPages) != fmt.Sprint(wantTop) {
		t.Errorf("top pages: %+v; want %+v", sum.TopPages, wantTop)
	}
	wantProblems := []traffic.Problem{{Page: "/docs", Agent: "ClaudeBot", Status: "5xx", Hits: 1}, {Page: "/pricing", Agent: "GPTBot", Status: "4xx", Hits: 1}}
	if fmt.Sprint(sum.Problems) != fmt.Sprint(wantProblems) {
		t.Errorf("problems: %+v; want %+v", sum.Problems, wantProblems)
	}
	if len(sum.Referrals) != 2 || sum.Referrals[0].Assistant != "chatgpt" || sum.Referrals[0].Visits != 2 ||
		!counts(sum.Referrals[0].Days, from, []int64{0, 1, 1}) || sum.Referrals[1].Assistant != "perplexity" || sum.Referrals[1].Visits != 1 {
		t.Errorf("referrals: %+v", sum.Referrals)
	}

	// A window of the first day only.
	one, err := svc.Summary(ctx, d, d1, d2)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Agents) != 1 || one.Agents[0].Hits != 2 || len(one.Agents[0].Days) != 1 {
		t.Errorf("the first day: %+v", one.Agents)
	}

	cited := []traffic.Cited{
		{Engine: "gpt", URL: "https://acme.invalid/pricing", Answers: 3},
		{Engine: "gpt", URL: "https://www.acme.invalid/pricing", Answers: 1}, // another market's answers
		{Engine: "perplexity", URL: "https://acme.invalid/pricing?ref=x", Answers: 5},
		{Engine: "perplexity", URL: "https://acme.invalid/about", Answers: 2},
		{Engine: "gpt", URL: "https://other.invalid/pricing", Answers: 9},
	}
	pages, err := svc.Pages(ctx, d, from, to, cited)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pages {
		got = append(got, fmt.Sprintf("%s crawls=%v cited=%v referrals=%v", p.Page, p.Crawls, p.CitedBy, p.Referrals))
	}
	want := []string{
		"/about crawls=[] cited=[{perplexity 2}] referrals=[]",
		"/blog crawls=[] cited=[] referrals=[{chatgpt 1} {perplexity 1}]",
		"/docs crawls=[{ClaudeBot 2 1} {GPTBot 1 0}] cited=[] referrals=[]",
		"/pricing crawls=[{GPTBot 2 1}] cited=[{perplexity 5} {gpt 4}] referrals=[{chatgpt 1}]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Nothing in the window: empty lists, every day counted zero.
	empty, err := svc.Summary(ctx, d, to, to.AddDate(0, 0, 2))
	if err != nil || len(empty.Agents)+len(empty.Purposes)+len(empty.TopPages)+len(empty.Problems)+len(empty.Referrals) != 0 || empty.Agents == nil {
		t.Errorf("an empty window: %+v %v", empty, err)
	}
}

// counts reports whether days are one a day from from, counting want.
func counts(days []traffic.DayCount, from time.Time, want []int64) bool {
	if len(days) != len(want) {
		return false
	}
	for i, d := range days {
		if !d.Day.Equal(from.AddDate(0, 0, i)) || d.Count != want[i] {
			return false
		}
	}
	return true
}

func TestPageOf(t *testing.T) {
	for _, c := range []struct {
		url, page string
		ok        bool
	}{
		{"https://acme.invalid/a/b?x=1#f", "/a/b", true},
		{"https://ACME.invalid", "/", true},
		{"https://blog.acme.invalid/post", "/post", true},
		{"https://notacme.invalid/post", "", false},
		{"/relative", "", false},
		{"https://acme.invalid/caf%C3%A9", "/caf%C3%A9", true},
	} {
		p, ok := traffic.PageOf("acme.invalid", c.url)
		if p != c.page || ok != c.ok {
			t.Errorf("PageOf(%q) = %q, %v; want %q, %v", c.url, p, ok, c.page, c.ok)
		}
	}
}

// TestScanCitations: each engine's cited pages of a completed scan's
// result; nothing of a scan not completed or a result that is no scan's.
func TestScanCitations(t *testing.T) {
	result := `{"visibility_score":40,"breakdown":{"engines":[{"label":"GPT","cited_pages":[{"url":"https://acme.invalid/a","count":3}]},` +
		`{"label":"GPT","market":{"country":"DE","language":"de"},"cited_pages":[{"url":"https://acme.invalid/a","count":1}]},` +
		`{"label":"Perplexity","cited_pages":[]}]}}`
	got := traffic.ScanCitations(store.Scan{Status: store.ScanCompleted, Result: []byte(result)})
	want := []traffic.Cited{{Engine: "GPT", URL: "https://acme.invalid/a", Answers: 3}, {Engine: "GPT", URL: "https://acme.invalid/a", Answers: 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("citations %+v, want %+v", got, want)
	}
	if c := traffic.ScanCitations(store.Scan{Status: "running", Result: []byte(result)}); c != nil {
		t.Errorf("a running scan: %+v", c)
	}
	if c := traffic.ScanCitations(store.Scan{Status: store.ScanCompleted, Result: []byte("[1]")}); c != nil {
		t.Errorf("no scan's result: %+v", c)
	}
}
