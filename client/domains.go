package client

import (
	"encoding/json"
	"time"
)

// CreateDomain is the body of POST /v1/domains.
type CreateDomain struct {
	Domain      string   `json:"domain"`
	Brands      []string `json:"brands,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
	Competitors []string `json:"competitors,omitempty"`
	Topics      []string `json:"topics,omitempty"`
	Prompts     []string `json:"prompts,omitempty"`
	Markets     []Market `json:"markets,omitempty"`
	ClientID    string   `json:"client_id,omitempty"`
}

// Market is where, and in which language, a domain is scanned: an ISO
// 3166-1 alpha-2 country and a BCP 47 language (de, en, zh-Hant).
type Market struct {
	Country  string `json:"country"`
	Language string `json:"language"`
}

// UpdateDomain is the body of PATCH /v1/domains/{id}: a list given
// replaces the list; absent ones keep their values.
type UpdateDomain struct {
	Brands      *[]string `json:"brands,omitempty"`
	Aliases     *[]string `json:"aliases,omitempty"`
	Competitors *[]string `json:"competitors,omitempty"`
	Topics      *[]string `json:"topics,omitempty"`
	Prompts     *[]string `json:"prompts,omitempty"`
	Markets     *[]Market `json:"markets,omitempty"`
}

// MonitoredDomain is a domain the visibility engine scans for its owner.
type MonitoredDomain struct {
	ID          string     `json:"id"`
	Domain      string     `json:"domain"`
	Brands      []string   `json:"brands"`
	Aliases     []string   `json:"aliases"`
	Competitors []string   `json:"competitors"`
	Topics      []string   `json:"topics"`
	Prompts     []string   `json:"prompts"`
	Markets     []Market   `json:"markets"`
	NextScanAt  *time.Time `json:"next_scan_at"`
	LastScanAt  *time.Time `json:"last_scan_at"`
	ClientID    *string    `json:"client_id"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Prompt is a question a scan asks every engine: one of the owner's own,
// or one generated from the domain's topics, competitors and brand.
type Prompt struct {
	Text string `json:"text"`
	// Intent is custom (the default of the owner's own), discovery,
	// comparison or branded.
	Intent string `json:"intent,omitempty"`
}

// PutPrompts is the body of PUT /v1/domains/{id}/prompts: the owner's own
// prompts, replacing those kept.
type PutPrompts struct {
	Prompts []Prompt `json:"prompts"`
}

// DomainPrompts is GET /v1/domains/{id}/prompts: the owner's own prompts
// and the generated ones the next scan asks after them.
type DomainPrompts struct {
	DomainID string   `json:"domain_id"`
	Prompts  []Prompt `json:"prompts"`
	// Generated are what the next scan adds to the owner's prompts, up to
	// the prompt set's size.
	Generated []Prompt `json:"generated"`
	// MaxPrompts is the tier's cap on the owner's own prompts.
	MaxPrompts int `json:"max_prompts"`
	// PromptSetID names the set the next scan asks (a scan's
	// result.prompt_set.id), changing whenever a prompt does.
	PromptSetID string `json:"prompt_set_id"`
}

// RequestScan is the body of POST /v1/visibility/scans.
type RequestScan struct {
	Domain   string `json:"domain"`
	ClientID string `json:"client_id,omitempty"`
}

// Scan is a scan of a monitored domain: queued, running, completed or
// failed, with its result once completed.
type Scan struct {
	ID         string          `json:"id"`
	Domain     string          `json:"domain"`
	DomainID   string          `json:"domain_id"`
	Trigger    string          `json:"trigger"`
	Status     string          `json:"status"`
	Attempts   int             `json:"attempts"`
	Result     json.RawMessage `json:"result"`
	Error      *string         `json:"error"`
	ClientID   *string         `json:"client_id"`
	CreatedAt  time.Time       `json:"created_at"`
	StartedAt  *time.Time      `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
}
