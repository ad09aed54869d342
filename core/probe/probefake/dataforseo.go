package probefake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

func init() {
	routes["POST /v3/serp/google/organic/live/advanced"] = func(f *Fake, w http.ResponseWriter, r *http.Request) {
		f.dataForSEO(w, r, "ai_overview")
	}
	routes["POST /v3/serp/google/ai_mode/live/advanced"] = func(f *Fake, w http.ResponseWriter, r *http.Request) {
		f.dataForSEO(w, r, "ai_mode")
	}
}

// Task is a DataForSEO task the fake received and took (one that passed
// its checks), its keyword as DataForSEO decodes it.
type Task struct {
	Keyword      string
	LocationCode int
	LanguageCode string
	Device       string
	// LoadAsync is load_async_ai_overview.
	LoadAsync bool
}

// Tasks are the DataForSEO tasks received, in the order they came.
func (f *Fake) Tasks() []Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Task(nil), f.tasks...)
}

// The fake's prices, in dollars (DataForSEO's are not verified here): a
// live search, the asynchronous overview (charged only when one comes),
// an AI Mode search.
const (
	dataForSEOOrganicPrice = 0.002
	dataForSEOAsyncPrice   = 0.0006
	dataForSEOAIModePrice  = 0.004
)

// DataForSEOPrice is what the fake bills a search of the surface
// ("ai_overview", organic, or "ai_mode"), and a task of code 40101.
func DataForSEOPrice(surface string, overview bool) float64 {
	if surface == "ai_mode" {
		return dataForSEOAIModePrice
	}
	if overview {
		return dataForSEOOrganicPrice + dataForSEOAsyncPrice
	}
	return dataForSEOOrganicPrice
}

// dataForSEOUsual are the usual words of DataForSEO's codes.
var dataForSEOUsual = map[int]string{
	401:   "You are not authorized to access this resource. See your login details here: https://app.dataforseo.com/api-access",
	402:   "We had a problem billing your account. Please, check your account’s balance.",
	404:   "Not Found.",
	500:   "Sorry, we could not process your request due to the internal server error. Please, try again later.",
	40000: "You can set only one task at a time.",
	40101: "Internal SE Server Error.",
	40102: "No Search Results.",
	40203: "Daily cost limit exceeded. You can change this limit in your account settings.",
	40501: "Invalid Field: 'keyword'.",
}

// dataTime is how DataForSEO writes a time.
const dataTime = "2025-06-24 14:36:54 +00:00"

