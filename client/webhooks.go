package client

import (
	"encoding/json"
	"time"
)

// RecordReading is the body of POST /v1/visibility.
type RecordReading struct {
	Domain          string     `json:"domain"`
	VisibilityScore *int       `json:"visibility_score"`
	Sentiment       string     `json:"sentiment"`
	SentimentScore  *float64   `json:"sentiment_score,omitempty"`
	MeasuredAt      *time.Time `json:"measured_at,omitempty"`
	ClientID        string     `json:"client_id,omitempty"`
}

// RecordedReading is the answer to POST /v1/visibility: the stored reading
// and the event it caused, if any.
type RecordedReading struct {
	VisibilityReading
	Changed bool    `json:"changed"`
	EventID *string `json:"event_id"`
}

// CreateWebhook is the body of POST /v1/webhooks.
type CreateWebhook struct {
	Domain         string   `json:"domain"`
	Events         []string `json:"events"`
	URL            string   `json:"url,omitempty"`
	MinScoreChange *int     `json:"min_score_change,omitempty"`
	// MinCitationChange: citation_change only when an engine's citation
	// rate moved at least this many percentage points (default 10).
	MinCitationChange *int `json:"min_citation_change,omitempty"`
	// MinCrawlerErrors: crawler_errors only when AI crawlers' error hits
	// on cited pages reach this many (default 1).
	MinCrawlerErrors *int   `json:"min_crawler_errors,omitempty"`
	ClientID         string `json:"client_id,omitempty"`
}

// UpdateWebhook is the body of PATCH /v1/webhooks/{id}: absent fields keep
// their values.
type UpdateWebhook struct {
	Events            []string `json:"events,omitempty"`
	URL               *string  `json:"url,omitempty"`
	MinScoreChange    *int     `json:"min_score_change,omitempty"`
	MinCitationChange *int     `json:"min_citation_change,omitempty"`
	MinCrawlerErrors  *int     `json:"min_crawler_errors,omitempty"`
	Enabled           *bool    `json:"enabled,omitempty"`
}

