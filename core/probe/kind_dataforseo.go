package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/text/language"
)

func init() { adapters[KindDataForSEO] = dataForSEO{} }

// The surfaces of a dataforseo engine, its Model.
const (
	// DataForSEOOverview is Google's AI Overview on the results page
	// (organic live/advanced).
	DataForSEOOverview = "ai_overview"
	// DataForSEOAIMode is Google's AI Mode (ai_mode live/advanced).
	DataForSEOAIMode = "ai_mode"
)

// dataForSEOPaths are the live endpoints of the surfaces.
var dataForSEOPaths = map[string]string{
	DataForSEOOverview: "/v3/serp/google/organic/live/advanced",
	DataForSEOAIMode:   "/v3/serp/google/ai_mode/live/advanced",
}

// dataForSEO speaks DataForSEO's SERP API (sources.md, 1b): one task a
// request, POSTed as a JSON array of one, to the live endpoint of the
// engine's Model (DataForSEOOverview or DataForSEOAIMode), with HTTP
// Basic auth: Engine.APIKey is the API login and password as
// "login:password" (the dashboard's API credentials, not the account's
// password). Nearly every answer is a 200 whose body holds a status code
// per request and per task; the task's cost, in dollars, is the answer's
// CostUSD, billed even for some failures (40101).
type dataForSEO struct{}

// localisation: the country and the language go in the task's codes.
func (dataForSEO) localisation(Engine) string { return LocaliseNative }

type dataForSEOTask struct {
	Keyword      string `json:"keyword"`
	LocationCode int    `json:"location_code"`
	LanguageCode string `json:"language_code"`
	Device       string `json:"device"`
	// LoadAsync also fetches the overviews Google loads after the page
	// (organic only; billed only when one comes).
	LoadAsync bool `json:"load_async_ai_overview,omitempty"`
}

// The request asks the prompt as the search's keyword (the system
// message, the token cap and the temperature have no place in a search).
// DataForSEO decodes %## in the keyword and reads '+' as a space, so both
// are escaped.
func (dataForSEO) request(ctx context.Context, e Engine, r Request) (*http.Request, error) {
	path, ok := dataForSEOPaths[e.Model]
	if !ok {
		return nil, fmt.Errorf("the model of a %s engine is %s or %s, not %q", KindDataForSEO, DataForSEOOverview, DataForSEOAIMode, e.Model)
	}
	task := dataForSEOTask{Keyword: strings.NewReplacer("%", "%25", "+", "%2B").Replace(r.Prompt),
		LocationCode: locationCode(r.Market.Country), LanguageCode: languageCode(r.Market.Language),
		Device: "desktop", LoadAsync: e.Model == DataForSEOOverview}
	req, err := postJSON(ctx, e.BaseURL, path, []dataForSEOTask{task})
	if err != nil {
		return nil, err
	}
	// A key without a colon is sent as a login alone: DataForSEO refuses
	// it (401), as it would a wrong password.
	login, password, _ := strings.Cut(e.APIKey, ":")
	req.SetBasicAuth(login, password)
	return req, nil
}

// locationCode is DataForSEO's location_code of a country: 2000 and its
// ISO 3166-1 numeric code (2840 the United States, 2826 the United
// Kingdom), which x/text gives as the region's UN M49 code; the United
// States without a country, or for one of no numeric code.
func locationCode(country string) int {
	if r, err := language.ParseRegion(country); err == nil && r.M49() > 0 {
		return 2000 + r.M49()
	}
	return 2840
}

// languageCode is DataForSEO's language_code of a market's language: the
// language itself, Chinese by script as zh-CN (simplified) or zh-TW
// (traditional); English without one. AI Mode takes en alone (October
// 2025): another is sent all the same, and DataForSEO says if it refuses.
func languageCode(lang string) string {
	switch lang {
	case "":
		return "en"
	case "zh", "zh-Hans":
		return "zh-CN"
	case "zh-Hant":
		return "zh-TW"
	}
	return lang
}

type dataForSEOResponse struct {
	StatusCode    int     `json:"status_code"`
	StatusMessage string  `json:"status_message"`
	Cost          float64 `json:"cost"`
	Tasks         []struct {
		StatusCode    int     `json:"status_code"`
		StatusMessage string  `json:"status_message"`
		Cost          float64 `json:"cost"`
		Result        []struct {
			Type string `json:"type"`
			// Items are the page's items, of many shapes: each read
			// apart.
			Items []json.RawMessage `json:"items"`
		} `json:"result"`
	} `json:"tasks"`
}

// dataForSEOOverview is the AI Overview item (the same in the organic
// results and as AI Mode's item).
type dataForSEOOverview struct {
	Type       string                `json:"type"`
	Markdown   string                `json:"markdown"`
	Items      []json.RawMessage     `json:"items"`
	References []dataForSEOReference `json:"references"`
}

// dataForSEOElement is an element of the overview: a paragraph
// (ai_overview_element), an expanded one with components, a table, a
// video; a component has the same fields.
type dataForSEOElement struct {
	Type       string                `json:"type"`
	Title      string                `json:"title"`
	Text       string                `json:"text"`
	Markdown   string                `json:"markdown"`
	Components []json.RawMessage     `json:"components"`
	References []dataForSEOReference `json:"references"`
}

type dataForSEOReference struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Source string `json:"source"`
}

