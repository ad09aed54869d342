package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

func init() { adapters[KindAnthropic] = anthropic{} }

// anthropic speaks Anthropic's Messages API with the web search tool:
// POST {base}/v1/messages. The answer is a list of interleaved blocks:
// the searches (server_tool_use), their results (web_search_tool_result)
// and the text, cut into blocks that each carry their citations.
type anthropic struct{}

// anthropicVersion is the API version the blocks below are read by.
const anthropicVersion = "2023-06-01"

type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    string          `json:"system,omitempty"`
	Messages  []chatMessage   `json:"messages"`
	Tools     []anthropicTool `json:"tools"`
}

type anthropicTool struct {
	Type         string        `json:"type"`
	Name         string        `json:"name"`
	MaxUses      int           `json:"max_uses"`
	UserLocation *userLocation `json:"user_location,omitempty"`
}

// The request sends no temperature: an answer engine is measured as its
// users get it, at the provider's own.
func (anthropic) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	body := anthropicRequest{Model: e.Model, MaxTokens: r.MaxTokens, System: r.System,
		Messages: []chatMessage{{Role: "user", Content: r.Prompt}},
		Tools:    []anthropicTool{{Type: "web_search_20250305", Name: "web_search", MaxUses: e.MaxSearches, UserLocation: approximate(r.Market)}}}
	if body.MaxTokens <= 0 {
		body.MaxTokens = 1024 // required by the API
	}
	if body.Tools[0].MaxUses <= 0 {
		body.Tools[0].MaxUses = 5
	}
	req, err := postJSON(ctx, e.BaseURL, "/v1/messages", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("anthropic-version", anthropicVersion)
	if e.APIKey != "" {
		req.Header.Set("x-api-key", e.APIKey)
	}
	return req, nil
}

// localisation: the web search tool takes the market's country
// (user_location); the language is asked for in the prompt.
func (anthropic) localisation(Engine) string { return LocaliseCountry }

type anthropicResponse struct {
	Content []struct {
		Type string `json:"type"`
		// text
		Text      string `json:"text"`
		Citations []struct {
			Type  string `json:"type"`
			URL   string `json:"url"`
			Title string `json:"title"`
		} `json:"citations"`
		// server_tool_use
		Name  string `json:"name"`
		Input struct {
			Query string `json:"query"`
		} `json:"input"`
		// web_search_tool_result: a list of results, or an error object.
		Content json.RawMessage `json:"content"`
	} `json:"content"`
	Usage struct {
		InputTokens   int `json:"input_tokens"`
		OutputTokens  int `json:"output_tokens"`
		ServerToolUse struct {
			WebSearchRequests int `json:"web_search_requests"`
		} `json:"server_tool_use"`
	} `json:"usage"`
}

type anthropicResult struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Title string `json:"title"`
}

func (anthropic) parse(b []byte) (Answer, error) {
	var ar anthropicResponse
	if err := json.Unmarshal(b, &ar); err != nil {
		return Answer{}, err
	}
	a := Answer{InputTokens: ar.Usage.InputTokens, OutputTokens: ar.Usage.OutputTokens,
		Searches: ar.Usage.ServerToolUse.WebSearchRequests}
	var text strings.Builder
	seen := map[string]bool{}
	for _, blk := range ar.Content {
		switch blk.Type {
		case "text":
			// A block's citations support the whole block.
			start := text.Len()
			text.WriteString(blk.Text)
			for _, c := range blk.Citations {
				if c.Type == "web_search_result_location" {
					a.Citations = append(a.Citations, Citation{URL: c.URL, Title: c.Title, Domain: SourceDomain(c.URL),
						Start: start, End: text.Len(), Text: blk.Text})
				}
			}
		case "server_tool_use":
			if blk.Name == "web_search" && blk.Input.Query != "" {
				a.Queries = append(a.Queries, blk.Input.Query)
			}
		case "web_search_tool_result":
			// A failed search's content is an object
			// (web_search_tool_result_error), not a list of results.
			var rs []anthropicResult
			if json.Unmarshal(blk.Content, &rs) != nil {
				continue
			}
			a.SourcesReported = true
			for _, r := range rs {
				if r.Type == "web_search_result" && !seen[r.URL] {
					seen[r.URL] = true
					a.Sources = append(a.Sources, Source{URL: r.URL, Title: r.Title, Domain: SourceDomain(r.URL)})
				}
			}
		}
	}
	a.Text = text.String()
	return a, nil
}

// anthropicError is Anthropic's error body.
type anthropicError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// failure: 429 (with retry-after), 5xx and 529 (overloaded) are retried;
// any other status, a bad key (401) among them, is permanent.
func (anthropic) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	var e anthropicError
	msg := ""
	if json.Unmarshal(b, &e) == nil {
		msg = errorText(e.Error.Type, e.Error.Message)
	}
	return failed(status, h, msg)
}
