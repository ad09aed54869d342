package probefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
)

func init() { routes["POST /chat/completions"] = (*Fake).perplexity }

// perplexity answers as Perplexity's Sonar: a chat completion whose text
// cites its results by number, [n] after each citation's quote, the
// results (the reply's sources, then the pages cited that are not among
// them) in search_results and their URLs in citations; the reply's Think
// in a <think> block before the text. A reply that does not search
// (NoSearch) leaves both lists out. The user_location of
// web_search_options, flat without a type, is noted (Locations).
func (f *Fake) perplexity(w http.ResponseWriter, r *http.Request) {
	if f.Key != "" && r.Header.Get("Authorization") != "Bearer "+f.Key {
		openAIErr(w, Failure{Status: http.StatusUnauthorized, Type: "invalid_api_key"},
			"Invalid API key provided. You can find your API key at https://www.perplexity.ai/settings/api.")
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Temperature      *float64        `json:"temperature"`
		MaxTokens        *int            `json:"max_tokens"`
		WebSearchOptions json.RawMessage `json:"web_search_options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		invalidRequest(w, "The request body is not valid JSON.")
		return
	}
	var loc Location
	if req.WebSearchOptions != nil {
		// Flat, without a type; coordinates taken.
		m, err := object("web_search_options", req.WebSearchOptions,
			[]string{"search_context_size", "search_type", "user_location", "image_search_relevance_enhanced"})
		if err == nil && m["user_location"] != nil {
			loc, err = perplexityLocation.read("web_search_options.user_location", m["user_location"])
		}
		if err != nil {
			invalidRequest(w, err.Error())
			return
		}
	}
	// After the system messages, user and assistant alternate, the user's
	// last.
	i := 0
	for i < len(req.Messages) && req.Messages[i].Role == "system" {
		i++
	}
	for j, m := range req.Messages[i:] {
		if want := []string{"user", "assistant"}[j%2]; m.Role != want {
			invalidRequest(w, "After the (optional) system message(s), user and assistant roles should be alternating.")
			return
		}
	}
	switch {
	case req.Model == "":
		invalidRequest(w, "Field required: model")
		return
	case len(req.Messages) == i || req.Messages[len(req.Messages)-1].Role != "user":
		invalidRequest(w, "Last message must have role `user`.")
		return
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature >= 2):
		invalidRequest(w, "temperature must be at least 0 and less than 2")
		return
	case req.MaxTokens != nil && *req.MaxTokens < 1:
		invalidRequest(w, "max_tokens must be a positive integer")
		return
	}
	f.locate(loc)
	prompt := req.Messages[len(req.Messages)-1].Content
	reply, fail, ok := f.take(req.Model, prompt)
	switch {
	case fail != nil:
		openAIErr(w, *fail, "")
		return
	case !ok:
		invalidRequest(w, fmt.Sprintf("Invalid model '%s'. Permitted models can be found in the documentation at https://docs.perplexity.ai/getting-started/models.", req.Model))
		return
	}
	body := map[string]any{"id": "pplx-fake", "object": "chat.completion", "created": 1764000000, "model": req.Model}
	text := reply.Text
	if !reply.NoSearch {
		urls, results := []string{}, []any{}
		for _, s := range reply.results() {
			urls = append(urls, s.URL)
			results = append(results, map[string]any{"title": s.Title, "url": s.URL, "date": "2026-01-15"})
		}
		type mark struct{ at, n int }
		var marks []mark
		for _, c := range reply.Citations {
			_, end := c.span(reply.Text)
			marks = append(marks, mark{end, slices.Index(urls, c.URL) + 1})
		}
		// The markers go in from the end, so that each quote's end stays
		// where it was; those at one point in the order cited.
		sort.SliceStable(marks, func(a, b int) bool { return marks[a].at > marks[b].at })
		for k := 0; k < len(marks); {
			at, run := marks[k].at, ""
			for ; k < len(marks) && marks[k].at == at; k++ {
				run += fmt.Sprintf("[%d]", marks[k].n)
			}
			text = text[:at] + run + text[at:]
		}
		body["citations"], body["search_results"] = urls, results
	}
	if reply.Think != "" {
		text = "<think>\n" + reply.Think + "\n</think>\n\n" + text
	}
	body["choices"] = []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text},
		"delta": map[string]any{"role": "assistant", "content": ""}}}
	in, out := 0, words(text)
	for _, m := range req.Messages {
		in += words(m.Content)
	}
	body["usage"] = map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out, "search_context_size": "low"}
	writeJSON(w, http.StatusOK, body)
}