// parse reads the task's answer: the top-level item of type ai_overview
// (organic results hold it among others, AI Mode as its one item), its
// text that of its elements in order, each element's references citing
// the element's text, its sources the overview's references and then the
// elements', one per page (text fragments, #:~:text=, left out). A page
// without an overview is an answer that is Absent. A task that failed is a
// Failure (its cost, when billed, in Failure.CostUSD). A SERP request is
// not a web search an engine charges by: Searches stays 0, the price is
// the cost.
func (dataForSEO) parse(b []byte) (Answer, error) {
	var r dataForSEOResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return Answer{}, err
	}
	if len(r.Tasks) == 0 {
		if r.StatusCode != 20000 {
			return Answer{}, dataForSEOFailure(r.StatusCode, r.StatusMessage, r.Cost)
		}
		return Answer{}, errors.New("no task")
	}
	t := r.Tasks[0]
	if t.StatusCode != 20000 {
		return Answer{}, dataForSEOFailure(t.StatusCode, t.StatusMessage, t.Cost)
	}
	a := Answer{CostUSD: t.Cost}
	if len(t.Result) == 0 {
		return Answer{}, &Failure{Category: FailProvider, CostUSD: t.Cost, Detail: "DataForSEO answered a task of no result"}
	}
	var ov *dataForSEOOverview
	for _, raw := range t.Result[0].Items {
		var it dataForSEOOverview
		if json.Unmarshal(raw, &it) == nil && it.Type == "ai_overview" {
			ov = &it
			break
		}
	}
	if ov == nil {
		a.Absent = true
		return a, nil
	}
	var text strings.Builder
	var cites []Citation
	// add appends a block of text, cited by refs.
	add := func(s string, refs []dataForSEOReference) {
		s = strings.TrimSpace(s)
		start, end := -1, -1
		if s != "" {
			if text.Len() > 0 {
				text.WriteString("\n\n")
			}
			start = text.Len()
			text.WriteString(s)
			end = text.Len()
		}
		for _, ref := range refs {
			u := withoutTextFragment(ref.URL)
			cites = append(cites, Citation{URL: u, Title: ref.Title, Domain: SourceDomain(u), Start: start, End: end})
		}
	}
	for _, raw := range ov.Items {
		var el dataForSEOElement
		if json.Unmarshal(raw, &el) != nil {
			continue // an element of a shape not known
		}
		switch el.Type {
		case "ai_overview_element":
			add(el.Title, nil)
			add(cmpText(el.Text, el.Markdown), el.References)
		case "ai_overview_expanded_element":
			add(el.Title, nil)
			add(el.Text, el.References)
			for _, rc := range el.Components {
				var c dataForSEOElement
				if json.Unmarshal(rc, &c) == nil {
					add(cmpText(c.Text, c.Markdown), c.References)
				}
			}
		case "ai_overview_table_element":
			add(el.Markdown, el.References)
		}
	}
	a.Text = text.String()
	if a.Text == "" {
		// An overview whose elements are not given: its Markdown.
		a.Text = strings.TrimSpace(ov.Markdown)
	}
	a.Citations = cites
	var sources []Source
	for _, ref := range ov.References {
		u := withoutTextFragment(ref.URL)
		sources = append(sources, Source{URL: u, Title: ref.Title, Domain: SourceDomain(u)})
	}
	a.Sources = mergeSources(sources, cites)
	a.SourcesReported = true
	return a, nil
}

// cmpText is an element's text, or its Markdown when it has none.
func cmpText(text, markdown string) string {
	if strings.TrimSpace(text) != "" {
		return text
	}
	return markdown
}

// withoutTextFragment is u without a text fragment (#:~:text=…), which
// Google adds to a link to highlight the passage it quotes.
func withoutTextFragment(u string) string {
	if i := strings.Index(u, "#:~:"); i >= 0 {
		return u[:i]
	}
	return u
}

// dataForSEOFailure is the failure of a task (or a request) DataForSEO
// answered with code in a 200, its cost what DataForSEO billed for it
// (40101's is): 40101, Google failed after DataForSEO's own retries, and
// 5xxxx, DataForSEO's own error, are retried; 402xx, the account's
// billing or limits (40203, the daily cost limit, holds until midnight
// UTC), are rate_limited and permanent; any other is a request refused
// (40000-40006: the tasks of the body), permanent.
func dataForSEOFailure(code int, msg string, cost float64) error {
	f := &Failure{Category: FailBadRequest, CostUSD: cost, Detail: fmt.Sprintf("DataForSEO answered %d %s", code, msg)}
	switch {
	case code == 40101 || code >= 50000 && code < 60000:
		f.Category = FailProvider
		return f
	case code >= 40200 && code < 40300:
		f.Category = FailRateLimited
	}
	return fmt.Errorf("%w: %w", ErrPermanent, f)
}

// failure reads an answer other than 200 (401, credentials refused; 402,
// a billing problem; 404; 500) as usual, its body's status code and
// message for the log.
func (dataForSEO) failure(status int, h http.Header, b []byte) (time.Duration, error) {
	var r dataForSEOResponse
	msg := ""
	if json.Unmarshal(b, &r) == nil && r.StatusMessage != "" {
		msg = fmt.Sprintf("%d %s", r.StatusCode, r.StatusMessage)
	}
	return failed(status, h, msg)
}
