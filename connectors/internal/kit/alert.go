package kit

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/plugins/sdk"
)

// Alert is what an aivis event says, read once for every connector that
// turns it into a message, a CRM note or analytics properties. Fields an
// event kind does not carry stay zero (nil for numbers).
type Alert struct {
	ID, Kind, Domain string
	Time             time.Time
	ClientID         string

	Score             *int // visibility score 0-100
	PreviousScore     *int
	ScoreChange       *int
	Sentiment         string
	PreviousSentiment string
	SentimentScore    *float64
	ReadinessScore    *int     // scan_completed
	ScoreBefore       *int     // content_optimized
	ScoreAfter        *int     // content_optimized
	Spent             *float64 // content requests, dollars
	URL               string   // content requests, disabled webhooks
	Status            string   // content requests
	Reason            string   // failures, disabled webhooks and connections
	Message           string   // webhook_test

	// Citations: scan_completed's over every engine with Engines, each
	// engine's; citation_change's of Engine, with the previous scan's and
	// the change in percentage points.
	Engine               string
	EngineKind           string
	Surface              string // the engine's: model, search_api or serp
	Market               string // the figures' market, "de-DE"; "" for none
	CitationRate         *Rate
	PreviousCitationRate *Rate
	CitationChange       *float64
	SourceShare          *Rate
	PreviousSourceShare  *Rate
	OverviewPresence     *Rate // scan_completed's, over every engine
	Engines              []EngineCitations

	// crawler_errors: AI crawlers' error hits on the pages the engines
	// cite, how many cited pages had them, the batch's days and the pages
	// the event lists.
	CrawlerErrors   *int64
	PagesWithErrors *int
	Days            []string
	ErrorPages      []ErrorPage

	// Data is the event's data object as sent.
	Data map[string]any
}

// Parse reads an event. A body that is not the documented JSON still
// gives an alert with the routing facts.
func Parse(ev sdk.Event) Alert {
	a := Alert{ID: ev.ID, Kind: ev.Kind, Domain: ev.Domain, Time: ev.Timestamp.UTC(), ClientID: ev.ClientID}
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(ev.Body, &body) != nil || len(body.Data) == 0 {
		return a
	}
	var d struct {
		Domain            string          `json:"domain"`
		Score             *int            `json:"visibility_score"`
		PreviousScore     *int            `json:"previous_visibility_score"`
		ScoreChange       *int            `json:"score_change"`
		Sentiment         string          `json:"sentiment"`
		PreviousSentiment *string         `json:"previous_sentiment"`
		SentimentScore    *float64        `json:"sentiment_score"`
		ReadinessScore    *int            `json:"readiness_score"`
		ScoreBefore       *int            `json:"score_before"`
		ScoreAfter        *int            `json:"score_after"`
		Spent             json.RawMessage `json:"spent"`
		URL               *string         `json:"url"`
		Status            string          `json:"status"`
		Reason            string          `json:"reason"`
		FailureReason     *string         `json:"failure_reason"`
		Message           string          `json:"message"`

		Engine               string            `json:"engine"`
		Kind                 string            `json:"kind"`
		Surface              string            `json:"surface"`
		Market               *Market           `json:"market"`
		OverviewPresence     *Rate             `json:"overview_presence"`
		CitationRate         *Rate             `json:"citation_rate"`
		PreviousCitationRate *Rate             `json:"previous_citation_rate"`
		CitationChange       *float64          `json:"citation_change"`
		SourceShare          *Rate             `json:"source_share"`
		PreviousSourceShare  *Rate             `json:"previous_source_share"`
		Engines              []EngineCitations `json:"engines"`

		Errors          *int64      `json:"errors"`
		PagesWithErrors *int        `json:"pages_with_errors"`
		Days            []string    `json:"days"`
		Pages           []ErrorPage `json:"pages"`
	}
	json.Unmarshal(body.Data, &d)
	json.Unmarshal(body.Data, &a.Data)
	if a.Domain == "" {
		a.Domain = d.Domain
	}
	a.Score, a.PreviousScore, a.ScoreChange = d.Score, d.PreviousScore, d.ScoreChange
	if a.ScoreChange == nil && d.Score != nil && d.PreviousScore != nil {
		c := *d.Score - *d.PreviousScore
		a.ScoreChange = &c
	}
	a.Sentiment, a.SentimentScore = d.Sentiment, d.SentimentScore
	if d.PreviousSentiment != nil {
		a.PreviousSentiment = *d.PreviousSentiment
	}
	a.ReadinessScore, a.ScoreBefore, a.ScoreAfter = d.ReadinessScore, d.ScoreBefore, d.ScoreAfter
	if len(d.Spent) > 0 {
		var f float64
		if json.Unmarshal(d.Spent, &f) == nil || json.Unmarshal([]byte(strings.Trim(string(d.Spent), `"`)), &f) == nil {
			a.Spent = &f
		}
	}
	if d.URL != nil {
		a.URL = *d.URL
	}
	a.Status, a.Reason, a.Message = d.Status, d.Reason, d.Message
	if d.FailureReason != nil {
		a.Reason = *d.FailureReason
	}
	a.Engine, a.EngineKind, a.CitationRate, a.PreviousCitationRate = d.Engine, d.Kind, d.CitationRate, d.PreviousCitationRate
	a.CitationChange, a.SourceShare, a.PreviousSourceShare, a.Engines = d.CitationChange, d.SourceShare, d.PreviousSourceShare, d.Engines
	a.Surface, a.Market, a.OverviewPresence = d.Surface, d.Market.String(), d.OverviewPresence
	if ev.Kind == "crawler_errors" {
		a.CrawlerErrors, a.PagesWithErrors, a.Days, a.ErrorPages = d.Errors, d.PagesWithErrors, d.Days, d.Pages
	}
	return a
}

