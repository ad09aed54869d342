package probefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

func init() { routes["POST /v1/responses"] = (*Fake).openAIResponses }

// openAIResponses answers as OpenAI's Responses API: its web_search tool's
// user_location, flat with a type, noted (Locations); a web_search_call
// item per query (the prompt when the reply names none), the reply's
// sources in their action when the request includes them, then the
// message, whose url_citation annotations carry their fields at the top
// level (Chat Completions nests them under url_citation). A request
// without the web_search tool gets an answer that did not search.
func (f *Fake) openAIResponses(w http.ResponseWriter, r *http.Request) {
	if !f.bearerOK(w, r) {
		return
	}
	var req struct {
		Model        string  `json:"model"`
		Input        *string `json:"input"`
		Instructions string  `json:"instructions"`
		Tools        []struct {
			Type         string          `json:"type"`
			UserLocation json.RawMessage `json:"user_location"`
		} `json:"tools"`
		Include         []string `json:"include"`
		MaxOutputTokens *int     `json:"max_output_tokens"`
		Temperature     *float64 `json:"temperature"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		invalidRequest(w, "We could not parse the JSON body of your request.")
		return
	}
	search := false
	var loc Location
	for i, t := range req.Tools {
		switch t.Type {
		case "web_search", "web_search_preview":
			search = true
			if t.UserLocation != nil {
				// Flat beside type, which is required.
				l, err := openAIResponsesLocation.read(fmt.Sprintf("tools[%d].user_location", i), t.UserLocation)
				if err != nil {
					invalidRequest(w, "Invalid parameter: "+err.Error())
					return
				}
				loc = l
			}
		case "function", "file_search", "code_interpreter", "image_generation", "mcp":
		default:
			invalidRequest(w, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function', 'file_search', 'web_search', 'web_search_preview', 'code_interpreter', 'image_generation' and 'mcp'.", t.Type))
			return
		}
	}
	for _, inc := range req.Include {
		if inc != "web_search_call.action.sources" && inc != "message.output_text.logprobs" && inc != "reasoning.encrypted_content" {
			invalidRequest(w, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'web_search_call.action.sources', 'message.output_text.logprobs' and 'reasoning.encrypted_content'.", inc))
			return
		}
	}
	switch {
	case req.Model == "":
		invalidRequest(w, "Missing required parameter: 'model'.")
		return
	case req.Input == nil || *req.Input == "":
		invalidRequest(w, "Missing required parameter: 'input'.")
		return
	case req.MaxOutputTokens != nil && *req.MaxOutputTokens < 16:
		invalidRequest(w, fmt.Sprintf("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got %d instead.", *req.MaxOutputTokens))
		return
	case req.Temperature != nil && reasoningModel(req.Model):
		invalidRequest(w, "Unsupported parameter: 'temperature' is not supported with this model.")
		return
	}
	f.locate(loc)
	reply, fail, ok := f.take(req.Model, *req.Input)
	switch {
	case fail != nil:
		openAIErr(w, *fail, "")
		return
	case !ok:
		openAIErr(w, Failure{Status: http.StatusBadRequest, Type: "model_not_found"}, fmt.Sprintf("The requested model '%s' does not exist.", req.Model))
		return
	}
	var output []any
	if search && !reply.NoSearch {
		queries := reply.Queries
		if len(queries) == 0 {
			queries = []string{*req.Input}
		}
		sources := make([][]any, len(queries))
		for i, s := range reply.Sources {
			// The sources spread over the searches, as each finds its own.
			sources[i%len(queries)] = append(sources[i%len(queries)], map[string]any{"type": "url", "url": s.URL})
		}
		for i, q := range queries {
			action := map[string]any{"type": "search", "query": q}
			if slices.Contains(req.Include, "web_search_call.action.sources") {
				action["sources"] = append([]any{}, sources[i]...)
			}
			output = append(output, map[string]any{"type": "web_search_call", "id": fmt.Sprintf("ws_fake%d", i), "status": "completed", "action": action})
		}
	}
	annotations := []any{}
	if search {
		for _, c := range reply.Citations {
			start, end := c.span(reply.Text)
			annotations = append(annotations, map[string]any{"type": "url_citation", "url": c.URL, "title": c.Title, "start_index": start, "end_index": end})
		}
	}
	output = append(output, map[string]any{"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": annotations, "logprobs": []any{}}}})
	in, out := words(req.Instructions)+words(*req.Input), words(reply.Text)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "resp_fake", "object": "response", "created_at": 1764000000, "status": "completed", "model": req.Model,
		"error": nil, "incomplete_details": nil, "output": output, "tools": req.Tools,
		"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": out, "output_tokens_details": map[string]int{"reasoning_tokens": 0}, "total_tokens": in + out},
	})
}

// reasoningModel says whether OpenAI's model reasons, and so refuses a
// temperature.
func reasoningModel(model string) bool {
	return strings.HasPrefix(model, "gpt-5") || len(model) > 1 && model[0] == 'o' && '1' <= model[1] && model[1] <= '9'
}

// bearerOK checks the key an OpenAI-style API takes as a bearer token,
// answering 401 as OpenAI does (the key shown masked) when it is wrong.
func (f *Fake) bearerOK(w http.ResponseWriter, r *http.Request) bool {
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if f.Key == "" || got == f.Key {
		return true
	}
	msg := "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
	if got != "" {
		msg = fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", masked(got))
	}
	openAIErr(w, Failure{Status: http.StatusUnauthorized, Type: "invalid_api_key"}, msg)
	return false
}

// masked is a key as OpenAI shows it: its first and last four characters.
func masked(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:4] + strings.Repeat("*", len(key)-8) + key[len(key)-4:]
}

func invalidRequest(w http.ResponseWriter, msg string) {
	openAIErr(w, Failure{Status: http.StatusBadRequest, Type: "invalid_request_error"}, msg)
}
