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
	ClientID       string   `json:"client_id,omitempty"`
}

// UpdateWebhook is the body of PATCH /v1/webhooks/{id}: absent fields keep
// their values.
type UpdateWebhook struct {
	Events         []string `json:"events,omitempty"`
	URL            *string  `json:"url,omitempty"`
	MinScoreChange *int     `json:"min_score_change,omitempty"`
	Enabled        *bool    `json:"enabled,omitempty"`
}

// Webhook is a webhook as the API shows it. Secret is present only in the
// answers to create and rotate.
type Webhook struct {
	ID                      string     `json:"id"`
	Domain                  string     `json:"domain"`
	URL                     string     `json:"url"`
	Events                  []string   `json:"events"`
	MinScoreChange          int        `json:"min_score_change"`
	Enabled                 bool       `json:"enabled"`
	DisabledReason          *string    `json:"disabled_reason"`
	DisabledAt              *time.Time `json:"disabled_at"`
	FailingSince            *time.Time `json:"failing_since"`
	ClientID                *string    `json:"client_id"`
	Secret                  string     `json:"secret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	CreatedAt               time.Time  `json:"created_at"`
	UpdatedAt               time.Time  `json:"updated_at"`
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

// Delivery is one event on its way to one webhook.
type Delivery struct {
	ID            string     `json:"id"`
	WebhookID     string     `json:"webhook_id"`
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

// Attempt is one HTTP request of a delivery.
type Attempt struct {
	N            int       `json:"attempt"`
	At           time.Time `json:"at"`
	StatusCode   *int      `json:"response_status_code"`
	LatencyMS    float64   `json:"latency_ms"`
	ResponseBody string    `json:"response_body"`
	Error        *string   `json:"error"`
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
	Health         ConnectorHealth `json:"health"`
}

// ConnectorHealth is the state of a connector's plugin process.
type ConnectorHealth struct {
	State    string  `json:"state"` // running, restarting, stopped
	Restarts int     `json:"restarts"`
	Problem  *string `json:"problem"`
}
