package traffic

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/store"
)

func TestAggregator(t *testing.T) {
	agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
	claude := "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"
	browser := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	spoof := netip.MustParseAddr("192.0.2.1")
	long := "/" + strings.Repeat("a", store.MaxTrafficPage-2) + "é/more" // é straddles the cut
	lines := []Line{
		{Time: utc("2026-10-10T23:59:59Z"), Path: "/a", Status: 200, Bytes: 10, UserAgent: gptbotUA, ClientIP: spoof},
		{Time: utc("2026-10-10T00:00:00Z"), Path: "/a", Query: "x=1", Status: 301, Bytes: 5, UserAgent: strings.ToLower(gptbotUA), ClientIP: spoof},
		{Time: utc("2026-10-10T12:00:00Z"), Path: "/a", Status: 404, UserAgent: gptbotUA, ClientIP: spoof},
		{Time: utc("2026-10-10T12:00:00Z"), Path: "/a", Status: 503, UserAgent: gptbotUA, ClientIP: spoof},
		{Time: utc("2026-10-10T12:00:00Z"), Path: "/a", Status: 0, UserAgent: gptbotUA, ClientIP: spoof},
		{Time: utc("2026-10-10T12:00:00Z"), Path: "/a", Status: 101, UserAgent: gptbotUA, ClientIP: spoof},
		// The next day; an agent's own request with an assistant's
		// referer is no referral.
		{Time: utc("2026-10-11T00:00:00Z"), Path: "/a", Status: 200, UserAgent: gptbotUA, Referer: "https://chatgpt.com/", ClientIP: spoof},
		// No address: unverified.
		{Time: utc("2026-10-11T00:00:00Z"), Path: "/a", Status: 200, UserAgent: gptbotUA},
		{Time: utc("2026-10-10T08:00:00Z"), Path: long, Status: 200, UserAgent: claude, ClientIP: spoof},
		{Time: utc("2026-10-10T08:00:00Z"), Path: "/b", Status: 200, UserAgent: browser, Referer: "https://www.perplexity.ai/search?q=x"},
		{Time: utc("2026-10-10T08:00:00Z"), Path: "/b", Query: "utm_source=chatgpt.com", UserAgent: browser},
		{Time: utc("2026-10-10T09:00:00Z"), Path: "/b", Query: "a=1&utm_source=chatgpt", UserAgent: browser, Referer: "https://www.google.com/"},
		{Time: utc("2026-10-10T09:00:00Z"), Path: "/b", UserAgent: browser, Referer: "https://www.perplexity.ai/"},
		{Time: utc("2026-10-10T09:00:00Z"), Path: "/b", UserAgent: browser, Referer: "https://notperplexity.ai/"},
		{Time: utc("2026-10-10T09:00:00Z"), Path: "/b", UserAgent: browser},
		{Time: utc("2026-10-09T09:00:00Z"), Path: "/b", Referer: "https://claude.ai/chat/1"},
	}
	for i := range lines {
		agg.Line(i+1, nil, &lines[i])
	}
	d9, d10, d11 := utc("2026-10-09T00:00:00Z"), utc("2026-10-10T00:00:00Z"), utc("2026-10-11T00:00:00Z")
	cut := long[:store.MaxTrafficPage-1]
	if !utf8.ValidString(cut) || len(cut) != store.MaxTrafficPage-1 {
		t.Fatal("the test's cut is wrong")
	}
	wantHits := []store.CrawlerHits{
		{Day: d10, Page: "/a", Agent: "GPTBot", Verification: "spoofed", Hits: 6, Status: [5]int64{1, 1, 1, 1, 2}, Bytes: 15},
		{Day: d10, Page: cut, Agent: "ClaudeBot", Verification: "unverified", Hits: 1, Status: [5]int64{1, 0, 0, 0, 0}},
		{Day: d11, Page: "/a", Agent: "GPTBot", Verification: "spoofed", Hits: 1, Status: [5]int64{1, 0, 0, 0, 0}},
		{Day: d11, Page: "/a", Agent: "GPTBot", Verification: "unverified", Hits: 1, Status: [5]int64{1, 0, 0, 0, 0}},
	}
	hits := agg.CrawlerHits()
	if len(hits) != len(wantHits) {
		t.Fatalf("hits %+v", hits)
	}
	for i, w := range wantHits {
		w.AccountID, w.DomainID = "acc", "dom"
		if hits[i] != w {
			t.Errorf("hits[%d]:\n got %+v\nwant %+v", i, hits[i], w)
		}
	}
	wantRefs := []store.ReferralVisits{
		{Day: d9, Page: "/b", Assistant: "claude", Visits: 1},
		{Day: d10, Page: "/b", Assistant: "chatgpt", Visits: 2},
		{Day: d10, Page: "/b", Assistant: "perplexity", Visits: 2},
	}
	refs := agg.ReferralVisits()
	if len(refs) != len(wantRefs) {
		t.Fatalf("referrals %+v", refs)
	}
	for i, w := range wantRefs {
		w.AccountID, w.DomainID = "acc", "dom"
		if refs[i] != w {
			t.Errorf("referrals[%d]: got %+v, want %+v", i, refs[i], w)
		}
	}
	if agg.Lines() != int64(len(lines)) || agg.MalformedLines() != 0 {
		t.Errorf("%d lines, %d malformed", agg.Lines(), agg.MalformedLines())
	}
}

