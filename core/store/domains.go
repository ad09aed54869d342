package store

import (
	"context"
	"time"
)

// MonitoredDomain is a domain an owner monitors: what the visibility
// engine audits and probes, with the names its answers are searched for.
type MonitoredDomain struct {
	ID          string
	AccountID   string
	ClientID    string // "" for the account's own
	Domain      string
	Brands      []string // the brand's names, the main one first
	Aliases     []string
	Competitors []string
	Topics      []string // what the brand is about, for generated prompts
	Prompts     []string // the owner's own prompts
	NextScanAt  time.Time
	LastScanAt  time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DomainFilter selects an owner's monitored domains.
type DomainFilter struct {
	AccountID  string
	ClientID   string
	AllClients bool // the account's and every client's
	Cursor     string
	Limit      int
}

// Domains reads monitored domains outside a write transaction.
type Domains interface {
	MonitoredDomain(ctx context.Context, accountID, id string) (MonitoredDomain, error)
	ListDomains(ctx context.Context, f DomainFilter) ([]MonitoredDomain, string, error)
}
