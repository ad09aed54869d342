package probe

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() { adapters[KindXAI] = xai{} }

// xai speaks xAI's Responses API with its server-side search tools
// (sources.md, section 2): POST {base}/responses (base
// https://api.x.ai/v1) with web_search, and x_search too when the engine
// says (Engine.XSearch). The deprecated Live Search (search_parameters)
// answers 410 Gone and is never sent. No tool takes a location: a market
// is asked for in the prompt (the adapter is no localiser).
type xai struct{}

type xaiRequest struct {
	Model           string        `json:"model"`
	Input           []chatMessage `json:"input"`
	Tools           []xaiTool     `json:"tools"`
	MaxOutputTokens int           `json:"max_output_tokens,omitempty"`
}

type xaiTool struct {
	Type string `json:"type"`
}

// The request sends no temperature: an answer engine is measured as its
// users get it, at the provider's own.
func (xai) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	body := xaiRequest{Model: e.Model, MaxOutputTokens: r.MaxTokens, Tools: []xaiTool{{Type: "web_search"}}}
	if r.System != "" {
		body.Input = append(body.Input, chatMessage{Role: "system", Content: r.System})
	}
	body.Input = append(body.Input, chatMessage{Role: "user", Content: r.Prompt})
	if e.XSearch {
		body.Tools = append(body.Tools, xaiTool{Type: "x_search"})
	}
	req, err := postJSON(ctx, e.BaseURL, "/responses", body)
	return bearer(req, e.APIKey), err
}

type xaiResponse struct {
	Status string `json:"status"`
	// Error is an object ({message, code}) or, as xAI's flat errors, a
	// string.
	Error  json.RawMessage `json:"error"`
	Output []struct {
		Type string `json:"type"`
		// web_search_call, x_search_call: the arguments as JSON text; an
		// OpenAI-style action tolerated.
		Arguments string `json:"arguments"`
		Action    struct {
			Query string `json:"query"`
		} `json:"action"`
		// message
		Content responsesContent `json:"content"`
	} `json:"output"`
	// Citations, which the xAI SDK gives, tolerated: the URLs of the
	// sources.
	Citations []string `json:"citations"`
	Usage     struct {
		InputTokens    int    `json:"input_tokens"`
		OutputTokens   int    `json:"output_tokens"`
		CostInUSDTicks *int64 `json:"cost_in_usd_ticks"`
		ToolUse        *struct {
			WebSearchCalls int `json:"web_search_calls"`
			XSearchCalls   int `json:"x_search_calls"`
		} `json:"server_side_tool_usage_details"`
	} `json:"usage"`
}

// usdTicks are xAI's units of cost_in_usd_ticks in a dollar.
const usdTicks = 1e10

