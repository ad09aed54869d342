package traffic

import (
	"strings"
	"testing"
)

// TestMatcherAgreesWithContains: the automaton finds what a scan of every
// token with strings.Contains finds, the longest winning, on user agents
// built to hold tokens at every place, in every case, overlapping.
func TestMatcherAgreesWithContains(t *testing.T) {
	tokens := make([]string, len(catalogEntries))
	for i, e := range catalogEntries {
		tokens[i] = e.Token
	}
	m := newTokenMatcher(tokens)
	naive := func(s string) int {
		s = strings.ToLower(s)
		found := -1
		for i, tok := range tokens {
			if strings.Contains(s, strings.ToLower(tok)) && (found < 0 || len(tok) > len(tokens[found])) {
				found = i
			}
		}
		return found
	}
	var uas []string
	for i, a := range tokens {
		uas = append(uas, a, strings.ToUpper(a), "x"+a[:len(a)-1], "Mozilla/5.0 ("+a+"/1.0)")
		b := tokens[(i*7+3)%len(tokens)]
		uas = append(uas, a+b, b+" "+a, a[:len(a)/2]+b+a[len(a)/2:])
	}
	uas = append(uas, "GoogleOtherbot", "Applebot-Extende", "Claude-UserClaudeBot", "ccbotgptbo", "\xff\xfeGPTBot\x00")
	for _, ua := range uas {
		if got, want := m.match(ua), naive(ua); got != want {
			t.Errorf("match(%q) = %d, want %d", ua, got, want)
		}
	}
}

// BenchmarkAgentUncached: the automaton alone, every call a full scan.
func BenchmarkAgentUncached(b *testing.B) {
	c := NewCatalog(nil)
	uas := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36; compatible; OAI-SearchBot/1.3; +https://openai.com/searchbot",
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.m.match(uas[i%len(uas)])
	}
}
