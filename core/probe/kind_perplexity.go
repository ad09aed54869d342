package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func init() { adapters[KindPerplexity] = perplexity{} }

// perplexity speaks Perplexity's Sonar API, Chat Completions compatible:
// POST {base}/chat/completions. Every answer searches; the response adds
// the numbered sources of the text (citations: [1] is the first) and the
// search results.
type perplexity struct{}

// The request sends no temperature: an answer engine is measured as its
// users get it, at the provider's own.
func (perplexity) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	body := chatRequest{Model: e.Model, Messages: chatMessages(r), MaxTokens: r.MaxTokens}
	if r.Market.Country != "" {
		// Flat, without a type.
		body.WebSearchOptions = &webSearchOptions{UserLocation: &userLocation{Country: r.Market.Country}}
	}
	req, err := postJSON(ctx, e.BaseURL, "/chat/completions", body)
	return bearer(req, e.APIKey), err
}

// localisation: the search takes the market's country
// (web_search_options.user_location); the language is asked for in the
// prompt.
func (perplexity) localisation(Engine) string { return LocaliseCountry }

type perplexityResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	// Citations and SearchResults are nil when the answer leaves them out.
	Citations     *[]string `json:"citations"`
	SearchResults *[]struct {
		Title string `json:"title"`
		URL   string `json:"url"`
	} `json:"search_results"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// parse reads the answer without its reasoning (the <think> block of the
// sonar-reasoning models); its sources are the search results and the
// numbered citations, its citations the [n] markers of the text, which
// number the citations (the search results when the answer has no
// citations, as Perplexity gives them since it deprecated those). Each
// answer is one search, the request fee; its sources are reported unless
// the answer leaves out both lists.
func (perplexity) parse(b []byte) (Answer, error) {
	var pr perplexityResponse
	if err := json.Unmarshal(b, &pr); err != nil {
		return Answer{}, err
	}
	if len(pr.Choices) == 0 {
		return Answer{}, errors.New("no choices")
	}
	a := Answer{Text: withoutThink(pr.Choices[0].Message.Content), Searches: 1,
		InputTokens: pr.Usage.PromptTokens, OutputTokens: pr.Usage.CompletionTokens,
		SourcesReported: pr.Citations != nil || pr.SearchResults != nil}
	var sources []Source
	var cited []string
	if pr.SearchResults != nil {
		for _, r := range *pr.SearchResults {
			sources = append(sources, Source{URL: r.URL, Title: r.Title, Domain: SourceDomain(r.URL)})
			cited = append(cited, r.URL)
		}
	}
	if pr.Citations != nil {
		cited = *pr.Citations
	}
	a.Citations = markerCitations(a.Text, cited, sources)
	for _, u := range cited {
		sources = append(sources, Source{URL: u, Domain: SourceDomain(u)})
	}
	a.Sources = mergeSources(sources, nil)
	return a, nil
}

func (perplexity) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	return openAIChat{}.failure(status, h, b)
}

// withoutThink is content without a leading <think>…</think> block (all
// of it is reasoning when the block is not closed: a cut answer).
func withoutThink(content string) string {
	s := strings.TrimLeft(content, " \t\r\n")
	if !strings.HasPrefix(s, "<think>") {
		return content
	}
	_, after, ok := strings.Cut(s, "</think>")
	if !ok {
		return ""
	}
	return strings.TrimLeft(after, " \t\r\n")
}

// marker is a citation marker of the text: [n] cites the nth URL.
var marker = regexp.MustCompile(`\[(\d{1,4})\]`)

// markerCitations are the citations of text's markers, in order. A marker
// [n] cites urls[n-1] (titled as in sources) for the span it closes: from
// the start of its sentence, or the end of the marker before it if later,
// to the marker, without the spaces at either end (none, -1, when nothing
// is left). A sentence starts after a line break or a '.', '!' or '?'
// followed by a space; one just before the marker ends the sentence it
// closes ("Acme leads.[1]"). Markers one after another ("[1][2]",
// "[1] [2]") cite the same span. A number in brackets with no URL of its
// number ("[1999]") is text, not a marker.
func markerCitations(text string, urls []string, sources []Source) []Citation {
	titles := map[string]string{}
	for _, s := range sources {
		titles[s.URL] = s.Title
	}
	var out []Citation
	prev, start, end := 0, 0, 0
	for _, m := range marker.FindAllStringSubmatchIndex(text, -1) {
		n, _ := strconv.Atoi(text[m[2]:m[3]])
		if n < 1 || n > len(urls) {
			continue
		}
		if run := prev > 0 && strings.TrimSpace(text[prev:m[0]]) == ""; !run {
			end = m[0]
			for end > prev && isSpace(text[end-1]) {
				end--
			}
			start = sentenceStart(text, prev, end)
		}
		prev = m[1]
		u := urls[n-1]
		c := Citation{URL: u, Title: titles[u], Domain: SourceDomain(u), Start: -1, End: -1}
		if start < end {
			c.Start, c.End, c.Text = start, end, text[start:end]
		}
		out = append(out, c)
	}
	return out
}

// sentenceStart is where the sentence that ends at end begins, not before
// from, past its leading spaces.
func sentenceStart(text string, from, end int) int {
	start := from
	for i := end - 2; i >= from; i-- {
		if text[i] == '\n' || (strings.IndexByte(".!?", text[i]) >= 0 && isSpace(text[i+1])) {
			start = i + 1
			break
		}
	}
	for start < end && isSpace(text[start]) {
		start++
	}
	return start
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