func TestAggregatorMalformed(t *testing.T) {
	agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
	for i := 1; i <= 12; i++ {
		agg.Malformed(i*2, []byte(fmt.Sprintf("bad line %d from 192.0.2.%d", i, i)), "why")
	}
	// No time: malformed too.
	agg.Line(30, []byte("no time 2001:db8::1"), &Line{Path: "/x", UserAgent: gptbotUA})
	if agg.Lines() != 13 || agg.MalformedLines() != 13 {
		t.Errorf("%d lines, %d malformed", agg.Lines(), agg.MalformedLines())
	}
	s := agg.Samples()
	if len(s) != MaxSamples {
		t.Fatalf("samples %+v", s)
	}
	for i, m := range s {
		want := store.MalformedLine{Line: (i + 1) * 2, Reason: "why", Excerpt: fmt.Sprintf("bad line %d from [address]", i+1)}
		if m != want {
			t.Errorf("sample %d: %+v, want %+v", i, m, want)
		}
	}
	if len(agg.CrawlerHits()) != 0 {
		t.Error("a line without time counted")
	}
}

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`203.0.113.7 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1"`, `[address] - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1"`},
		{`{"ClientIP":"2001:db8::1","x":"::ffff:192.0.2.1"}`, `{"ClientIP":"[address]","x":"[address]"}`},
		{`from [2001:db8:0:0:1:0:0:1]:443 and 192.0.2.1:8080.`, `from [[address]]:443 and [address].`},
		{`xff=10.0.0.1,172.16.0.1;fe80::1%eth0`, `xff=[address],[address];[address]%eth0`},
		{`ip:192.0.2.1 cafe:babe deadbeef 1.2.3 v1.2.3.4.5`, `ip:[address] cafe:babe deadbeef 1.2.3 v1.2.3.4.5`},
		{"tab\there\x00nul\xffbad", "tab\there nul\ufffdbad"},
	} {
		if got := Excerpt([]byte(tc.in)); got != tc.want {
			t.Errorf("Excerpt(%q) =\n %q, want\n %q", tc.in, got, tc.want)
		}
	}
	// At most 200 bytes, valid UTF-8, no address cut in half.
	in := strings.Repeat("é", 99) + "x192.0.2.123 " + strings.Repeat("2001:db8::1 ", 50)
	got := Excerpt([]byte(in))
	if len(got) > 200 || !utf8.ValidString(got) || strings.Contains(got, "192.") || strings.Contains(got, "2001") {
		t.Errorf("Excerpt = %q (%d bytes)", got, len(got))
	}
	if want := strings.Repeat("é", 99) + "x"; got != want {
		t.Errorf("Excerpt = %q, want %q", got, want)
	}
}

func TestAggregatorCachesForget(t *testing.T) {
	// More distinct user agents and referers than the caches keep, and
	// longer ones than they take: each still answered afresh.
	agg := NewAggregator(NewCatalog(Snapshot()), Assistant, "acc", "dom")
	day := utc("2026-10-10T00:00:00Z")
	const n = 3 * maxCache
	var wantHits, wantRefs int64
	for i := range n {
		l := Line{Time: day.Add(time.Duration(i) * time.Second), Path: "/p"}
		pad := strings.Repeat("x", i%3*maxCached/2)
		switch i % 3 {
		case 0:
			l.UserAgent = fmt.Sprintf("Mozilla/5.0 %s GPTBot/1.%d", pad, i)
			wantHits++
		case 1:
			l.UserAgent = fmt.Sprintf("Mozilla/5.0 %s Chrome/%d", pad, i)
			l.Referer = fmt.Sprintf("https://chatgpt.com/c/%d%s", i, pad)
			wantRefs++
		default:
			l.UserAgent = fmt.Sprintf("Mozilla/5.0 %s Chrome/%d", pad, i)
			l.Referer = fmt.Sprintf("https://example.com/c/%d%s", i, pad)
		}
		agg.Line(i+1, nil, &l)
	}
	hits, refs := agg.CrawlerHits(), agg.ReferralVisits()
	if len(hits) != 1 || hits[0].Hits != wantHits || hits[0].Verification != "unverified" {
		t.Errorf("hits %+v, want %d", hits, wantHits)
	}
	if len(refs) != 1 || refs[0].Visits != wantRefs || refs[0].Assistant != "chatgpt" {
		t.Errorf("referrals %+v, want %d", refs, wantRefs)
	}
	if len(agg.agents) > maxCache || len(agg.referrals) > maxCache {
		t.Errorf("caches of %d and %d entries", len(agg.agents), len(agg.referrals))
	}
}
