package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

func init() { adapters[KindOpenAIChat] = openAIChat{} }

// openAIChat speaks Chat Completions: POST {base}/chat/completions. A
// search model's answer carries url_citation annotations; a plain model's
// none, and it reports no sources.
type openAIChat struct{}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model            string            `json:"model"`
	Messages         []chatMessage     `json:"messages"`
	Temperature      *float64          `json:"temperature,omitempty"`
	MaxTokens        int               `json:"max_tokens,omitempty"`
	WebSearchOptions *webSearchOptions `json:"web_search_options,omitempty"`
}

// webSearchOptions are a search model's (OpenAI's search models,
// Perplexity's Sonar) options: the user's location.
type webSearchOptions struct {
	UserLocation *userLocation `json:"user_location,omitempty"`
}

// chatMessages are a request's messages: the system message first.
func chatMessages(r Request) []chatMessage {
	msgs := []chatMessage{{Role: "user", Content: r.Prompt}}
	if r.System != "" {
		msgs = append([]chatMessage{{Role: "system", Content: r.System}}, msgs...)
	}
	return msgs
}

func (openAIChat) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	body := chatRequest{Model: e.Model, Messages: chatMessages(r), MaxTokens: r.MaxTokens}
	// Search models refuse a temperature (400).
	if !strings.Contains(e.Model, "-search-") {
		body.Temperature = &r.Temperature
	}
	// A search model takes the market's country, nested under
	// approximate; a plain model refuses web_search_options.
	if l := approximate(r.Market); l != nil && e.Surface() == SurfaceSearchAPI {
		body.WebSearchOptions = &webSearchOptions{UserLocation: &userLocation{Type: l.Type, Approximate: &userLocation{Country: l.Country}}}
	}
	req, err := postJSON(ctx, e.BaseURL, "/chat/completions", body)
	return bearer(req, e.APIKey), err
}

// localisation: a search model (Engine.SurfaceOf search_api) takes the
// market's country (web_search_options); a plain model answers from what
// it learned, and is asked the market in the prompt.
func (openAIChat) localisation(e Engine) string {
	if e.Surface() == SurfaceSearchAPI {
		return LocaliseCountry
	}
	return LocalisePrompt
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content     string `json:"content"`
			Annotations []struct {
				Type        string `json:"type"`
				URLCitation *struct {
					URL        string `json:"url"`
					Title      string `json:"title"`
					StartIndex *int   `json:"start_index"`
					EndIndex   *int   `json:"end_index"`
				} `json:"url_citation"`
			} `json:"annotations"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func (openAIChat) parse(b []byte) (Answer, error) {
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return Answer{}, err
	}
	if len(cr.Choices) == 0 {
		return Answer{}, errors.New("no choices")
	}
	m := cr.Choices[0].Message
	a := Answer{Text: m.Content, InputTokens: cr.Usage.PromptTokens, OutputTokens: cr.Usage.CompletionTokens}
	for _, an := range m.Annotations {
		if an.Type != "url_citation" || an.URLCitation == nil {
			continue
		}
		c := an.URLCitation
		a.Citations = append(a.Citations, newCitation(c.URL, c.Title, c.StartIndex, c.EndIndex, a.Text))
	}
	if len(a.Citations) > 0 {
		// A search model's answer: its citations are its sources.
		a.SourcesReported, a.Searches = true, 1
		a.Sources = sourcesOf(a.Citations)
	}
	return a, nil
}

// openAIError is OpenAI's error body.
type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

func (openAIChat) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	var e openAIError
	msg := ""
	if json.Unmarshal(b, &e) == nil {
		msg = e.Error.Message
	}
	if status == http.StatusUnauthorized {
		// OpenAI's message shows the key in part ("sk-p****abcd").
		msg = "the API key is missing, wrong or revoked"
	}
	return failed(status, h, msg)
}

// newCitation is a citation of url; start and end index text (a UTF-16
// or byte offset as the engine gives it, kept only when it lies within
// text), -1 when absent.
func newCitation(url, title string, start, end *int, text string) Citation {
	c := Citation{URL: url, Title: title, Domain: SourceDomain(url), Start: -1, End: -1}
	if start != nil && end != nil && 0 <= *start && *start <= *end && *end <= len(text) {
		c.Start, c.End = *start, *end
		c.Text = text[*start:*end]
	}
	return c
}

// sourcesOf are the distinct URLs of citations, as sources, in order.
func sourcesOf(cs []Citation) []Source {
	var out []Source
	seen := map[string]bool{}
	for _, c := range cs {
		if !seen[c.URL] {
			seen[c.URL] = true
			out = append(out, Source{URL: c.URL, Title: c.Title, Domain: c.Domain})
		}
	}
	return out
}
