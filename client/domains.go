package client

import "time"

// CreateDomain is the body of POST /v1/domains.
type CreateDomain struct {
	Domain      string   `json:"domain"`
	Brands      []string `json:"brands,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
	Competitors []string `json:"competitors,omitempty"`
	Topics      []string `json:"topics,omitempty"`
	Prompts     []string `json:"prompts,omitempty"`
	ClientID    string   `json:"client_id,omitempty"`
}

// UpdateDomain is the body of PATCH /v1/domains/{id}: a list given
// replaces the list; absent ones keep their values.
type UpdateDomain struct {
	Brands      *[]string `json:"brands,omitempty"`
	Aliases     *[]string `json:"aliases,omitempty"`
	Competitors *[]string `json:"competitors,omitempty"`
	Topics      *[]string `json:"topics,omitempty"`
	Prompts     *[]string `json:"prompts,omitempty"`
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
	NextScanAt  *time.Time `json:"next_scan_at"`
	LastScanAt  *time.Time `json:"last_scan_at"`
	ClientID    *string    `json:"client_id"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}