// Webhook is a webhook as the API shows it. Secret is present only in the
// answers to create and rotate.
type Webhook struct {
	ID                      string     `json:"id"`
	Domain                  string     `json:"domain"`
	URL                     string     `json:"url"`
	Events                  []string   `json:"events"`
	MinScoreChange          int        `json:"min_score_change"`
	MinCitationChange       int        `json:"min_citation_change"`
	MinCrawlerErrors        int        `json:"min_crawler_errors"`
	Enabled                 bool       `json:"enabled"`
	DisabledReason          *string    `json:"disabled_reason"`
	DisabledAt              *time.Time `json:"disabled_at"`
	FailingSince            *time.Time `json:"failing_since"`
	ClientID                *string    `json:"client_id"`
	Secret                  string     `json:"secret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	CreatedAt               time.Time  `json:"created_at"`
	UpdatedAt               time.Time  `json:"updated_at"`
	// DeletedAt is when it was deleted: it is kept, disabled, with its
	// deliveries until they age out; disabled_reason says why.
	DeletedAt *time.Time `json:"deleted_at"`
}

// RotateSecret is the optional body of POST /v1/webhooks/{id}/rotate-secret.
type RotateSecret struct {
	// GracePeriod in seconds during which the old secret signs too
	// (default 86400, at most 604800; 0 ends the old secret at once).
	GracePeriod *int `json:"grace_period,omitempty"`
}

// Replay is the body of POST /v1/webhooks/{id}/replay.
type Replay struct {
	Since time.Time  `json:"since"`
	Until *time.Time `json:"until,omitempty"`
}

// ReplayResult tells how many failed deliveries were scheduled again.
type ReplayResult struct {
	Scheduled int `json:"scheduled"`
}

// WebhookTestResult is the answer to POST /v1/webhooks/{id}/test.
type WebhookTestResult struct {
	EventID string `json:"event_id"`
}

// Delivery is one event on its way to one webhook or connection.
type Delivery struct {
	ID            string     `json:"id"`
	WebhookID     string     `json:"webhook_id,omitempty"`
	ConnectionID  string     `json:"connection_id,omitempty"`
	EventID       string     `json:"event_id"`
	Event         string     `json:"event"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	LastStatus    *int       `json:"last_status_code"`
	LastError     *string    `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	// AttemptLog is present when one delivery is read.
	AttemptLog []Attempt `json:"attempt_log,omitempty"`
}

// Attempt is one attempt of a delivery: an HTTP request to a webhook, or a
// call of a connection's connector.
type Attempt struct {
	N            int       `json:"attempt"`
	At           time.Time `json:"at"`
	StatusCode   *int      `json:"response_status_code"`
	LatencyMS    float64   `json:"latency_ms"`
	ResponseBody string    `json:"response_body"`
	Error        *string   `json:"error"`
	// Result is what a connector answered: delivered, retry, failed, gone,
	// or error (the plugin itself failed). Connections only.
	Result string `json:"result,omitempty"`
}

// ConnectorKind is a connector the server runs, as GET /v1/connectors
// shows it.
type ConnectorKind struct {
	Name           string          `json:"name"`
	Kind           string          `json:"kind"`
	DisplayName    string          `json:"display_name"`
	Description    string          `json:"description"`
	Version        string          `json:"version"`
	SettingsSchema json.RawMessage `json:"settings_schema"`
	SecretFields   []string        `json:"secret_fields"`
	// DestinationFields are the settings that decide where the secret
	// fields are sent: a change of one needs the saved secrets again.
	// Empty: the connector names none, and every change of its settings
	// needs them.
	DestinationFields []string `json:"destination_fields"`
	// Health is the connector's on the instance of the server that
	// answered.
	Health ConnectorHealth `json:"health"`
	// Instances is its health on every instance of the server (each runs
	// every registered connector), by instance name: the one that answered
	// as it is now, each other as of its last report, within the last 30 s.
	Instances []ConnectorInstance `json:"instances"`
}

// ConnectorHealth is the state of a connector's plugin process.
type ConnectorHealth struct {
	// State is starting, running, restarting (it exited or does not
	// start, and is tried again), unavailable (no binary of a registered
	// build here) or stopped; but when running, its deliveries wait.
	State    string `json:"state"`
	Restarts int    `json:"restarts"`
	// Problem says why it does not run, naming no path.
	Problem *string `json:"problem"`
	// Build is the first 8 hex digits of the SHA-256 of the build the
	// instance has of it; nil when it has none.
	Build *string `json:"build"`
}

// ConnectorInstance is a connector's health on one instance of the
// server.
type ConnectorInstance struct {
	// Instance names the server process (it changes when the process
	// restarts).
	Instance string `json:"instance"`
	ConnectorHealth
	CheckedAt time.Time `json:"checked_at"`
}

// CreateConnection is the body of POST /v1/connections.
type CreateConnection struct {
	Connector      string          `json:"connector"`
	Name           string          `json:"name,omitempty"`
	Settings       json.RawMessage `json:"settings"`
	Events         []string        `json:"events"`
	Domains        []string        `json:"domains,omitempty"`
	MinScoreChange *int            `json:"min_score_change,omitempty"`
	// MinCitationChange is as a webhook's (default 10).
	MinCitationChange *int `json:"min_citation_change,omitempty"`
	// MinCrawlerErrors is as a webhook's (default 1).
	MinCrawlerErrors *int   `json:"min_crawler_errors,omitempty"`
	ClientID         string `json:"client_id,omitempty"`
}

// UpdateConnection is the body of PATCH /v1/connections/{id}: only the
// fields given change. Settings is a JSON merge patch of the settings: a
// field left out keeps its value (secrets included), null removes it.
type UpdateConnection struct {
	Name              *string         `json:"name,omitempty"`
	Settings          json.RawMessage `json:"settings,omitempty"`
	Events            []string        `json:"events,omitempty"`
	Domains           *[]string       `json:"domains,omitempty"`
	MinScoreChange    *int            `json:"min_score_change,omitempty"`
	MinCitationChange *int            `json:"min_citation_change,omitempty"`
	MinCrawlerErrors  *int            `json:"min_crawler_errors,omitempty"`
	Enabled           *bool           `json:"enabled,omitempty"`
}

// Connection is a connector configured by an owner: where its events go.
// Settings never show the secret fields; SecretFields names those set.
type Connection struct {
	ID                string          `json:"id"`
	Connector         string          `json:"connector"`
	Name              string          `json:"name"`
	Settings          json.RawMessage `json:"settings"`
	SecretFields      []string        `json:"secret_fields"`
	Events            []string        `json:"events"`
	Domains           []string        `json:"domains"`
	MinScoreChange    int             `json:"min_score_change"`
	MinCitationChange int             `json:"min_citation_change"`
	MinCrawlerErrors  int             `json:"min_crawler_errors"`
	Enabled           bool            `json:"enabled"`
	DisabledReason    *string         `json:"disabled_reason"`
	DisabledAt        *time.Time      `json:"disabled_at"`
	FailingSince      *time.Time      `json:"failing_since"`
	// Source is "api", or "zapier" for a Zapier REST Hook subscription.
	Source    string    `json:"source"`
	ClientID  *string   `json:"client_id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// DeletedAt is when it was deleted (by the account, or by Zapier): it
	// is kept, disabled, with its deliveries until they age out.
	DeletedAt *time.Time `json:"deleted_at"`
}

// ConnectionTestResult is the answer to POST /v1/connections/{id}/test:
// what the connector made of a real test event.
type ConnectionTestResult struct {
	EventID string `json:"event_id"`
	// Result is delivered, retry, failed or gone.
	Result            string   `json:"result"`
	Reason            *string  `json:"reason"`
	RetryAfterSeconds *float64 `json:"retry_after_seconds"`
	LatencyMS         float64  `json:"latency_ms"`
}

// ZapierSubscribe is the body Zapier sends to subscribe a REST Hook.
type ZapierSubscribe struct {
	TargetURL string `json:"target_url"`
	Event     string `json:"event"`
	Domain    string `json:"domain,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
}

// ZapierSubscription is the answer to a subscribe.
type ZapierSubscription struct {
	ID        string    `json:"id"`
	Event     string    `json:"event"`
	Domain    *string   `json:"domain"`
	CreatedAt time.Time `json:"created_at"`
}
