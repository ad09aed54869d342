package probefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

func init() { routes["POST /xai/v1/responses"] = (*Fake).xai }

// XAI is the base URL of the xai kind (…/xai/v1: the fake's /v1/responses
// is OpenAI's).
func (f *Fake) XAI() string { return f.srv.URL + "/xai/v1" }

// The fake's prices in cost_in_usd_ticks (1 USD = 10^10 ticks): $0.20 a
// million input tokens, $0.50 a million output tokens, $5 a thousand
// searches of the web or X.
const (
	XAIInputTicks  = 2_000
	XAIOutputTicks = 5_000
	XAISearchTicks = 50_000_000
)

// xai answers as xAI's Responses API (sources.md, section 2): with the
// web_search tool a web_search_call item per query (the prompt when the
// reply names none), with x_search an x_search_call per XQuery, both with
// call_id "" and their arguments as JSON text; then the message, whose
// url_citation annotations list every page of the reply's results with
// its url alone (pages the text never uses among them). A citation with a
// quote is an inline citation: "[[n]](url)" after the quote in the text
// (n its page's place in the results) and an annotation of the marker's
// characters (start_index, end_index) titled n. Usage reports the
// searches in server_side_tool_usage_details and the cost in integer
// ticks. Failures have the flat {code, error} body; search_parameters
// (the retired Live Search) is answered 410 Gone.
func (f *Fake) xai(w http.ResponseWriter, r *http.Request) {
	switch got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); {
	case f.Key == "" || got == f.Key:
	case got == "":
		xaiErr(w, Failure{Status: http.StatusUnauthorized}, "No API key provided. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		return
	default:
		xaiErr(w, Failure{Status: http.StatusUnauthorized}, fmt.Sprintf("Incorrect API key provided: %s***%s. You can obtain an API key from https://console.x.ai.", got[:2], got[len(got)-2:]))
		return
	}
	var req struct {
		Model            string                       `json:"model"`
		Input            json.RawMessage              `json:"input"`
		Tools            []map[string]json.RawMessage `json:"tools"`
		SearchParameters json.RawMessage              `json:"search_parameters"`
		MaxOutputTokens  *int                         `json:"max_output_tokens"`
	}
	bad := func(msg string) { xaiErr(w, Failure{Status: http.StatusBadRequest}, "Invalid request content: "+msg) }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		xaiErr(w, Failure{Status: http.StatusBadRequest}, "Failed to deserialize the JSON body into the target type: "+err.Error())
		return
	}
	if req.SearchParameters != nil {
		xaiErr(w, Failure{Status: http.StatusGone}, "")
		return
	}
	if req.Model == "" {
		bad("model: missing field `model`")
		return
	}
	prompt, in, msg := xaiInput(req.Input)
	if msg != "" {
		bad(msg)
		return
	}
	web, x, msg := xaiTools(req.Tools)
	if msg != "" {
		bad(msg)
		return
	}
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens < 1 {
		bad("max_output_tokens must be at least 1")
		return
	}
	reply, fail, ok := f.take(req.Model, prompt)
	switch {
	case fail != nil:
		xaiErr(w, *fail, "")
		return
	case !ok:
		xaiErr(w, Failure{Status: http.StatusNotFound}, fmt.Sprintf("The model %s does not exist or your team does not have access to it.", req.Model))
		return
	}
	var output []any
	var webCalls, xCalls int
	call := func(typ, name, query string, extra string) {
		n := len(output)
		output = append(output, map[string]any{"type": typ, "id": fmt.Sprintf("fc_fake_%d", n), "name": name, "call_id": "",
			"arguments": fmt.Sprintf(`{"query":%q,%s}`, query, extra), "status": "completed"})
	}
	searched := !reply.NoSearch && (web || x)
	if searched && web {
		queries := reply.Queries
		if len(queries) == 0 {
			queries = []string{prompt}
		}
		for _, q := range queries {
			call("web_search_call", "web_search", q, `"num_results":5`)
			webCalls++
		}
	}
	if searched && x {
		for _, q := range reply.XQueries {
			call("x_search_call", "x_semantic_search", q, `"limit":10`)
			xCalls++
		}
	}
	text := reply.Text
	annotations := []any{}
	if searched && !reply.NoMetadata {
		results := reply.results()
		for _, s := range results {
			annotations = append(annotations, map[string]any{"type": "url_citation", "url": s.URL})
		}
		text = xaiInline(reply, results, &annotations)
	}
	output = append(output, map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "logprobs": []any{}, "annotations": annotations}}})
	out := words(text)
	ticks := int64(in*XAIInputTicks + out*XAIOutputTicks + (webCalls+xCalls)*XAISearchTicks)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "25de2f84-fake", "object": "response", "created_at": 1764000000, "model": req.Model, "status": "completed",
		"output": output,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"num_sources_used": 0, "num_server_side_tools_used": webCalls + xCalls, "cost_in_usd_ticks": ticks,
			"server_side_tool_usage_details": map[string]int{"web_search_calls": webCalls, "x_search_calls": xCalls}},
	})
}

