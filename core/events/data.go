package events

import (
	"time"

	"github.com/aivis/aivis/client"
)

// VisibilityChangeData is the data of ai_visibility_change: the new reading
// and the one it replaced (null for the first reading of a domain).
type VisibilityChangeData struct {
	Domain                  string    `json:"domain"`
	VisibilityScore         int       `json:"visibility_score"`
	Sentiment               string    `json:"sentiment"`
	SentimentScore          float64   `json:"sentiment_score"`
	MeasuredAt              time.Time `json:"measured_at"`
	Source                  string    `json:"source"`
	PreviousVisibilityScore *int      `json:"previous_visibility_score"`
	PreviousSentiment       *string   `json:"previous_sentiment"`
	PreviousSentimentScore  *float64  `json:"previous_sentiment_score"`
	PreviousMeasuredAt      *string   `json:"previous_measured_at"`
	ScoreChange             *int      `json:"score_change"`
	ClientID                *string   `json:"client_id"`
}

// ContentRequestData is the data of content_request_created,
// content_request_failed and content_request_cancelled.
type ContentRequestData struct {
	ID            string     `json:"id"`
	Status        string     `json:"status"`
	Type          string     `json:"type"`
	Domain        string     `json:"domain"`
	URL           *string    `json:"url"`
	Budget        client.USD `json:"budget"`
	Spent         client.USD `json:"spent"`
	FailureReason *string    `json:"failure_reason"`
	ClientID      *string    `json:"client_id"`
}

// ContentOptimizedData is the data of content_optimized.
type ContentOptimizedData struct {
	ID          string     `json:"id"`
	Domain      string     `json:"domain"`
	URL         *string    `json:"url"`
	Spent       client.USD `json:"spent"`
	ScoreBefore int        `json:"score_before"`
	ScoreAfter  int        `json:"score_after"`
	ClientID    *string    `json:"client_id"`
}

// ScanCompletedData is the data of scan_completed. The citation figures
// are the scan's (overall) and each engine's; CitationRate is nil, and
// Engines empty, for a scan that asked no engine.
type ScanCompletedData struct {
	ScanID          string `json:"scan_id"`
	Domain          string `json:"domain"`
	VisibilityScore int    `json:"visibility_score"`
	Sentiment       string `json:"sentiment"`
	ReadinessScore  int    `json:"readiness_score"`
	CitationRate    *Rate  `json:"citation_rate"`
	SourceShare     *Rate  `json:"source_share"`
	// OverviewPresence is the answers whose surface showed an AI answer
	// at all, of the answers (nil for a scan that asked no engine).
	OverviewPresence *Rate             `json:"overview_presence"`
	Engines          []EngineCitations `json:"engines"`
	ClientID         *string           `json:"client_id"`
}

// Market is where, and in which language, a prompt was asked.
type Market struct {
	Country  string `json:"country"`
	Language string `json:"language"`
}

// Rate is a proportion as events carry it: Hits of Of, and their ratio
// (0 when Of is 0).
type Rate struct {
	Value float64 `json:"value"`
	Hits  int     `json:"hits"`
	Of    int     `json:"of"`
}

// EngineCitations are one engine's citation figures in a scan: the
// answers that cite the domain, and the domain's share of the sources
// cited (nil when no answer of the engine reported sources).
type EngineCitations struct {
	Label string `json:"label"`
	Kind  string `json:"kind"`
	// Surface is the engine's (model, search_api or serp); Market the
	// market of these figures (nil: the scan asked none).
	Surface          string  `json:"surface"`
	Market           *Market `json:"market"`
	CitationRate     Rate    `json:"citation_rate"`
	SourceShare      *Rate   `json:"source_share"`
	OverviewPresence Rate    `json:"overview_presence"`
}

// CitationChangeData is the data of citation_change: one engine's
// citation figures in a scan beside those of the domain's previous scan.
// CitationChange is the change of the citation rate in percentage points,
// signed, to the hundredth.
type CitationChangeData struct {
	Domain               string  `json:"domain"`
	Engine               string  `json:"engine"`
	Kind                 string  `json:"kind"`
	Surface              string  `json:"surface"`
	Market               *Market `json:"market"`
	CitationRate         Rate    `json:"citation_rate"`
	PreviousCitationRate Rate    `json:"previous_citation_rate"`
	CitationChange       float64 `json:"citation_change"`
	SourceShare          *Rate   `json:"source_share"`
	PreviousSourceShare  *Rate   `json:"previous_source_share"`
	ScanID               string  `json:"scan_id"`
	PreviousScanID       string  `json:"previous_scan_id"`
	ClientID             *string `json:"client_id"`
}