// ErrorPage is a cited page of crawler_errors: its error hits by agent,
// and the engines that cite it.
type ErrorPage struct {
	Path    string       `json:"path"`
	Errors  int64        `json:"errors"`
	Agents  []ErrorAgent `json:"agents"`
	CitedBy []struct {
		Engine  string `json:"engine"`
		Answers int    `json:"answers"`
	} `json:"cited_by"`
}

// ErrorAgent is one agent's error hits on a page.
type ErrorAgent struct {
	Agent        string `json:"agent"`
	Verification string `json:"verification"`
	Status4xx    int64  `json:"status_4xx"`
	Status5xx    int64  `json:"status_5xx"`
}

// Line is the page for people: "/pricing: 11 errors (GPTBot 9 4xx,
// PerplexityBot 2 5xx), cited by ChatGPT (6), Perplexity (3)".
func (p ErrorPage) Line() string {
	var agents, engines []string
	for _, a := range p.Agents {
		var cs []string
		if a.Status4xx > 0 {
			cs = append(cs, fmt.Sprintf("%d 4xx", a.Status4xx))
		}
		if a.Status5xx > 0 {
			cs = append(cs, fmt.Sprintf("%d 5xx", a.Status5xx))
		}
		agents = append(agents, a.Agent+" "+strings.Join(cs, " "))
	}
	for _, e := range p.CitedBy {
		engines = append(engines, fmt.Sprintf("%s (%d)", e.Engine, e.Answers))
	}
	l := fmt.Sprintf("%s: %s", p.Path, plural(p.Errors, "error"))
	if len(agents) > 0 {
		l += " (" + strings.Join(agents, ", ") + ")"
	}
	if len(engines) > 0 {
		l += ", cited by " + strings.Join(engines, ", ")
	}
	return l
}

// plural is "1 error", "3 errors".
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Market is where, and in which language, an engine's figures were asked.
type Market struct {
	Country  string `json:"country"`
	Language string `json:"language"`
}

// String is the market as its language and country, "de-DE" ("" for
// none).
func (m *Market) String() string {
	if m == nil || m.Country == "" {
		return ""
	}
	return m.Language + "-" + m.Country
}

// Rate is a proportion of an event: Hits of Of.
type Rate struct {
	Value float64 `json:"value"`
	Hits  int     `json:"hits"`
	Of    int     `json:"of"`
}

// Percent is the rate in percent, to the hundredth.
func (r Rate) Percent() float64 { return math.Round(r.Value*10000) / 100 }

