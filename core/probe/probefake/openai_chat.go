package probefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

func init() { routes["POST /v1/chat/completions"] = (*Fake).openAIChat }

// openAIChat answers as Chat Completions: a search model's citations as
// url_citation annotations with indices into content. A search model
// (its name holds "-search-") takes web_search_options, whose
// user_location nests its fields under approximate (noted: Locations);
// another model refuses them.
func (f *Fake) openAIChat(w http.ResponseWriter, r *http.Request) {
	if f.Key != "" && r.Header.Get("Authorization") != "Bearer "+f.Key {
		openAIErr(w, Failure{Status: http.StatusUnauthorized, Type: "invalid_api_key"}, "Incorrect API key provided.")
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Temperature      *float64        `json:"temperature"`
		WebSearchOptions json.RawMessage `json:"web_search_options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		openAIErr(w, Failure{Status: http.StatusBadRequest, Type: "invalid_request_error"}, "messages are required")
		return
	}
	var loc Location
	if req.WebSearchOptions != nil {
		l, msg := chatSearchOptions(req.Model, req.WebSearchOptions)
		if msg != "" {
			openAIErr(w, Failure{Status: http.StatusBadRequest, Type: "invalid_request_error"}, msg)
			return
		}
		loc = l
	}
	f.locate(loc)
	prompt := req.Messages[len(req.Messages)-1].Content
	reply, fail, ok := f.take(req.Model, prompt)
	switch {
	case fail != nil:
		openAIErr(w, *fail, "")
		return
	case !ok:
		openAIErr(w, Failure{Status: http.StatusNotFound, Type: "model_not_found"}, fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Text}
	if len(reply.Citations) > 0 {
		if req.Temperature != nil {
			openAIErr(w, Failure{Status: http.StatusBadRequest, Type: "invalid_request_error"}, "temperature is not supported with this model")
			return
		}
		var anns []any
		for _, c := range reply.Citations {
			start, end := c.span(reply.Text)
			anns = append(anns, map[string]any{"type": "url_citation",
				"url_citation": map[string]any{"url": c.URL, "title": c.Title, "start_index": start, "end_index": end}})
		}
		msg["annotations"] = anns
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": msg}},
		"usage": map[string]int{"prompt_tokens": words(prompt), "completion_tokens": words(reply.Text),
			"total_tokens": words(prompt) + words(reply.Text)},
	})
}

// chatSearchOptions reads the web_search_options of a request for model:
// its user location, or why OpenAI refuses them.
func chatSearchOptions(model string, raw json.RawMessage) (Location, string) {
	if !strings.Contains(model, "-search-") {
		return Location{}, "Web search options not supported with this model."
	}
	m, err := object("web_search_options", raw, []string{"search_context_size", "user_location"})
	if err != nil {
		return Location{}, "Invalid parameter: " + err.Error()
	}
	if m["user_location"] == nil {
		return Location{}, ""
	}
	l, err := openAIChatLocation.read("web_search_options.user_location", m["user_location"])
	if err != nil {
		return Location{}, "Invalid parameter: " + err.Error()
	}
	return l, ""
}

// openAITypes are OpenAI's error types by status, and what each says
// (Perplexity answers in the same shape).
var openAITypes = map[int][2]string{
	http.StatusBadRequest:          {"invalid_request_error", "Invalid request."},
	http.StatusUnauthorized:        {"invalid_api_key", "Incorrect API key provided."},
	http.StatusNotFound:            {"invalid_request_error", "The requested resource could not be found."},
	http.StatusTooManyRequests:     {"rate_limit_exceeded", "Rate limit reached for requests. Please try again later."},
	http.StatusInternalServerError: {"server_error", "The server had an error while processing your request. Sorry about that!"},
	http.StatusServiceUnavailable:  {"server_error", "The engine is currently overloaded, please try again later."},
}

// openAIErr writes OpenAI's error body; msg "" says the type's usual
// message.
func openAIErr(w http.ResponseWriter, fl Failure, msg string) {
	if fl.RetryAfter != "" {
		w.Header().Set("Retry-After", fl.RetryAfter)
	}
	typ, msg := fl.described(openAITypes, msg)
	writeJSON(w, fl.Status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": typ}})
}
