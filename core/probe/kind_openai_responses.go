package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

func init() { adapters[KindOpenAIResponses] = openAIResponses{} }

// openAIResponses speaks OpenAI's Responses API with the web_search tool:
// POST {base}/responses. The model decides whether to search; each search
// is a web_search_call item of the output, and the answer's message cites
// pages with url_citation annotations.
type openAIResponses struct{}

type responsesRequest struct {
	Model           string          `json:"model"`
	Instructions    string          `json:"instructions,omitempty"`
	Input           string          `json:"input"`
	Tools           []responsesTool `json:"tools"`
	Include         []string        `json:"include"`
	MaxOutputTokens int             `json:"max_output_tokens,omitempty"`
}

type responsesTool struct {
	Type         string        `json:"type"`
	UserLocation *userLocation `json:"user_location,omitempty"`
}

// userLocation is a web search's approximate location: the market's
// country (OpenAI's Responses and Anthropic's tools; Chat Completions
// nests the fields under Approximate, Perplexity takes them without a
// type).
type userLocation struct {
	Type        string        `json:"type,omitempty"`
	Country     string        `json:"country,omitempty"`
	Approximate *userLocation `json:"approximate,omitempty"`
}

// approximate is the user location of a request's market, of the shape
// OpenAI's Responses and Anthropic's tools take: nil without a country.
func approximate(m Market) *userLocation {
	if m.Country == "" {
		return nil
	}
	return &userLocation{Type: "approximate", Country: m.Country}
}

// The request sends no temperature: the reasoning models refuse one
// (400), and an answer engine is measured as its users get it.
func (openAIResponses) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	body := responsesRequest{Model: e.Model, Instructions: r.System, Input: r.Prompt, MaxOutputTokens: r.MaxTokens,
		Tools:   []responsesTool{{Type: "web_search", UserLocation: approximate(r.Market)}},
		Include: []string{"web_search_call.action.sources"}}
	req, err := postJSON(ctx, e.BaseURL, "/responses", body)
	return bearer(req, e.APIKey), err
}

type responsesResponse struct {
	Status string `json:"status"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	Output []struct {
		Type   string `json:"type"`
		Action struct {
			Query   string `json:"query"`
			Sources []struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"sources"`
		} `json:"action"`
		Content responsesContent `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// parse reads the output's items in order: each web_search_call is a
// search (its query, and its sources when the include asked for them);
// the text is the concatenation of the messages' output_text parts, whose
// annotations index their own part and are moved to the whole text.
func (openAIResponses) parse(b []byte) (Answer, error) {
	var rr responsesResponse
	if err := json.Unmarshal(b, &rr); err != nil {
		return Answer{}, err
	}
	if rr.Error != nil || rr.Status == "failed" {
		msg := "the response failed"
		if rr.Error != nil && rr.Error.Message != "" {
			msg = rr.Error.Message
		}
		return Answer{}, errors.New(msg)
	}
	a := Answer{InputTokens: rr.Usage.InputTokens, OutputTokens: rr.Usage.OutputTokens}
	var text []byte
	var consulted []Source
	for _, item := range rr.Output {
		switch item.Type {
		case "web_search_call":
			a.Searches++
			if item.Action.Query != "" {
				a.Queries = append(a.Queries, item.Action.Query)
			}
			for _, s := range item.Action.Sources {
				if s.Type == "url" && s.URL != "" {
					consulted = append(consulted, Source{URL: s.URL, Domain: SourceDomain(s.URL)})
				}
			}
		case "message":
			for _, part := range item.Content {
				if part.Type != "output_text" {
					continue
				}
				at := len(text)
				text = append(text, part.Text...)
				for _, an := range part.Annotations {
					if an.Type != "url_citation" {
						continue
					}
					c := newCitation(an.URL, an.Title, an.StartIndex, an.EndIndex, part.Text)
					if c.Start >= 0 {
						c.Start, c.End = c.Start+at, c.End+at
					}
					a.Citations = append(a.Citations, c)
				}
			}
		}
	}
	a.Text = string(text)
	// An answer that ran no search reports no sources, unless it cites.
	a.SourcesReported = a.Searches > 0 || len(a.Citations) > 0
	if a.SourcesReported {
		a.Sources = mergeSources(consulted, a.Citations)
	}
	return a, nil
}

// localisation: the web_search tool takes the market's country
// (user_location); the language is asked for in the prompt.
func (openAIResponses) localisation(Engine) string { return LocaliseCountry }

func (openAIResponses) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	return openAIChat{}.failure(status, h, b)
}

// mergeSources are the distinct pages of sources and then of the
// citations, by URL, in order: a page cited is a page consulted, and a
// source without a title takes its citation's.
func mergeSources(sources []Source, cs []Citation) []Source {
	var out []Source
	at := map[string]int{}
	for _, s := range append(sources, sourcesOf(cs)...) {
		if i, ok := at[s.URL]; ok {
			if out[i].Title == "" {
				out[i].Title = s.Title
			}
			continue
		}
		at[s.URL] = len(out)
		out = append(out, s)
	}
	return out
}

// responsesContent is a message's content in the Responses API's shape,
// OpenAI's and xAI's: output_text parts with their url_citation
// annotations (character offsets, where given).
type responsesContent []struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []struct {
		Type       string `json:"type"`
		URL        string `json:"url"`
		Title      string `json:"title"`
		StartIndex *int   `json:"start_index"`
		EndIndex   *int   `json:"end_index"`
	} `json:"annotations"`
}