// String is "12.5% (1 of 8)".
func (r Rate) String() string {
	return fmt.Sprintf("%s%% (%d of %d)", Number(r.Percent(), 1), r.Hits, r.Of)
}

// EngineCitations are one engine's figures in scan_completed.
type EngineCitations struct {
	Label            string  `json:"label"`
	Kind             string  `json:"kind"`
	Surface          string  `json:"surface"`
	Market           *Market `json:"market"`
	CitationRate     Rate    `json:"citation_rate"`
	SourceShare      *Rate   `json:"source_share"`
	OverviewPresence *Rate   `json:"overview_presence"`
}

// name is the engine as a line names it: its label, and its market's.
func (e EngineCitations) name() string {
	if m := e.Market.String(); m != "" {
		return e.Label + " (" + m + ")"
	}
	return e.Label
}

// Number writes v with at most the given decimals, and none that are
// zeros: 12.5, 40, 33.3.
func Number(v float64, decimals int) string {
	r := math.Round(v*math.Pow10(decimals)) / math.Pow10(decimals)
	if r == 0 {
		r = 0 // not -0
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// Points writes a change in percentage points with its sign: "-27.5 pts".
func Points(v float64) string {
	s := Number(v, 2)
	if s != "0" && !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s + " pts"
}

// titles name each event kind for people.
var titles = map[string]string{
	"ai_visibility_change":      "AI visibility changed",
	"scan_completed":            "Visibility scan completed",
	"citation_change":           "Citation rate changed",
	"crawler_errors":            "AI crawlers got errors",
	"content_optimized":         "Content optimized",
	"content_request_created":   "Content request created",
	"content_request_failed":    "Content request failed",
	"content_request_cancelled": "Content request cancelled",
	"webhook_test":              "Test from aivis",
	"webhook_disabled":          "Webhook disabled",
	"connection_disabled":       "Connection disabled",
}

// Title names the event kind for people: "AI visibility changed".
func Title(kind string) string {
	if t, ok := titles[kind]; ok {
		return t
	}
	return strings.ToUpper(kind[:min(1, len(kind))]) + strings.ReplaceAll(kind[min(1, len(kind)):], "_", " ")
}

// Headline is one line: "AI visibility changed: example.com 72 (+12)",
// "Citation rate changed: example.com in Perplexity 12.5% (-27.5 pts)".
func (a Alert) Headline() string {
	h := Title(a.Kind)
	if a.Domain != "" {
		h += ": " + a.Domain
	}
	if a.Engine != "" {
		h += " in " + a.Engine
		if a.Market != "" {
			h += " (" + a.Market + ")"
		}
		if a.CitationRate != nil {
			h += " " + Number(a.CitationRate.Percent(), 1) + "%"
			if a.CitationChange != nil {
				h += " (" + Points(*a.CitationChange) + ")"
			}
		}
	}
	if a.CrawlerErrors != nil {
		h += " " + plural(*a.CrawlerErrors, "error")
		if a.PagesWithErrors != nil {
			h += " on " + plural(int64(*a.PagesWithErrors), "cited page")
		}
	}
	if a.Score != nil {
		h += fmt.Sprintf(" %d", *a.Score)
		if a.ScoreChange != nil && a.PreviousScore != nil {
			h += " (" + Signed(*a.ScoreChange) + ")"
		}
	}
	return h
}

// Signed writes a change with its sign: +12, -3, 0.
func Signed(n int) string {
	if n > 0 {
		return fmt.Sprintf("+%d", n)
	}
	return fmt.Sprint(n)
}

// Fact is one labelled value of an alert.
type Fact struct{ Label, Value string }

// Facts are the alert's values for people, in a stable order.
func (a Alert) Facts() []Fact {
	var fs []Fact
	add := func(l, v string) { fs = append(fs, Fact{l, v}) }
	if a.Domain != "" {
		add("Domain", a.Domain)
	}
	if a.Score != nil {
		v := fmt.Sprintf("%d/100", *a.Score)
		if a.PreviousScore != nil {
			v += fmt.Sprintf(" (%s, was %d)", Signed(*a.ScoreChange), *a.PreviousScore)
		}
		add("Visibility score", v)
	}
	if a.Sentiment != "" {
		v := a.Sentiment
		if a.SentimentScore != nil {
			v += fmt.Sprintf(" (%.2f)", *a.SentimentScore)
		}
		if a.PreviousSentiment != "" && a.PreviousSentiment != a.Sentiment {
			v += ", was " + a.PreviousSentiment
		}
		add("Sentiment", v)
	}
	if a.ReadinessScore != nil {
		add("Readiness score", fmt.Sprintf("%d/100", *a.ReadinessScore))
	}
	if a.Engine != "" {
		v := a.Engine
		if a.EngineKind != "" {
			v += " (" + strings.Join(slices.DeleteFunc([]string{a.EngineKind, a.Surface}, func(s string) bool { return s == "" }), ", ") + ")"
		}
		add("Engine", v)
	}
	if a.Market != "" {
		add("Market", a.Market)
	}
	if a.CitationRate != nil {
		v := a.CitationRate.String()
		if a.PreviousCitationRate != nil {
			v += ", was " + a.PreviousCitationRate.String()
		}
		if a.CitationChange != nil {
			v += ": " + Points(*a.CitationChange)
		}
		add("Citation rate", v)
	}
	if a.SourceShare != nil || a.PreviousSourceShare != nil {
		v := "not reported"
		if a.SourceShare != nil {
			v = a.SourceShare.String()
		}
		if a.PreviousSourceShare != nil {
			v += ", was " + a.PreviousSourceShare.String()
		}
		add("Source share", v)
	}
	if a.OverviewPresence != nil && a.OverviewPresence.Hits < a.OverviewPresence.Of {
		add("AI answer shown", a.OverviewPresence.String())
	}
	if len(a.Engines) > 0 {
		lines := make([]string, len(a.Engines))
		for i, e := range a.Engines {
			lines[i] = e.name() + ": cited in " + e.CitationRate.String()
			if e.SourceShare != nil {
				lines[i] += ", " + Number(e.SourceShare.Percent(), 1) + "% of sources"
			}
			if p := e.OverviewPresence; p != nil && p.Hits < p.Of {
				lines[i] += ", AI answer shown in " + p.String()
			}
		}
		add("Citations by engine", strings.Join(lines, "\n"))
	}
	if a.CrawlerErrors != nil {
		v := plural(*a.CrawlerErrors, "error")
		if a.PagesWithErrors != nil {
			v += " on " + plural(int64(*a.PagesWithErrors), "cited page")
		}
		add("Crawler errors", v)
	}
	if len(a.Days) > 0 {
		add("Days", strings.Join(a.Days, ", "))
	}
	if len(a.ErrorPages) > 0 {
		lines := make([]string, len(a.ErrorPages))
		for i, p := range a.ErrorPages {
			lines[i] = p.Line()
		}
		if a.PagesWithErrors != nil && *a.PagesWithErrors > len(a.ErrorPages) {
			lines = append(lines, fmt.Sprintf("and %d more", *a.PagesWithErrors-len(a.ErrorPages)))
		}
		add("Pages", strings.Join(lines, "\n"))
	}
	if a.ScoreBefore != nil && a.ScoreAfter != nil {
		add("Content score", fmt.Sprintf("%d → %d", *a.ScoreBefore, *a.ScoreAfter))
	}
	if a.URL != "" {
		add("URL", a.URL)
	}
	if a.Spent != nil {
		add("Spent", fmt.Sprintf("$%.2f", *a.Spent))
	}
	if a.Reason != "" {
		add("Reason", a.Reason)
	}
	if a.Message != "" {
		add("Message", a.Message)
	}
	if !a.Time.IsZero() {
		add("When", a.Time.Format("2006-01-02 15:04 MST"))
	}
	return fs
}

// Text is the alert as plain text: the headline and one line per fact.
func (a Alert) Text() string {
	var b strings.Builder
	b.WriteString(a.Headline())
	for _, f := range a.Facts() {
		if f.Label == "Domain" {
			continue
		}
		fmt.Fprintf(&b, "\n%s: %s", f.Label, f.Value)
	}
	return b.String()
}

// Truncate cuts s to at most n characters (runes), marking the cut.
func Truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}
