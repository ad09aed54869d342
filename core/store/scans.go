package store

import (
	"context"
	"encoding/json"
	"time"
)

// Scan states and triggers.
const (
	ScanQueued    = "queued"
	ScanRunning   = "running"
	ScanCompleted = "completed"
	ScanFailed    = "failed"

	ScanScheduled = "scheduled"
	ScanManual    = "manual"
)

// Scan is one scan of a monitored domain, a job of the durable queue.
type Scan struct {
	ID         string
	AccountID  string
	ClientID   string
	DomainID   string
	Domain     string
	Trigger    string
	Status     string
	Attempts   int
	LeaseUntil time.Time
	Result     json.RawMessage // when completed
	Error      string          // when failed, or why the last attempt failed
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
}

// DueDomain is a monitored domain whose scheduled scan is due, with its
// account's tier.
type DueDomain struct {
	MonitoredDomain
	Tier string
}

// Scans reads scans outside a write transaction.
type Scans interface {
	Scan(ctx context.Context, accountID, id string) (Scan, error)
	// LatestScan is the last completed scan of an owner's domain
	// (clientID "" for the account's own).
	LatestScan(ctx context.Context, accountID, clientID, domain string) (Scan, error)
}