// xaiInline is the reply's text with an inline citation after each
// quote, and adds their annotations, in characters.
func xaiInline(reply Reply, results []Source, annotations *[]any) string {
	type mark struct {
		at  int // byte offset in the reply's text
		url string
	}
	var marks []mark
	for _, c := range reply.Citations {
		if c.Quote != "" {
			_, end := c.span(reply.Text)
			marks = append(marks, mark{end, c.URL})
		}
	}
	slices.SortStableFunc(marks, func(a, b mark) int { return a.at - b.at })
	var b strings.Builder
	from := 0
	for _, m := range marks {
		b.WriteString(reply.Text[from:m.at])
		from = m.at
		n := slices.IndexFunc(results, func(s Source) bool { return s.URL == m.url }) + 1
		marker := fmt.Sprintf("[[%d]](%s)", n, m.url)
		start := utf8.RuneCountInString(b.String())
		b.WriteString(marker)
		*annotations = append(*annotations, map[string]any{"type": "url_citation", "url": m.url, "title": fmt.Sprint(n),
			"start_index": start, "end_index": start + utf8.RuneCountInString(marker)})
	}
	b.WriteString(reply.Text[from:])
	return b.String()
}

// xaiInput reads the input, a string or a list of messages: the last
// user message's text, the input's tokens, or what is wrong with it.
func xaiInput(raw json.RawMessage) (prompt string, tokens int, msg string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return "", 0, "input must not be empty"
		}
		return s, words(s), ""
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &msgs) != nil || len(msgs) == 0 {
		return "", 0, "input: expected a string or a list of messages"
	}
	for i, m := range msgs {
		if !slices.Contains([]string{"system", "developer", "user", "assistant"}, m.Role) {
			return "", 0, fmt.Sprintf("input[%d].role: unknown variant `%s`, expected one of `system`, `developer`, `user`, `assistant`", i, m.Role)
		}
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(m.Content, &parts) != nil {
				return "", 0, fmt.Sprintf("input[%d].content: expected a string or a list of content parts", i)
			}
			for _, p := range parts {
				text += p.Text
			}
		}
		if text == "" {
			return "", 0, "Each message must have at least one content element."
		}
		tokens += words(text)
		if m.Role == "user" {
			prompt = text
		}
	}
	if prompt == "" {
		return "", 0, "input must hold a user message"
	}
	return prompt, tokens, ""
}

// xaiToolFields are the fields of xAI's search tools besides type.
var xaiToolFields = map[string][]string{
	"web_search": {"allowed_domains", "excluded_domains", "enable_image_understanding", "enable_image_search"},
	"x_search":   {"allowed_x_handles", "excluded_x_handles", "from_date", "to_date", "enable_image_understanding", "enable_video_understanding"},
}

// xaiTools checks the tools by xAI's rules: the search tools take only
// their documented fields (no location), at most 5 domains a list, dates
// as YYYY-MM-DD. It says whether web_search and x_search are given, or
// what is wrong.
func xaiTools(tools []map[string]json.RawMessage) (web, x bool, msg string) {
	for i, t := range tools {
		var typ string
		json.Unmarshal(t["type"], &typ)
		fields, search := xaiToolFields[typ]
		switch {
		case typ == "":
			return false, false, fmt.Sprintf("tools[%d]: missing field `type`", i)
		case !search && !slices.Contains([]string{"function", "code_interpreter", "code_execution", "file_search", "collections_search", "mcp"}, typ):
			return false, false, fmt.Sprintf("tools[%d]: unknown variant `%s`, expected one of `function`, `web_search`, `x_search`, `code_interpreter`, `file_search`, `mcp`", i, typ)
		case !search:
			continue
		}
		for k, v := range t {
			switch {
			case k == "type":
			case !slices.Contains(fields, k):
				return false, false, fmt.Sprintf("tools[%d]: unknown field `%s`", i, k)
			case strings.HasSuffix(k, "_domains"):
				var ds []string
				if json.Unmarshal(v, &ds) != nil || len(ds) > 5 {
					return false, false, fmt.Sprintf("tools[%d].%s: at most 5 domains", i, k)
				}
			case strings.HasSuffix(k, "_date"):
				var d string
				if json.Unmarshal(v, &d) != nil {
					return false, false, fmt.Sprintf("tools[%d].%s: expected a date", i, k)
				}
				if _, err := time.Parse("2006-01-02", d); err != nil {
					return false, false, fmt.Sprintf("tools[%d].%s: %q is not a date as YYYY-MM-DD", i, k, d)
				}
			}
		}
		web, x = web || typ == "web_search", x || typ == "x_search"
	}
	return web, x, ""
}

// xaiCodes are xAI's flat error codes by status, and what each says.
var xaiCodes = map[int][2]string{
	http.StatusBadRequest:          {"Client specified an invalid argument", "Invalid request content."},
	http.StatusUnauthorized:        {"The request does not have valid authentication credentials for the operation", "Incorrect API key provided."},
	http.StatusNotFound:            {"Some requested entity was not found", "The requested resource was not found."},
	http.StatusGone:                {"Some requested entity has been removed", "Live search is deprecated. Please switch to the Agent Tools API: https://docs.x.ai/docs/guides/tools/overview"},
	http.StatusTooManyRequests:     {"Too many requests", "Your team has reached its requests per minute limit. Please try again later."},
	http.StatusInternalServerError: {"Internal error", "An internal error occurred."},
	http.StatusServiceUnavailable:  {"The service is currently unavailable", "The service is temporarily overloaded. Please try again later."},
}

// xaiErr writes xAI's flat error body of the Responses API; msg "" says
// the status's usual words.
func xaiErr(w http.ResponseWriter, fl Failure, msg string) {
	if fl.RetryAfter != "" {
		w.Header().Set("Retry-After", fl.RetryAfter)
	}
	code, text := fl.described(xaiCodes, msg)
	writeJSON(w, fl.Status, map[string]any{"code": code, "error": text})
}
