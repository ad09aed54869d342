package probe

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
)

func init() { adapters[KindGemini] = gemini{} }

// gemini speaks Gemini's generateContent with Google Search grounding:
// POST {base}/v1beta/models/{model}:generateContent. The sources come in
// groundingMetadata, whose chunks' URIs redirect through Google and whose
// titles name the sources' domains.
type gemini struct{}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text string `json:"text"`
	// Thought marks a part of the model's thinking, not of its answer.
	Thought bool `json:"thought,omitempty"`
}

type geminiRequest struct {
	Contents          []geminiContent       `json:"contents"`
	SystemInstruction *geminiContent        `json:"systemInstruction,omitempty"`
	Tools             []map[string]struct{} `json:"tools"`
	GenerationConfig  *geminiConfig         `json:"generationConfig,omitempty"`
}

type geminiConfig struct {
	MaxOutputTokens int `json:"maxOutputTokens"`
}

// The request sends no temperature: an answer engine is measured as its
// users get it, at the provider's own.
func (gemini) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	body := geminiRequest{Contents: []geminiContent{{Role: "user", Parts: []geminiPart{{Text: r.Prompt}}}},
		Tools: []map[string]struct{}{{"google_search": {}}}}
	if r.System != "" {
		body.SystemInstruction = &geminiContent{Parts: []geminiPart{{Text: r.System}}}
	}
	if r.MaxTokens > 0 {
		body.GenerationConfig = &geminiConfig{MaxOutputTokens: r.MaxTokens}
	}
	model := url.PathEscape(strings.TrimPrefix(e.Model, "models/"))
	req, err := postJSON(ctx, e.BaseURL, "/v1beta/models/"+model+":generateContent", body)
	if err == nil && e.APIKey != "" {
		req.Header.Set("x-goog-api-key", e.APIKey)
	}
	return req, err
}

type geminiResponse struct {
	Candidates []struct {
		Content           geminiContent `json:"content"`
		GroundingMetadata *struct {
			WebSearchQueries []string `json:"webSearchQueries"`
			GroundingChunks  []struct {
				Web *struct {
					URI   string `json:"uri"`
					Title string `json:"title"`
				} `json:"web"`
			} `json:"groundingChunks"`
			GroundingSupports []struct {
				// Byte offsets into the text; a zero is left out.
				Segment struct {
					StartIndex int `json:"startIndex"`
					EndIndex   int `json:"endIndex"`
				} `json:"segment"`
				GroundingChunkIndices []int `json:"groundingChunkIndices"`
			} `json:"groundingSupports"`
		} `json:"groundingMetadata"`
	} `json:"candidates"`
	PromptFeedback struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	} `json:"usageMetadata"`
}

func (gemini) parse(b []byte) (Answer, error) {
	var gr geminiResponse
	if err := json.Unmarshal(b, &gr); err != nil {
		return Answer{}, err
	}
	if len(gr.Candidates) == 0 {
		if r := gr.PromptFeedback.BlockReason; r != "" {
			return Answer{}, errors.New("the prompt was blocked (" + r + ")")
		}
		return Answer{}, errors.New("no candidates")
	}
	u := gr.UsageMetadata
	a := Answer{InputTokens: u.PromptTokenCount + u.ToolUsePromptTokenCount, OutputTokens: u.CandidatesTokenCount}
	cand := gr.Candidates[0]
	var text strings.Builder
	for _, p := range cand.Content.Parts {
		if !p.Thought {
			text.WriteString(p.Text)
		}
	}
	a.Text = text.String()
	gm := cand.GroundingMetadata
	if gm == nil || len(gm.WebSearchQueries)+len(gm.GroundingChunks) == 0 {
		// Not grounded, or grounded with its metadata missing: no
		// sources reported either way.
		return a, nil
	}
	a.SourcesReported, a.Searches, a.Queries = true, 1, gm.WebSearchQueries
	chunks := make([]*Source, len(gm.GroundingChunks))
	seen := map[string]bool{}
	for i, c := range gm.GroundingChunks {
		if c.Web == nil {
			continue
		}
		chunks[i] = &Source{URL: c.Web.URI, Title: c.Web.Title, Domain: chunkDomain(c.Web.URI, c.Web.Title)}
		if !seen[c.Web.URI] {
			seen[c.Web.URI] = true
			a.Sources = append(a.Sources, *chunks[i])
		}
	}
	for _, s := range gm.GroundingSupports {
		for _, i := range s.GroundingChunkIndices {
			if i < 0 || i >= len(chunks) || chunks[i] == nil {
				continue
			}
			c := newCitation(chunks[i].URL, chunks[i].Title, &s.Segment.StartIndex, &s.Segment.EndIndex, a.Text)
			c.Domain = chunks[i].Domain
			a.Citations = append(a.Citations, c)
		}
	}
	return a, nil
}

// chunkDomain is the domain a grounding chunk is attributed to: the one
// its title names (the URI redirects through Google), else the URI's.
func chunkDomain(uri, title string) string {
	if d := bareHost(strings.TrimSpace(title)); isDomain(d) {
		return d
	}
	return SourceDomain(uri)
}

// isDomain says whether s looks like a domain name: two labels or more
// of letters, digits and inner hyphens, the last with a letter.
func isDomain(s string) bool {
	labels := strings.Split(s, ".")
	if len(labels) < 2 || !strings.ContainsFunc(labels[len(labels)-1], unicode.IsLetter) {
		return false
	}
	for _, l := range labels {
		if l == "" || l[0] == '-' || l[len(l)-1] == '-' ||
			strings.ContainsFunc(l, func(r rune) bool { return r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			return false
		}
	}
	return true
}

// geminiError is Google's error body; a throttled request's details may
// say how long to wait (google.rpc.RetryInfo).
type geminiError struct {
	Error struct {
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"`
		} `json:"details"`
	} `json:"error"`
}

// failure: 429 (RESOURCE_EXHAUSTED) and 5xx are retried, after the wait
// Retry-After or the error's RetryInfo asks; 400, 401 and 403 (a bad key
// is a 400) are permanent.
func (gemini) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	var e geminiError
	msg := ""
	if json.Unmarshal(b, &e) == nil {
		msg = errorText(e.Error.Status, e.Error.Message)
	}
	wait, err := failed(status, h, msg)
	if wait == 0 && retryable(status) {
		for _, d := range e.Error.Details {
			if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
				if w, perr := time.ParseDuration(d.RetryDelay); perr == nil && w > 0 {
					wait = w
				}
			}
		}
	}
	return wait, err
}