// MaxCrawlerErrorPages is the most pages a crawler_errors names: those
// with the most error hits (PagesWithErrors counts them all).
const MaxCrawlerErrorPages = 20

// CrawlerErrorsData is the data of crawler_errors: AI agents (verified or
// unverified, never spoofed) answered 4xx or 5xx, in one batch of logs,
// on pages that the engines' answers cite in the domain's latest
// completed scan. Errors counts the error hits on every such page.
type CrawlerErrorsData struct {
	Domain          string              `json:"domain"`
	Days            []string            `json:"days"` // the batch's days with errors, YYYY-MM-DD, in order
	ScanID          string              `json:"scan_id"`
	Errors          int64               `json:"errors"`
	PagesWithErrors int                 `json:"pages_with_errors"`
	Pages           []CrawlerErrorsPage `json:"pages"`
	ClientID        *string             `json:"client_id"`
}

// CrawlerErrorsPage is one cited page of a crawler_errors: its error
// hits, by agent and status class, and the engines whose answers cite it.
type CrawlerErrorsPage struct {
	Path    string                `json:"path"`
	Errors  int64                 `json:"errors"`
	Agents  []CrawlerErrorsAgent  `json:"agents"`
	CitedBy []CrawlerErrorsEngine `json:"cited_by"`
}

// CrawlerErrorsAgent is one agent's error hits on a page, as one
// verification found it (verified or unverified).
type CrawlerErrorsAgent struct {
	Agent        string `json:"agent"`
	Verification string `json:"verification"`
	Status4xx    int64  `json:"status_4xx"`
	Status5xx    int64  `json:"status_5xx"`
}

// CrawlerErrorsEngine is an engine whose answers cite a page, and how
// many of them.
type CrawlerErrorsEngine struct {
	Engine  string `json:"engine"`
	Answers int    `json:"answers"`
}

// WebhookTestData is the data of webhook_test.
type WebhookTestData struct {
	WebhookID    *string `json:"webhook_id"`    // null for a connection's test
	ConnectionID *string `json:"connection_id"` // null for a webhook's test
	Domain       string  `json:"domain"`
	Message      string  `json:"message"`
}

// WebhookDisabledData is the data of webhook_disabled.
type WebhookDisabledData struct {
	WebhookID    string     `json:"webhook_id"`
	Domain       string     `json:"domain"`
	URL          string     `json:"url"`
	Reason       string     `json:"reason"`
	DisabledAt   time.Time  `json:"disabled_at"`
	FailingSince *time.Time `json:"failing_since"`
}

// ConnectionDisabledData is the data of connection_disabled.
type ConnectionDisabledData struct {
	ConnectionID string     `json:"connection_id"`
	Connector    string     `json:"connector"`
	Name         string     `json:"name"`
	Reason       string     `json:"reason"`
	DisabledAt   time.Time  `json:"disabled_at"`
	FailingSince *time.Time `json:"failing_since"`
	ClientID     *string    `json:"client_id"`
}

// Optional is nil for "", else a pointer to s: absent values are null.
func Optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// LiftMeasuredData is the data of lift_measured: a change's window after
// it filled (the default scans after the change brought answers) and its
// lift was measured, once. Measures are the headline figures over every
// engine; GET /v1/domains/{domain_id}/changes/{id}/lift gives the rest.
type LiftMeasuredData struct {
	Domain   string        `json:"domain"`
	Change   LiftChange    `json:"change"`
	Scans    int           `json:"scans"` // the window on each side
	Targeted bool          `json:"targeted"`
	Measures []LiftMeasure `json:"measures"`
	ClientID *string       `json:"client_id"`
}

// LiftChange is the change a lift_measured is of.
type LiftChange struct {
	ID               string    `json:"id"`
	DomainID         string    `json:"domain_id"`
	Title            string    `json:"title"`
	At               time.Time `json:"at"`
	Pages            []string  `json:"pages"`
	Prompts          []string  `json:"prompts"`
	ContentRequestID *string   `json:"content_request_id"`
}

// LiftMeasure is one measure's lift over every engine: the difference
// after − before (of the targeted prompts when the change targets some)
// and, when targeted, the difference-in-differences against the others.
type LiftMeasure struct {
	Metric string      `json:"metric"`
	Lift   LiftFigure  `json:"lift"`
	DiD    *LiftFigure `json:"did"`
}

// LiftFigure is a difference with its 95% interval (status ok), or
// insufficient_data with the reason and no figure (estimate and interval
// null).
type LiftFigure struct {
	Status   string        `json:"status"`
	Reason   *string       `json:"reason"`
	Estimate *float64      `json:"estimate"`
	Interval *LiftInterval `json:"interval_95"`
}

// LiftInterval is a 95% confidence interval.
type LiftInterval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}
