package probefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

func init() { routes["POST /v1beta/models/{call}"] = (*Fake).gemini }

// geminiSearchTokens are the tool-use prompt tokens (the search results
// read) that the fake charges a grounded answer per query.
const geminiSearchTokens = 100

// gemini answers as Gemini's generateContent with the google_search tool:
// the text in one part; groundingMetadata with the queries, a chunk per
// source whose uri redirects through Google and whose title is the
// source's domain, and a support per cited span (startIndex left out when
// 0, as proto3 JSON does) listing the chunks that support it. A NoMetadata
// reply searches (and is charged its tool-use tokens) but leaves the
// metadata out; without the tool nothing is searched.
func (f *Fake) gemini(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	if method != "generateContent" {
		geminiErr(w, Failure{Status: http.StatusNotFound}, "Method not found.")
		return
	}
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case f.Key != "" && key == "":
		geminiErr(w, Failure{Status: http.StatusForbidden},
			"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return
	case f.Key != "" && key != f.Key:
		geminiErr(w, Failure{Status: http.StatusBadRequest}, "API key not valid. Please pass a valid API key.")
		return
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
		SystemInstruction *struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"systemInstruction"`
		GenerationConfig *struct {
			MaxOutputTokens *int `json:"maxOutputTokens"`
		} `json:"generationConfig"`
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	bad := func(msg string) { geminiErr(w, Failure{Status: http.StatusBadRequest}, msg) }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		bad("Invalid JSON payload received. " + err.Error())
		return
	}
	if len(req.Contents) == 0 {
		bad("* GenerateContentRequest.contents: contents is not specified")
		return
	}
	if g := req.GenerationConfig; g != nil && g.MaxOutputTokens != nil && *g.MaxOutputTokens < 1 {
		bad("* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be positive.")
		return
	}
	var prompt string
	for i, c := range req.Contents {
		if c.Role != "" && c.Role != "user" && c.Role != "model" {
			bad("Please use a valid role: user, model.")
			return
		}
		if len(c.Parts) == 0 {
			bad(fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i))
			return
		}
		var b strings.Builder
		for _, p := range c.Parts {
			b.WriteString(p.Text)
		}
		prompt = b.String()
	}
	search := false
	for _, t := range req.Tools {
		for name := range t {
			switch name {
			case "google_search", "googleSearch":
				search = true
			case "google_search_retrieval", "googleSearchRetrieval":
				bad("Please use google_search field instead of google_search_retrieval field.")
				return
			}
		}
	}
	reply, fail, ok := f.take(model, prompt)
	switch {
	case fail != nil:
		geminiErr(w, *fail, "")
		return
	case !ok:
		geminiErr(w, Failure{Status: http.StatusNotFound},
			fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent.", model))
		return
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": reply.Text}}},
		"finishReason": "STOP"}
	usage := map[string]any{"promptTokenCount": words(prompt), "candidatesTokenCount": words(reply.Text)}
	toolUse := 0
	if search && !reply.NoSearch {
		queries := reply.Queries
		if len(queries) == 0 {
			queries = []string{prompt}
		}
		toolUse = geminiSearchTokens * len(queries)
		usage["toolUsePromptTokenCount"] = toolUse
		if !reply.NoMetadata {
			cand["groundingMetadata"] = grounding(reply, queries)
		}
	}
	usage["totalTokenCount"] = words(prompt) + words(reply.Text) + toolUse
	writeJSON(w, http.StatusOK, map[string]any{"candidates": []any{cand}, "usageMetadata": usage,
		"modelVersion": model, "responseId": "fake"})
}

// grounding is a reply's groundingMetadata.
func grounding(reply Reply, queries []string) map[string]any {
	results := reply.results()
	var chunks []any
	for _, s := range results {
		title := s.URL
		if u, err := url.Parse(s.URL); err == nil {
			title = strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
		}
		chunks = append(chunks, map[string]any{"web": map[string]any{
			"uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/" + opaque(s.URL), "title": title}})
	}
	// A support per span, in the text's order, with every chunk citing it.
	type support struct {
		start, end int
		chunks     []int
	}
	var sups []support
	for _, c := range reply.Citations {
		start, end := c.span(reply.Text)
		chunk := slices.IndexFunc(results, func(s Source) bool { return s.URL == c.URL })
		i := slices.IndexFunc(sups, func(s support) bool { return s.start == start && s.end == end })
		if i < 0 {
			sups = append(sups, support{start: start, end: end})
			i = len(sups) - 1
		}
		sups[i].chunks = append(sups[i].chunks, chunk)
	}
	slices.SortStableFunc(sups, func(a, b support) int { return a.start - b.start })
	var supports []any
	for _, s := range sups {
		seg := map[string]any{"endIndex": s.end, "text": reply.Text[s.start:s.end]}
		if s.start > 0 {
			seg["startIndex"] = s.start
		}
		scores := make([]float64, len(s.chunks))
		for i := range scores {
			scores[i] = 0.9
		}
		supports = append(supports, map[string]any{"segment": seg, "groundingChunkIndices": s.chunks, "confidenceScores": scores})
	}
	return map[string]any{
		"webSearchQueries":  queries,
		"searchEntryPoint":  map[string]any{"renderedContent": "<style>.container{}</style><div class=\"container\">" + strings.Join(queries, " ") + "</div>"},
		"groundingChunks":   chunks,
		"groundingSupports": supports,
	}
}

// geminiStatuses are Google's error statuses by HTTP status, and what each
// says.
var geminiStatuses = map[int][2]string{
	http.StatusBadRequest:          {"INVALID_ARGUMENT", "Request contains an invalid argument."},
	http.StatusForbidden:           {"PERMISSION_DENIED", "The caller does not have permission."},
	http.StatusNotFound:            {"NOT_FOUND", "Requested entity was not found."},
	http.StatusTooManyRequests:     {"RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."},
	http.StatusInternalServerError: {"INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"},
	http.StatusServiceUnavailable:  {"UNAVAILABLE", "The model is overloaded. Please try again later."},
	http.StatusGatewayTimeout:      {"DEADLINE_EXCEEDED", "The request timed out. Please try again."},
}

// geminiErr writes Google's error body, the wait asked for as a RetryInfo
// detail; msg "" says the status's usual message.
func geminiErr(w http.ResponseWriter, fl Failure, msg string) {
	status, msg := fl.described(geminiStatuses, msg)
	e := map[string]any{"code": fl.Status, "message": msg, "status": status}
	if fl.RetryAfter != "" {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fl.RetryAfter + "s"}}
	}
	writeJSON(w, fl.Status, map[string]any{"error": e})
}
