package probe

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aivis/aivis/core/text"
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
var Kinds = []string{KindOpenAIChat, KindOpenAIResponses, KindPerplexity, KindAnthropic, KindGemini, KindXAI, KindDataForSEO, KindSerpAPI}

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
	// Absent says the surface showed no AI answer for the prompt (a
	// Google search without an AI Overview): an answer with no text, not
	// a failure, counted in the surface's presence (Stats.Presence).
	Absent bool
	// Searches is how many web searches (or SERP requests) the engine
	// charges for.
	Searches int
	// CostUSD is what the provider says the answer cost, in dollars
	// (DataForSEO's cost, xAI's cost_in_usd_ticks): its exact charge,
	// which Engine.Cost takes in place of the engine's prices (0: the
	// provider did not say).
	CostUSD                   float64
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

// tidy is the answer fit to keep and to show: its words as text
// (core/text: a NUL gone; an engine's JSON gives no other bytes that are
// not UTF-8), the spans of its citations moved with its text (a span
// that does not fall on its characters dropped), and only the
// sources and citations whose URL is an http(s) one (or none, where the
// engine names a page by its title): a javascript: or data: URL is no
// page, and would be a link in an API consumer's page.
func (a Answer) tidy() Answer {
	cleaned := text.Clean(a.Text, 0)
	at := func(i int) int { return i }
	switch {
	case cleaned == a.Text:
	case utf8.ValidString(a.Text):
		// Only NULs went: an offset moves back by those before it.
		raw := a.Text
		at = func(i int) int {
			if i < 0 || i > len(raw) {
				return -1
			}
			return i - strings.Count(raw[:i], "\x00")
		}
	default:
		at = func(int) int { return -1 }
	}
	a.Text = cleaned
	sources := a.Sources[:0:0]
	for _, s := range a.Sources {
		if webURL(s.URL) {
			sources = append(sources, Source{URL: text.Clean(s.URL, 0), Title: text.Clean(s.Title, 0), Domain: text.Clean(s.Domain, 0)})
		}
	}
	citations := a.Citations[:0:0]
	for _, c := range a.Citations {
		if !webURL(c.URL) {
			continue
		}
		c.URL, c.Title, c.Domain = text.Clean(c.URL, 0), text.Clean(c.Title, 0), text.Clean(c.Domain, 0)
		c.Start, c.End, c.Text = span(cleaned, at(c.Start), at(c.End))
		citations = append(citations, c)
	}
	queries := a.Queries[:0:0]
	for _, q := range a.Queries {
		queries = append(queries, text.Clean(q, 0))
	}
	a.Sources, a.Citations, a.Queries = sources, citations, queries
	return a
}

// span is a citation's span of text from start to end, and the text it
// holds; none (-1, -1, "") unless both ends lie within text on a
// character's boundary (an engine's offsets may count otherwise, or cut a
// character).
func span(text string, start, end int) (int, int, string) {
	if start < 0 || start > end || end > len(text) ||
		start < len(text) && !utf8.RuneStart(text[start]) || end < len(text) && !utf8.RuneStart(text[end]) {
		return -1, -1, ""
	}
	return start, end, text[start:end]
}

// webURL reports whether u is an http(s) URL, or none.
func webURL(u string) bool {
	if u == "" {
		return true
	}
	p, err := url.Parse(strings.TrimSpace(u))
	return err == nil && (p.Scheme == "http" || p.Scheme == "https")
}
