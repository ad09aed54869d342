package client

import (
	"encoding/json"
	"time"
)

// The types below are the v1 wire format, shared by the server and this
// client so that both speak exactly the same shapes. docs/api.md and
// openapi.json describe them field by field.

// Envelope wraps every success on the key-and-secret interface (/api/v1/ai).
type Envelope[T any] struct {
	Success bool `json:"success"`
	Data    T    `json:"data"`
}

// ErrorEnvelope is every failure, on both interfaces.
type ErrorEnvelope struct {
	Success bool        `json:"success"`
	Error   ErrorDetail `json:"error"`
}

// ErrorDetail is the error object of a failure.
type ErrorDetail struct {
	Code       string       `json:"code"`
	Message    string       `json:"message"`
	RequestID  string       `json:"request_id"`
	RetryAfter *int         `json:"retry_after,omitempty"`
	Details    []FieldError `json:"details,omitempty"`
}

// FieldError names a field of the request that breaks a rule.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// List is one page of a list operation. NextCursor, passed as the cursor
// parameter, gives the next page; it is null on the last page.
type List[T any] struct {
	Items      []T     `json:"items"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// BudgetStatus is the answer of GET /api/v1/ai/budget-status. The first four
// fields are those of the service specification; Budget and ActiveRequests
// are aivis's additions.
type BudgetStatus struct {
	QuotaTier      string         `json:"quota_tier"`
	RateLimits     RateLimits     `json:"rate_limits"`
	Usage          RequestUsage   `json:"usage"`
	Remaining      Remaining      `json:"remaining"`
	Resets         Resets         `json:"resets"`
	Budget         Budget         `json:"budget"`
	ActiveRequests ActiveRequests `json:"active_requests"`
	AccountID      string         `json:"account_id"`
	ClientID       *string        `json:"client_id"`
}

// RateLimits are the tier's request limits per window.
type RateLimits struct {
	PerMinute int `json:"per_minute"`
	PerHour   int `json:"per_hour"`
	PerDay    int `json:"per_day"`
}

// RequestUsage counts the account's requests in the current windows,
// the current request included.
type RequestUsage struct {
	RequestsToday      int `json:"requests_today"`
	RequestsThisHour   int `json:"requests_this_hour"`
	RequestsThisMinute int `json:"requests_this_minute"`
}

// Remaining is each window's limit minus its usage.
type Remaining struct {
	Today      int `json:"today"`
	ThisHour   int `json:"this_hour"`
	ThisMinute int `json:"this_minute"`
}

// Resets gives, as Unix timestamps, when each window ends.
type Resets struct {
	Minute int64 `json:"minute"`
	Hour   int64 `json:"hour"`
	Day    int64 `json:"day"`
}

// Budget is the account's budget for the current UTC calendar month.
type Budget struct {
	Currency      string    `json:"currency"`
	Month         string    `json:"month"`
	MonthlyLimit  USD       `json:"monthly_limit"`
	Spent         USD       `json:"spent"`
	Reserved      USD       `json:"reserved"`
	Committed     USD       `json:"committed"`
	Remaining     USD       `json:"remaining"`
	MaxPerRequest USD       `json:"max_per_request"`
	ResetsAt      time.Time `json:"resets_at"`
}

// ActiveRequests counts content requests that are queued or processing.
type ActiveRequests struct {
	Limit   int `json:"limit"`
	Current int `json:"current"`
}

// Content request states.
const (
	StatusQueued     = "queued"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Content request types.
const (
	TypeOptimize = "optimize"
	TypeAnalyze  = "analyze"
)

// CreateContentRequest is the body of POST /api/v1/ai/content-requests.
type CreateContentRequest struct {
	Domain        string            `json:"domain"`
	Budget        USD               `json:"budget"`
	URL           string            `json:"url,omitempty"`
	Content       string            `json:"content,omitempty"`
	TargetQueries []string          `json:"target_queries,omitempty"`
	Type          string            `json:"type,omitempty"`
	ClientID      string            `json:"client_id,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

// ContentRequest is a request to analyse and optimize content for AI answers,
// with the budget it may spend. Content is left out of list pages.
type ContentRequest struct {
	ID            string            `json:"id"`
	Status        string            `json:"status"`
	Step          *string           `json:"step"` // the step processing is at; null until it starts
	Type          string            `json:"type"`
	Domain        string            `json:"domain"`
	URL           *string           `json:"url"`
	Content       *string           `json:"content,omitempty"`
	TargetQueries []string          `json:"target_queries"`
	ClientID      *string           `json:"client_id"`
	Currency      string            `json:"currency"`
	Budget        USD               `json:"budget"`
	Spent         USD               `json:"spent"`
	Reserved      USD               `json:"reserved"`
	Metadata      map[string]string `json:"metadata"`
	FailureReason *string           `json:"failure_reason"`
	Result        json.RawMessage   `json:"result"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`
	StartedAt     *time.Time        `json:"started_at"`
	EndedAt       *time.Time        `json:"ended_at"`
}

// Severities of a finding, of a site's readiness audit or of a content
// analysis.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Sentiment labels of a visibility reading.
const (
	SentimentPositive = "positive"
	SentimentNeutral  = "neutral"
	SentimentNegative = "negative"
	SentimentMixed    = "mixed"
)

// VisibilityReading is how AI systems saw a domain at one moment.
type VisibilityReading struct {
	Domain          string    `json:"domain"`
	VisibilityScore int       `json:"visibility_score"`
	Sentiment       string    `json:"sentiment"`
	SentimentScore  float64   `json:"sentiment_score"`
	MeasuredAt      time.Time `json:"measured_at"`
	Source          string    `json:"source"`
	ClientID        *string   `json:"client_id"`
	// FormulaVersion is the version of the score's formula a scan computed
	// the reading with; null for readings of other sources.
	FormulaVersion *int `json:"formula_version"`
	// Market is the market of a market's reading (history with market=):
	// the score of a scan's answers in that market, with its readiness.
	Market *Market `json:"market,omitempty"`
}

// VisibilityStatus is GET /v1/visibility: the latest reading and how the
// score moved over 7 and 30 days.
type VisibilityStatus struct {
	VisibilityReading
	Trend VisibilityTrend `json:"trend"`
	// LastScan is the domain's last completed scan, with the breakdown its
	// reading stands on; null when it was never scanned.
	LastScan *ScanSummary `json:"last_scan"`
}

// ScanSummary is a completed scan in a visibility status.
type ScanSummary struct {
	ID             string          `json:"id"`
	FinishedAt     time.Time       `json:"finished_at"`
	ReadinessScore int             `json:"readiness_score"`
	Breakdown      json.RawMessage `json:"breakdown"`
}

// VisibilityTrend compares the latest score with the reading as of 7 and
// 30 days before it; null where there was none yet.
type VisibilityTrend struct {
	Days7  *TrendPoint `json:"7d"`
	Days30 *TrendPoint `json:"30d"`
}

// TrendPoint is an earlier reading and the change since.
type TrendPoint struct {
	VisibilityScore int       `json:"visibility_score"`
	Change          int       `json:"change"`
	MeasuredAt      time.Time `json:"measured_at"`
}
