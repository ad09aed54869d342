package traffic

import (
	"bytes"
	"compress/gzip"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// collector is a Sink that keeps copies of what a reader gives.
type collector struct {
	lines []Line
	nums  []int
	bad   []badRecord
}

type badRecord struct {
	n      int
	raw    string
	reason string
}

func (c *collector) Line(n int, raw []byte, l *Line) {
	cp := *l
	cp.Method = strings.Clone(l.Method)
	cp.Host = strings.Clone(l.Host)
	cp.Path = strings.Clone(l.Path)
	cp.Query = strings.Clone(l.Query)
	cp.Referer = strings.Clone(l.Referer)
	cp.UserAgent = strings.Clone(l.UserAgent)
	c.lines = append(c.lines, cp)
	c.nums = append(c.nums, n)
}

func (c *collector) Malformed(n int, raw []byte, reason string) {
	c.bad = append(c.bad, badRecord{n: n, raw: string(raw), reason: reason})
}

// gz is b gzip-compressed with header name.
func gz(t testing.TB, b []byte, name string, mod time.Time, level int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, level)
	if err != nil {
		t.Fatal(err)
	}
	zw.Name, zw.ModTime = name, mod
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// testClassifier tells a few of sources.md's agents by their tokens and
// verifies them against ranges of its own: an agent with no list is
// unverified.
type testClassifier struct {
	agents []*Agent
	ranges map[string][]netip.Prefix
}

func newTestClassifier() *testClassifier {
	c := &testClassifier{ranges: map[string][]netip.Prefix{
		"gptbot":     {netip.MustParsePrefix("20.171.206.0/24"), netip.MustParsePrefix("2a0b:4140::/32")},
		"searchbot":  {netip.MustParsePrefix("20.42.10.176/28")},
		"chatgpt":    {netip.MustParsePrefix("23.98.142.176/28")},
		"perplexity": {netip.MustParsePrefix("3.224.62.0/25")},
		"ccbot":      {netip.MustParsePrefix("18.97.9.0/24")},
	}}
	for _, a := range []Agent{
		{Token: "GPTBot", Operator: "OpenAI", Purpose: Train, Lists: []string{"gptbot"}},
		{Token: "OAI-SearchBot", Operator: "OpenAI", Purpose: Index, Lists: []string{"searchbot"}},
		{Token: "ChatGPT-User", Operator: "OpenAI", Purpose: Fetch, Lists: []string{"chatgpt"}},
		{Token: "ClaudeBot", Operator: "Anthropic", Purpose: Train},
		{Token: "Claude-User", Operator: "Anthropic", Purpose: Fetch},
		{Token: "PerplexityBot", Operator: "Perplexity", Purpose: Index, Lists: []string{"perplexity"}},
		{Token: "meta-externalagent", Operator: "Meta", Purpose: Train},
		{Token: "CCBot", Operator: "Common Crawl", Purpose: Train, Lists: []string{"ccbot"}},
		{Token: "Amazonbot", Operator: "Amazon", Purpose: Index},
	} {
		c.agents = append(c.agents, &a)
	}
	return c
}

func (c *testClassifier) Agent(ua string) *Agent {
	ua = strings.ToLower(ua)
	for _, a := range c.agents {
		if strings.Contains(ua, strings.ToLower(a.Token)) {
			return a
		}
	}
	return nil
}

func (c *testClassifier) Verify(a *Agent, ip netip.Addr) Verification {
	if len(a.Lists) == 0 {
		return Unverified
	}
	for _, l := range a.Lists {
		for _, p := range c.ranges[l] {
			if p.Contains(ip) {
				return Verified
			}
		}
	}
	return Spoofed
}

// standInAssistant tells the assistant of a referer's host or of
// utm_source, as sources.md 4b lists them.
func standInAssistant(referer, query string) (string, bool) {
	for _, kv := range strings.Split(query, "&") {
		if v, ok := strings.CutPrefix(kv, "utm_source="); ok && (v == "chatgpt.com" || v == "chatgpt") {
			return "chatgpt", true
		}
	}
	host := referer
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	host = strings.ToLower(host)
	for _, s := range []struct{ host, name string }{
		{"chatgpt.com", "chatgpt"}, {"chat.openai.com", "chatgpt"}, {"perplexity.ai", "perplexity"},
		{"gemini.google.com", "gemini"}, {"copilot.microsoft.com", "copilot"}, {"claude.ai", "claude"},
	} {
		if host == s.host || strings.HasSuffix(host, "."+s.host) {
			return s.name, true
		}
	}
	return "", false
}
