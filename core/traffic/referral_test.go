package traffic_test

import (
	"slices"
	"testing"

	"github.com/aivis/aivis/core/traffic"
)

func TestAssistant(t *testing.T) {
	cases := []struct {
		referer, query string
		want           string // "" for none
	}{
		{"https://chatgpt.com/", "", "chatgpt"},
		{"https://chat.openai.com/c/abc", "", "chatgpt"},
		{"https://sub.chatgpt.com/x", "", "chatgpt"},
		{"https://evilchatgpt.com/", "", ""},
		{"https://chatgpt.com.evil.example/", "", ""},
		{"https://CHATGPT.COM/", "", "chatgpt"},
		{"https://ChatGPT.com:443/share/123?x=1#top", "", "chatgpt"},
		{"https://user:pw@chatgpt.com/", "", "chatgpt"},
		{"https://chatgpt.com./", "", "chatgpt"},
		{"chatgpt.com/path", "", "chatgpt"},
		{"https://www.perplexity.ai/search?q=x", "", "perplexity"},
		{"https://perplexity.ai/", "", "perplexity"},
		{"https://gemini.google.com/app", "", "gemini"},
		{"https://www.google.com/", "", ""}, // AI Overviews: indistinguishable
		{"https://google.com/", "", ""},
		{"https://copilot.microsoft.com/", "", "copilot"},
		{"https://www.bing.com/", "", ""},
		{"https://claude.ai/referral/abc", "", "claude"},
		{"https://grok.com/", "", "grok"},
		{"https://www.meta.ai/", "", "meta_ai"},
		{"https://chat.mistral.ai/chat", "", "mistral"},
		{"https://mistral.ai/", "", ""},
		{"https://chat.deepseek.com/", "", "deepseek"},
		{"https://you.com/search", "", "you"},
		{"https://www.phind.com/", "", "phind"},
		{"https://poe.com/", "", "poe"},
		{"https://kagi.com/assistant", "", "kagi"},
		{"https://[2001:db8::1]/", "", ""},
		{"", "", ""},
		{"-", "", ""},
		// utm_source, with other parameters, and winning over the Referer.
		{"", "utm_source=chatgpt.com", "chatgpt"},
		{"", "?ref=x&utm_medium=referral&utm_source=chatgpt&utm_campaign=y", "chatgpt"},
		{"https://www.perplexity.ai/", "a=1&utm_source=chatgpt.com", "chatgpt"},
		{"https://chatgpt.com/", "utm_source=perplexity.ai", "perplexity"},
		{"", "UTM_SOURCE=ChatGPT.com", "chatgpt"},
		{"", "utm_source=chatgpt%2Ecom", "chatgpt"},
		{"", "utm_source=claude.ai&utm_source=chatgpt.com", "claude"},
		{"", "utm_source=evilchatgpt.com", ""},
		{"", "utm_source=%zz", ""},
		{"https://chatgpt.com/", "utm_source=newsletter", "chatgpt"}, // no assistant in utm: the Referer
		{"", "xutm_source=chatgpt.com", ""},
	}
	for _, tc := range cases {
		got, ok := traffic.Assistant(tc.referer, tc.query)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Assistant(%q, %q) = %q, %v, want %q", tc.referer, tc.query, got, ok, tc.want)
		}
	}
}

func TestAssistants(t *testing.T) {
	want := []string{"chatgpt", "perplexity", "gemini", "copilot", "claude", "grok", "meta_ai", "mistral", "deepseek", "you", "phind", "poe", "kagi"}
	if got := traffic.Assistants(); !slices.Equal(got, want) {
		t.Errorf("Assistants() = %v, want %v", got, want)
	}
}

// TestAssistantAllocatesNothing, on the hot path of a non-AI referer and
// on the others.
func TestAssistantAllocatesNothing(t *testing.T) {
	for _, c := range [][2]string{
		{"https://www.google.com/", "q=1&utm_source=newsletter"},
		{"https://example.org/blog/post?x=1", ""},
		{"https://chatgpt.com/", "utm_source=chatgpt%2Ecom"},
	} {
		if n := testing.AllocsPerRun(100, func() { traffic.Assistant(c[0], c[1]) }); n != 0 {
			t.Errorf("Assistant(%q, %q) allocates %v times", c[0], c[1], n)
		}
	}
}

func BenchmarkAssistant(b *testing.B) {
	refs := [][2]string{
		{"https://www.google.com/", ""},
		{"https://example.org/blog/post", "page=2"},
		{"", ""},
		{"https://t.co/abc", "utm_source=twitter&utm_medium=social"},
		{"https://chatgpt.com/", "utm_source=chatgpt.com"},
		{"https://www.perplexity.ai/search", ""},
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r := refs[i%len(refs)]
		traffic.Assistant(r[0], r[1])
	}
}
