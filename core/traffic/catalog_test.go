package traffic_test

import (
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/aivis/aivis/core/traffic"
)

// sourcesUAs are sources.md 4a's example user agents, and the token each
// must be classified as.
var sourcesUAs = []struct{ ua, token string }{
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot", "GPTBot"},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36; compatible; OAI-SearchBot/1.3; +https://openai.com/searchbot", "OAI-SearchBot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", "ChatGPT-User"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", "ClaudeBot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)", "Claude-User"},
	{"Claude-User (claude-code/2.1.86; +https://support.anthropic.com/)", "Claude-User"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", "PerplexityBot"},
	{"meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", "meta-externalagent"},
	{"CCBot/2.0 (https://commoncrawl.org/faq/)", "CCBot"},
	{"DuckAssistBot/1.2; (+http://duckduckgo.com/duckassistbot.html)", "DuckAssistBot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)", "MistralAI-User"},
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/8.0 Safari/600.1.25 (Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)", "Amazonbot"},
}

// overlapUAs: user agents where one token holds, or sits beside, another.
var overlapUAs = []struct{ ua, token string }{
	{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", "Applebot"},
	{"Mozilla/5.0 (compatible; Applebot-Extended/0.1)", "Applebot-Extended"},
	{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"},
	{"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.204 Mobile Safari/537.36 (compatible; GoogleOther)", "GoogleOther"},
	{"Mozilla/5.0 (compatible; Googlebot/2.1; Google-Extended)", "Google-Extended"},
	{"Mozilla/5.0 (compatible; Google-CloudVertexBot; +https://cloud.google.com/vertex-ai)", "Google-CloudVertexBot"},
	{"mozilla/5.0 (compatible; CLAUDEBOT/1.0)", "ClaudeBot"},
	{"Mozilla/5.0 (compatible; Claude-SearchBot/1.0; +Claude-SearchBot@anthropic.com)", "Claude-SearchBot"},
	{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)", "Perplexity-User"},
	{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "bingbot"},
	{"Mozilla/5.0 (compatible; cohere-training-data-crawler/1.0)", "cohere-training-data-crawler"},
	{"Mozilla/5.0 (compatible; Kangaroo Bot/1.0)", "Kangaroo Bot"},
	{"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", "facebookexternalhit"},
}

// browserUAs are ordinary browsers: no agent.
var browserUAs = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"curl/8.5.0",
	"",
}

func TestAgentClassifiesSourcesExamples(t *testing.T) {
	c := traffic.NewCatalog(traffic.Snapshot())
	for _, tc := range append(sourcesUAs, overlapUAs...) {
		a := c.Agent(tc.ua)
		if a == nil || a.Token != tc.token {
			t.Errorf("Agent(%q) = %v, want %s", tc.ua, a, tc.token)
		}
	}
	for _, ua := range browserUAs {
		if a := c.Agent(ua); a != nil {
			t.Errorf("Agent(%q) = %s, want none", ua, a.Token)
		}
	}
}

// TestAgentCachedAnswersAgree: a second call (from the cache) and calls
// from many goroutines give the first call's answer.
func TestAgentCachedAnswersAgree(t *testing.T) {
	c := traffic.NewCatalog(nil)
	uas := append(append([]string{}, browserUAs...), benchUAs...)
	want := make([]*traffic.Agent, len(uas))
	for i, ua := range uas {
		want[i] = c.Agent(ua)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 200; n++ {
				for i, ua := range uas {
					// A fresh string each time, as a parser would give.
					if got := c.Agent(strings.Clone(ua)); got != want[i] {
						t.Errorf("Agent(%q) = %v, want %v", ua, got, want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestVerify(t *testing.T) {
	c := traffic.NewCatalog(traffic.Snapshot())
	gptbot := c.Agent(sourcesUAs[0].ua)
	cases := []struct {
		ua   string
		ip   string
		want traffic.Verification
	}{
		{sourcesUAs[0].ua, "20.171.206.7", traffic.Verified},          // GPTBot, in 20.171.206.0/24
		{sourcesUAs[0].ua, "203.0.113.7", traffic.Spoofed},            // GPTBot from elsewhere
		{sourcesUAs[0].ua, "::ffff:20.171.207.1", traffic.Verified},   // v4-mapped
		{sourcesUAs[1].ua, "74.7.228.200", traffic.Verified},          // OAI-SearchBot
		{sourcesUAs[2].ua, "20.171.206.7", traffic.Spoofed},           // ChatGPT-User from GPTBot's range
		{sourcesUAs[3].ua, "160.79.104.10", traffic.Unverified},       // ClaudeBot: no list
		{sourcesUAs[7].ua, "57.141.0.1", traffic.Unverified},          // meta-externalagent: none published
		{sourcesUAs[6].ua, "1.2.3.4", traffic.Unverified},             // PerplexityBot: list not in the snapshot
		{overlapUAs[2].ua, "66.249.66.1", traffic.Verified},           // Googlebot v4
		{overlapUAs[2].ua, "2001:4860:4801:2a::99", traffic.Verified}, // Googlebot v6
		{overlapUAs[2].ua, "2001:4860:4801:43::1", traffic.Spoofed},   // a gap in Google's list
		{overlapUAs[2].ua, "2a00:1450:4001::1", traffic.Spoofed},
		{overlapUAs[4].ua, "66.249.66.1", traffic.Spoofed},            // Google-Extended: token only
		{overlapUAs[1].ua, "17.241.75.9", traffic.Spoofed},            // Applebot-Extended: token only
		{overlapUAs[0].ua, "17.241.75.9", traffic.Verified},           // Applebot
		{sourcesUAs[8].ua, "2600:1f28:365:80bf::1", traffic.Verified}, // CCBot's /60
		{sourcesUAs[8].ua, "98.85.178.216", traffic.Verified},         // CCBot's /32
		{sourcesUAs[8].ua, "98.85.178.217", traffic.Spoofed},
		{sourcesUAs[9].ua, "20.191.44.22", traffic.Verified}, // DuckAssistBot /32
		{sourcesUAs[0].ua, "", traffic.Unverified},           // no address
	}
	for _, tc := range cases {
		var ip netip.Addr
		if tc.ip != "" {
			ip = netip.MustParseAddr(tc.ip)
		}
		a := c.Agent(tc.ua)
		if a == nil {
			t.Fatalf("no agent for %q", tc.ua)
		}
		if got := c.Verify(a, ip); got != tc.want {
			t.Errorf("Verify(%s, %s) = %s, want %s", a.Token, tc.ip, got, tc.want)
		}
	}
	if got := c.Verify(nil, netip.MustParseAddr("20.171.206.7")); got != traffic.Unverified {
		t.Errorf("Verify(nil) = %s", got)
	}

	// Without ranges nothing is verified, nothing spoofed.
	bare := traffic.NewCatalog(nil)
	if got := bare.Verify(gptbot, netip.MustParseAddr("203.0.113.7")); got != traffic.Unverified {
		t.Errorf("no ranges: Verify = %s, want unverified", got)
	}
	// Google-NotebookLM: two of its three lists loaded, the address outside
	// them: it may be in the third; unverified.
	nb := c.Agent("Mozilla/5.0 (compatible; Google-NotebookLM)")
	if got := c.Verify(nb, netip.MustParseAddr("203.0.113.7")); got != traffic.Unverified {
		t.Errorf("NotebookLM outside the loaded lists: %s, want unverified", got)
	}
	if got := c.Verify(nb, netip.MustParseAddr("66.249.93.40")); got != traffic.Verified {
		t.Errorf("NotebookLM in user-triggered-fetchers-google: %s, want verified", got)
	}
	if got := c.Verify(nb, netip.MustParseAddr("2600:1900:0:2d5::7")); got != traffic.Verified {
		t.Errorf("NotebookLM in user-triggered-fetchers: %s, want verified", got)
	}
	// SetRanges: an operator's replacement list is used from then on.
	r, err := traffic.NewRanges(map[string][]byte{traffic.ListOpenAIGPTBot: []byte(`{"prefixes":[{"ipv4Prefix":"203.0.113.0/24"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetRanges(traffic.Merge(traffic.Snapshot(), r))
	if got := c.Verify(gptbot, netip.MustParseAddr("203.0.113.7")); got != traffic.Verified {
		t.Errorf("after SetRanges: %s, want verified", got)
	}
	if got := c.Verify(gptbot, netip.MustParseAddr("20.171.206.7")); got != traffic.Spoofed {
		t.Errorf("after SetRanges, the old range: %s, want spoofed", got)
	}
}

func TestAgentsListsTheCatalog(t *testing.T) {
	c := traffic.NewCatalog(traffic.Snapshot())
	agents := c.Agents()
	seen := map[string]bool{}
	for _, a := range agents {
		if seen[a.Token] {
			t.Errorf("token %s twice", a.Token)
		}
		seen[a.Token] = true
		if a.Operator == "" || a.Purpose == "" {
			t.Errorf("%s: operator %q purpose %q", a.Token, a.Operator, a.Purpose)
		}
		for _, l := range a.Lists {
			if _, ok := traffic.DefaultListURLs()[l]; !ok {
				t.Errorf("%s: list %s has no URL", a.Token, l)
			}
		}
	}
	for _, tc := range append(sourcesUAs, overlapUAs...) {
		if !seen[tc.token] {
			t.Errorf("Agents lacks %s", tc.token)
		}
	}
	// Copies: changing them changes nothing.
	agents[0].Lists[0] = "x"
	if c.Agents()[0].Lists[0] == "x" || c.Agent(sourcesUAs[0].ua).Lists[0] == "x" {
		t.Error("Agents returned the catalog's own slices")
	}
}

// benchUAs: a log's mix, mostly browsers, some agents.
var benchUAs = func() []string {
	var uas []string
	uas = append(uas, browserUAs[:8]...)
	uas = append(uas, browserUAs[:8]...)
	for _, tc := range sourcesUAs {
		uas = append(uas, tc.ua)
	}
	for _, tc := range overlapUAs[:4] {
		uas = append(uas, tc.ua)
	}
	return uas
}()

// BenchmarkAgent: Agent on a mixed log's user agents, each a fresh string
// as a parser gives them; repeats are answered by the cache.
func BenchmarkAgent(b *testing.B) {
	c := traffic.NewCatalog(traffic.Snapshot())
	uas := make([]string, len(benchUAs))
	for i := range uas {
		uas[i] = strings.Clone(benchUAs[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Agent(uas[i%len(uas)])
	}
}

func BenchmarkVerify(b *testing.B) {
	c := traffic.NewCatalog(traffic.Snapshot())
	g := c.Agent(overlapUAs[2].ua)
	ips := []netip.Addr{netip.MustParseAddr("66.249.66.1"), netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("2001:4860:4801:2a::99")}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Verify(g, ips[i%len(ips)])
	}
}