// parse reads the output's items in order: each web_search_call and
// x_search_call is a search, its query in its arguments; the text is the
// messages' output_text parts one after the other.
//
// Grok lists every page it looked at as a url_citation annotation, used
// in the text or not, so every annotation (and every URL of a top-level
// citations list) is a source. A citation is an annotation the text
// uses: one with a span (inline citations: its start_index and end_index
// count characters, and are read as bytes), or whose URL the text holds
// (a Markdown link to it); such an annotation without a span is a
// citation without one (after those with spans, once a page, and none
// for a page a span cites). A title that is a number is the inline
// citation's number, no page's title.
//
// Searches are those usage.server_side_tool_usage_details bills (web and
// X alike, at the engine's search price), else the calls of the output.
// usage.cost_in_usd_ticks is the exact charge: CostUSD, which Engine.Cost
// takes in place of the engine's prices.
func (xai) parse(b []byte) (Answer, error) {
	var xr xaiResponse
	if err := json.Unmarshal(b, &xr); err != nil {
		return Answer{}, err
	}
	if msg, failed := xaiResponseError(xr.Error); failed || xr.Status == "failed" {
		return Answer{}, errors.New(cmp.Or(msg, "the response failed"))
	}
	a := Answer{InputTokens: xr.Usage.InputTokens, OutputTokens: xr.Usage.OutputTokens}
	type annotation struct {
		url, title string
		start, end int // bytes into the whole text; -1 for none
	}
	var text []byte
	var anns []annotation
	calls := 0
	for _, item := range xr.Output {
		switch item.Type {
		case "web_search_call", "x_search_call":
			calls++
			var args struct {
				Query string `json:"query"`
			}
			q := item.Action.Query
			if json.Unmarshal([]byte(item.Arguments), &args) == nil && args.Query != "" {
				q = args.Query
			}
			if q != "" {
				a.Queries = append(a.Queries, q)
			}
		case "message":
			for _, part := range item.Content {
				if part.Type != "output_text" {
					continue
				}
				at := len(text)
				text = append(text, part.Text...)
				for _, an := range part.Annotations {
					if an.Type != "url_citation" || an.URL == "" {
						continue
					}
					x := annotation{url: an.URL, title: an.Title, start: -1, end: -1}
					if _, err := strconv.Atoi(strings.Trim(an.Title, "[] ")); err == nil {
						x.title = ""
					}
					if an.StartIndex != nil && an.EndIndex != nil {
						if s, e, ok := charSpan(part.Text, *an.StartIndex, *an.EndIndex); ok {
							x.start, x.end = s+at, e+at
						}
					}
					anns = append(anns, x)
				}
			}
		}
	}
	a.Text = string(text)
	for _, u := range xr.Citations {
		if u != "" {
			anns = append(anns, annotation{url: u, start: -1, end: -1})
		}
	}
	var sources []Source
	for _, x := range anns {
		sources = append(sources, Source{URL: x.url, Title: x.title, Domain: SourceDomain(x.url)})
		if x.start >= 0 {
			a.Citations = append(a.Citations, Citation{URL: x.url, Title: x.title, Domain: SourceDomain(x.url),
				Start: x.start, End: x.end, Text: a.Text[x.start:x.end]})
		}
	}
	// A page the text links to without a span is cited once, unless a
	// span cites it.
	for _, x := range anns {
		if x.start < 0 && strings.Contains(a.Text, x.url) &&
			!slices.ContainsFunc(a.Citations, func(c Citation) bool { return c.URL == x.url }) {
			a.Citations = append(a.Citations, Citation{URL: x.url, Title: x.title, Domain: SourceDomain(x.url), Start: -1, End: -1})
		}
	}
	a.Searches = calls
	if u := xr.Usage.ToolUse; u != nil {
		a.Searches = u.WebSearchCalls + u.XSearchCalls
	}
	if t := xr.Usage.CostInUSDTicks; t != nil && *t > 0 {
		a.CostUSD = float64(*t) / usdTicks
	}
	// An answer that ran no search reports no sources, unless it lists
	// some.
	a.SourcesReported = a.Searches > 0 || calls > 0 || len(sources) > 0
	if a.SourcesReported {
		a.Sources = mergeSources(sources, nil)
	}
	return a, nil
}

// charSpan is the span of characters (code points) start to end of s in
// bytes; ok is false when it does not lie within s.
func charSpan(s string, start, end int) (int, int, bool) {
	if start < 0 || start > end {
		return 0, 0, false
	}
	bs, be, n := -1, -1, 0
	for i := range s {
		if n == start {
			bs = i
		}
		if n == end {
			be = i
			break
		}
		n++
	}
	if n == start && bs < 0 {
		bs = len(s)
	}
	if n == end && be < 0 {
		be = len(s)
	}
	if bs < 0 || be < 0 {
		return 0, 0, false
	}
	return bs, be, true
}

// xaiResponseError reads a response's error: "" and false for none (null
// or absent).
func xaiResponseError(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var o struct {
		Message string `json:"message"`
	}
	json.Unmarshal(raw, &o)
	return o.Message, true
}

// xaiError is either of xAI's error bodies: {"error":{"message","type",
// "code"}} (Chat Completions) or the flat {"code","error"} (Responses).
type xaiError struct {
	Code  json.RawMessage `json:"code"`
	Error json.RawMessage `json:"error"`
}

func (e xaiError) text() string {
	var code, flat string
	json.Unmarshal(e.Code, &code)
	if json.Unmarshal(e.Error, &flat) == nil {
		return errorText(code, flat)
	}
	var nested struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	json.Unmarshal(e.Error, &nested)
	return errorText(nested.Type, nested.Message)
}

// failure: 429 and 5xx are retried, any other status is permanent. A 401
// says the key is refused in our words (xAI's show part of it); a 410 is
// what xAI answers the retired Live Search.
func (xai) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	var e xaiError
	msg := ""
	if json.Unmarshal(b, &e) == nil {
		msg = e.text()
	}
	switch status {
	case http.StatusUnauthorized:
		msg = "the API key is missing, wrong or revoked"
	case http.StatusGone:
		msg = "the endpoint or option is retired (xAI answers 410 to Live Search's search_parameters; this engine uses the Responses API's web_search tool): " + msg
	}
	return failed(status, h, msg)
}