// dataForSEO answers as DataForSEO's live SERP endpoints (sources.md, 1b)
// for the surface (the model the replies are scripted for): HTTP Basic
// credentials, the Key as login:password (a Key without a colon is a
// login with an empty password); a body that is a JSON array of exactly
// one task with a keyword (else a 200 whose request status is 40000, or
// whose task's is 40501). A scripted Failure of a five-digit Status is
// that task code in a 200 (40101 billed, its result null; the request's
// code 20000 all the same); any other Status is that HTTP status. The
// reply's text is the overview's elements, one per paragraph: a paragraph
// of "|" lines a table element, one whose first line starts "## " an
// expanded element titled by the rest of that line, each further line a
// component; each citation a reference of the element (or component) its
// quote starts in, its URL with a text fragment; the reply's sources the
// overview's references. The organic page has an organic result before
// the overview and a "people also ask" after it holding an overview of
// its own (not the page's).
func (f *Fake) dataForSEO(w http.ResponseWriter, r *http.Request, surface string) {
	if f.Key != "" {
		login, password, _ := strings.Cut(f.Key, ":")
		if l, p, ok := r.BasicAuth(); !ok || l != login || p != password {
			dataForSEOStatus(w, Failure{Status: http.StatusUnauthorized})
			return
		}
	}
	var tasks []json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&tasks); err != nil || len(tasks) != 1 {
		writeJSON(w, http.StatusOK, dataForSEOEnvelope(40000, dataForSEOUsual[40000], 0, nil))
		return
	}
	var t struct {
		Keyword      *string `json:"keyword"`
		LocationCode int     `json:"location_code"`
		LanguageCode string  `json:"language_code"`
		Device       string  `json:"device"`
		LoadAsync    bool    `json:"load_async_ai_overview"`
	}
	keyword := ""
	err := json.Unmarshal(tasks[0], &t)
	if err == nil && t.Keyword != nil {
		keyword, err = url.QueryUnescape(*t.Keyword)
	}
	if err != nil || t.Keyword == nil || keyword == "" || len(keyword) > 700 {
		writeJSON(w, http.StatusOK, dataForSEOEnvelope(20000, "Ok.", 0, []any{dataForSEOTask(40501, 0, nil, nil)}))
		return
	}
	reply, fail, ok := f.take(surface, keyword)
	if fail == nil {
		f.mu.Lock()
		f.tasks = append(f.tasks, Task{keyword, t.LocationCode, t.LanguageCode, t.Device, t.LoadAsync})
		f.mu.Unlock()
	}
	data := map[string]any{"api": "serp", "function": "live", "se": "google", "se_type": surface, "keyword": *t.Keyword,
		"location_code": t.LocationCode, "language_code": t.LanguageCode, "device": t.Device}
	switch {
	case fail != nil && fail.Status < 10000:
		dataForSEOStatus(w, *fail)
		return
	case fail != nil:
		cost := 0.0
		if fail.Status == 40101 {
			cost = DataForSEOPrice(surface, false)
		}
		task := dataForSEOTask(fail.Status, cost, data, nil)
		if fail.Message != "" {
			task["status_message"] = fail.Message
		}
		writeJSON(w, http.StatusOK, dataForSEOEnvelope(20000, "Ok.", cost, []any{task}))
		return
	case !ok:
		writeJSON(w, http.StatusOK, dataForSEOEnvelope(20000, "Ok.", 0, []any{dataForSEOTask(40102, 0, data, nil)}))
		return
	}
	typ := "organic"
	if surface == "ai_mode" {
		typ = "ai_mode"
	}
	var items []any
	if typ == "organic" {
		items = append(items, map[string]any{"type": "organic", "rank_group": 1, "rank_absolute": 1, "position": "left",
			"xpath": "/html[1]/body[1]/div[1]", "domain": "www.wikipedia.org", "title": "Wikipedia", "url": "https://www.wikipedia.org/",
			"description": "The free encyclopedia.", "links": nil, "timestamp": nil, "rectangle": nil})
	}
	if !reply.NoOverview {
		items = append(items, dataForSEOOverview(reply, len(items)+1))
	}
	if typ == "organic" {
		nested := dataForSEOOverview(Reply{Text: "An overview of another question.",
			Citations: []Citation{{URL: "https://paa.example/answer", Title: "Another answer"}}}, 0)
		nested["type"] = "people_also_ask_ai_overview_expanded_element"
		items = append(items, map[string]any{"type": "people_also_ask", "rank_group": 1, "rank_absolute": len(items) + 1,
			"position": "left", "xpath": "/html[1]/body[1]/div[9]",
			"items": []any{map[string]any{"type": "people_also_ask_element", "title": "Another question?", "seed_question": nil,
				"expanded_element": []any{nested}}}, "rectangle": nil})
	}
	var itemTypes []string
	for _, it := range items {
		itemTypes = append(itemTypes, it.(map[string]any)["type"].(string))
	}
	cost := DataForSEOPrice(surface, !reply.NoOverview && (t.LoadAsync || surface == "ai_mode"))
	result := map[string]any{"keyword": *t.Keyword, "type": typ, "se_domain": "google.com", "location_code": t.LocationCode,
		"language_code": t.LanguageCode, "check_url": "https://www.google.com/search?q=" + url.QueryEscape(keyword),
		"datetime": dataTime, "spell": nil, "refinement_chips": nil, "item_types": itemTypes, "se_results_count": 0,
		"items_count": len(items), "items": items}
	writeJSON(w, http.StatusOK, dataForSEOEnvelope(20000, "Ok.", cost, []any{dataForSEOTask(20000, cost, data, []any{result})}))
}

// dataForSEOStatus answers an HTTP failure, its body DataForSEO's envelope
// with no task.
func dataForSEOStatus(w http.ResponseWriter, fl Failure) {
	if fl.RetryAfter != "" {
		w.Header().Set("Retry-After", fl.RetryAfter)
	}
	msg := cmp.Or(fl.Message, dataForSEOUsual[fl.Status], dataForSEOUsual[500])
	writeJSON(w, fl.Status, dataForSEOEnvelope(fl.Status*100, msg, 0, nil))
}

func dataForSEOEnvelope(code int, msg string, cost float64, tasks []any) map[string]any {
	failed := 0
	for _, t := range tasks {
		if t.(map[string]any)["status_code"] != 20000 {
			failed++
		}
	}
	return map[string]any{"version": "0.1.20250526", "status_code": code, "status_message": msg, "time": "1.2345 sec.",
		"cost": cost, "tasks_count": len(tasks), "tasks_error": failed, "tasks": tasks}
}

