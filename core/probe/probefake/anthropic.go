package probefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

func init() { routes["POST /v1/messages"] = (*Fake).anthropic }

// anthropic answers as Anthropic's Messages API with the web search tool:
// per query a server_tool_use block and its web_search_tool_result (the
// sources, shared out among the searches), then the text cut into a block
// per citation span, each block citing its sources. A search past the
// tool's max_uses, and every search of a NoMetadata reply, returns a
// web_search_tool_result_error and is not counted in
// usage.server_tool_use. Without the web search tool nothing is searched.
// The tool's user_location, flat with a type, is noted (Locations).
func (f *Fake) anthropic(w http.ResponseWriter, r *http.Request) {
	switch key := r.Header.Get("x-api-key"); {
	case f.Key != "" && key == "":
		anthropicErr(w, Failure{Status: http.StatusUnauthorized}, "x-api-key header is required")
		return
	case f.Key != "" && key != f.Key:
		anthropicErr(w, Failure{Status: http.StatusUnauthorized}, "invalid x-api-key")
		return
	}
	switch v := r.Header.Get("anthropic-version"); v {
	case "2023-06-01":
	case "":
		anthropicErr(w, Failure{Status: http.StatusBadRequest}, "anthropic-version: header is required")
		return
	default:
		anthropicErr(w, Failure{Status: http.StatusBadRequest}, fmt.Sprintf("anthropic-version: invalid version %q", v))
		return
	}
	var req struct {
		Model     string          `json:"model"`
		MaxTokens *int            `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Type         string          `json:"type"`
			Name         string          `json:"name"`
			MaxUses      *int            `json:"max_uses"`
			UserLocation json.RawMessage `json:"user_location"`
		} `json:"tools"`
	}
	bad := func(msg string) { anthropicErr(w, Failure{Status: http.StatusBadRequest}, msg) }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		bad("There was an error parsing the body of your request: " + err.Error())
		return
	}
	switch {
	case req.Model == "":
		bad("model: Field required")
		return
	case req.MaxTokens == nil:
		bad("max_tokens: Field required")
		return
	case *req.MaxTokens < 1:
		bad("max_tokens: Input should be greater than or equal to 1")
		return
	case len(req.Messages) == 0:
		bad("messages: at least one message is required")
		return
	case req.System != nil && blocksText(req.System) == nil:
		bad("system: Input should be a valid string or a list of text blocks")
		return
	}
	var prompt string
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			bad(fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i))
			return
		}
		text := blocksText(m.Content)
		if text == nil {
			bad(fmt.Sprintf("messages.%d.content: Input should be a valid string or a list of content blocks", i))
			return
		}
		prompt = *text
	}
	if req.Messages[0].Role != "user" {
		bad("messages: first message must use the \"user\" role")
		return
	}
	search, maxUses := false, -1
	var loc Location
	for i, t := range req.Tools {
		if t.Type != "web_search_20250305" {
			bad(fmt.Sprintf("tools.%d: Input tag '%s' found using 'type' does not match any of the expected tags", i, t.Type))
			return
		}
		if t.Name != "web_search" {
			bad(fmt.Sprintf("tools.%d.name: Input should be 'web_search'", i))
			return
		}
		if t.MaxUses != nil && *t.MaxUses < 1 {
			bad(fmt.Sprintf("tools.%d.max_uses: Input should be greater than 0", i))
			return
		}
		search = true
		if t.MaxUses != nil {
			maxUses = *t.MaxUses
		}
		if t.UserLocation != nil {
			// Flat beside type, which is required.
			l, err := anthropicLocation.read(fmt.Sprintf("tools.%d.user_location", i), t.UserLocation)
			if err != nil {
				bad(err.Error())
				return
			}
			loc = l
		}
	}
	f.locate(loc)
	reply, fail, ok := f.take(req.Model, prompt)
	switch {
	case fail != nil:
		anthropicErr(w, *fail, "")
		return
	case !ok:
		anthropicErr(w, Failure{Status: http.StatusNotFound}, "model: "+req.Model)
		return
	}
	var content []any
	searches := 0
	citations := reply.Citations
	if search && !reply.NoSearch {
		queries := reply.Queries
		if len(queries) == 0 {
			queries = []string{prompt}
		}
		found := len(queries)
		switch {
		case reply.NoMetadata:
			found = 0
		case maxUses >= 0:
			found = min(found, maxUses)
		}
		results := reply.results()
		for i, q := range queries {
			id := fmt.Sprintf("srvtoolu_fake%02d", i+1)
			content = append(content, map[string]any{"type": "server_tool_use", "id": id, "name": "web_search", "input": map[string]any{"query": q}})
			var res any
			switch {
			case i < found:
				list := []any{}
				for j, s := range results {
					if j%found == i {
						list = append(list, map[string]any{"type": "web_search_result", "url": s.URL, "title": s.Title,
							"encrypted_content": opaque("content " + s.URL), "page_age": "April 30, 2025"})
					}
				}
				res = list
			case reply.NoMetadata:
				res = map[string]any{"type": "web_search_tool_result_error", "error_code": "unavailable"}
			default:
				res = map[string]any{"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
			}
			content = append(content, map[string]any{"type": "web_search_tool_result", "tool_use_id": id, "content": res})
		}
		searches = found
	}
	if searches == 0 {
		citations = nil // nothing found, nothing to cite
	}
	content = append(content, textBlocks(reply.Text, citations)...)
	usage := map[string]any{"input_tokens": words(prompt), "output_tokens": words(reply.Text),
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if searches > 0 {
		usage["server_tool_use"] = map[string]int{"web_search_requests": searches}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
	})
}

// blocksText is the text of a message's content, a string or a list of
// blocks (their text blocks joined); nil when it is neither.
func blocksText(raw json.RawMessage) *string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	s = b.String()
	return &s
}

// textBlocks cut text at the citations' spans: a block for each piece,
// citing the sources whose span covers it.
func textBlocks(text string, cs []Citation) []any {
	cuts := []int{0, len(text)}
	for _, c := range cs {
		start, end := c.span(text)
		cuts = append(cuts, start, end)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var blocks []any
	for i := 1; i < len(cuts); i++ {
		from, to := cuts[i-1], cuts[i]
		if from == to {
			continue
		}
		blk := map[string]any{"type": "text", "text": text[from:to]}
		var cites []any
		for _, c := range cs {
			if start, end := c.span(text); start <= from && to <= end {
				cites = append(cites, map[string]any{"type": "web_search_result_location", "url": c.URL, "title": c.Title,
					"cited_text": text[start:end], "encrypted_index": opaque("index " + c.URL)})
			}
		}
		if cites != nil {
			blk["citations"] = cites
		}
		blocks = append(blocks, blk)
	}
	return blocks
}

// anthropicTypes are Anthropic's error types by status, and what each says.
var anthropicTypes = map[int][2]string{
	http.StatusBadRequest:            {"invalid_request_error", "Invalid request."},
	http.StatusUnauthorized:          {"authentication_error", "invalid x-api-key"},
	http.StatusForbidden:             {"permission_error", "Your API key does not have permission to use the specified resource."},
	http.StatusNotFound:              {"not_found_error", "The requested resource could not be found."},
	http.StatusRequestEntityTooLarge: {"request_too_large", "Request exceeds the maximum allowed number of bytes."},
	http.StatusTooManyRequests:       {"rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."},
	http.StatusInternalServerError:   {"api_error", "Internal server error"},
	529:                              {"overloaded_error", "Overloaded"},
}

// anthropicErr writes Anthropic's error body; msg "" says the type's usual
// message.
func anthropicErr(w http.ResponseWriter, fl Failure, msg string) {
	if fl.RetryAfter != "" {
		w.Header().Set("retry-after", fl.RetryAfter)
	}
	typ, msg := fl.described(anthropicTypes, msg)
	w.Header().Set("request-id", "req_fake")
	writeJSON(w, fl.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_fake"})
}
