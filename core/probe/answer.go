package probe

import (
	"net/url"
	"strings"
)

// Kinds of engine: each speaks its provider's API and reads its answer
// into one Answer (destinations.md, "AI answer engines").
const (
	// KindOpenAIChat is any Chat Completions endpoint (OpenAI, Ollama,
	// vLLM, OpenRouter); search models add url_citation annotations.
	KindOpenAIChat = "openai-chat"
	// KindOpenAIResponses is OpenAI's Responses API with web_search.
	KindOpenAIResponses = "openai-responses"
	// KindPerplexity is Perplexity's Sonar: every answer searches.
	KindPerplexity = "perplexity"
	// KindAnthropic is Anthropic's Messages API with web search.
	KindAnthropic = "anthropic"
	// KindGemini is Gemini's generateContent with google_search.
	KindGemini = "gemini"
)

// Kinds are the engine kinds, the default first.
var Kinds = []string{KindOpenAIChat, KindOpenAIResponses, KindPerplexity, KindAnthropic, KindGemini}

// Source is a page the engine reports it consulted for an answer.
type Source struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
	// Domain is the host the source is attributed to, lower case and
	// without "www.": the URL's, or for a redirect that hides it (Gemini)
	// the one its title names.
	Domain string `json:"domain"`
}

// Citation is a source the answer's text cites, with the span of the
// text it supports when the engine gives one.
type Citation struct {
	URL    string `json:"url"`
	Title  string `json:"title,omitempty"`
	Domain string `json:"domain"`
	// Start and End are byte offsets into the answer's text of the
	// supported span; both -1 when the engine gives none.
	Start int `json:"start"`
	End   int `json:"end"`
	// Text is the cited text when the engine gives it.
	Text string `json:"text,omitempty"`
}

// Answer is what an engine answered, read into one record whatever its kind.
type Answer struct {
	Text      string
	Sources   []Source
	Citations []Citation
	// Queries are the web searches the engine says it ran.
	Queries []string
	// SourcesReported says whether the engine reported its sources for
	// this answer: false for an engine without search, or an answer whose
	// search metadata is missing. Such an answer's missing citations are
	// not measured as zero.
	SourcesReported bool
	// Searches is how many web searches the engine charges for.
	Searches                  int
	InputTokens, OutputTokens int
	Attempts                  int
}

// SourceDomain is the domain a URL is attributed to: its host in lower
// case, without a leading "www."; "" for what is not an http(s) URL.
func SourceDomain(rawURL string) string {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return bareHost(u.Hostname())
}

// bareHost is a host name in lower case without a trailing dot or a
// leading "www.".
func bareHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	return strings.TrimPrefix(h, "www.")
}