// dataForSEOTask is a task of the code; a failed one's result is null.
func dataForSEOTask(code int, cost float64, data map[string]any, result []any) map[string]any {
	msg := cmp.Or(dataForSEOUsual[code], "Ok.")
	return map[string]any{"id": "06241736-1535-0139-0000-5b6a4f9d38ca", "status_code": code, "status_message": msg,
		"time": "1.2000 sec.", "cost": cost, "result_count": len(result),
		"path": []string{"v3", "serp", "google", "live", "advanced"}, "data": data, "result": result}
}

// dataForSEOOverview is the AI Overview item of a reply at rank.
func dataForSEOOverview(reply Reply, rank int) map[string]any {
	type part struct {
		start, end int
		el         map[string]any
	}
	var parts []part // the elements and components, where their text lies
	var elements []any
	at := 0
	for _, para := range strings.Split(reply.Text, "\n\n") {
		start := at
		at += len(para) + len("\n\n")
		el := map[string]any{"type": "ai_overview_element", "title": nil, "text": para, "markdown": para,
			"links": nil, "images": nil, "references": nil}
		switch {
		case strings.HasPrefix(para, "## "):
			title, rest, _ := strings.Cut(para[3:], "\n")
			el = map[string]any{"type": "ai_overview_expanded_element", "title": title, "text": nil, "references": nil}
			var comps []any
			from := start + 3 + len(title) + 1
			for _, line := range strings.Split(rest, "\n") {
				if line != "" {
					c := map[string]any{"type": "ai_overview_expanded_component", "text": line, "markdown": line, "references": nil}
					comps = append(comps, c)
					parts = append(parts, part{from, from + len(line), c})
				}
				from += len(line) + 1
			}
			el["components"] = comps
			parts = append(parts, part{start, start + len(para), el})
		case strings.HasPrefix(para, "|"):
			var rows [][]string
			for _, line := range strings.Split(para, "\n") {
				if strings.Trim(line, "|- :") == "" {
					continue // the header's rule
				}
				var row []string
				for _, cell := range strings.Split(strings.Trim(line, "|"), "|") {
					row = append(row, strings.TrimSpace(cell))
				}
				rows = append(rows, row)
			}
			el = map[string]any{"type": "ai_overview_table_element", "markdown": para,
				"table": map[string]any{"table_header": nil, "table_content": rows}, "references": nil}
			parts = append(parts, part{start, start + len(para), el})
		default:
			parts = append(parts, part{start, start + len(para), el})
		}
		elements = append(elements, el)
	}
	elements = append(elements, map[string]any{"type": "ai_overview_video_element", "title": "A video",
		"url": "https://www.youtube.com/watch?v=fake", "domain": "www.youtube.com", "source": "YouTube", "timestamp": "2024-04-26 00:00:00 +00:00"})
	for _, c := range reply.Citations {
		s, e := c.span(reply.Text)
		// The innermost part the quote starts in (a component before its
		// element); the first without one.
		target := parts[0].el
		for _, p := range parts {
			if p.start <= s && s <= p.end {
				target = p.el
				break
			}
		}
		refs, _ := target["references"].([]any)
		target["references"] = append(refs, dataForSEORef(c.URL+"#:~:text="+url.PathEscape(reply.Text[s:e]), c.Title, reply.Text[s:e]))
	}
	var refs []any
	for _, s := range reply.Sources {
		ref := dataForSEORef(s.URL, s.Title, "")
		ref["rank_group"], ref["rank_absolute"], ref["position"] = len(refs)+1, 20+len(refs), "right"
		refs = append(refs, ref)
	}
	var md strings.Builder
	md.WriteString(reply.Text)
	for i, r := range refs {
		fmt.Fprintf(&md, " [[%d]](%s)", i+1, r.(map[string]any)["url"])
	}
	return map[string]any{"type": "ai_overview", "rank_group": 1, "rank_absolute": rank, "position": "left",
		"xpath": "/html[1]/body[1]/div[3]", "asynchronous_ai_overview": false, "markdown": md.String(),
		"items": elements, "references": refs, "rectangle": nil}
}

func dataForSEORef(u, title, text string) map[string]any {
	host := ""
	if p, err := url.Parse(u); err == nil {
		host = p.Hostname()
	}
	return map[string]any{"type": "ai_overview_reference", "source": strings.TrimPrefix(host, "www."), "domain": host,
		"url": u, "title": title, "text": text}
}
