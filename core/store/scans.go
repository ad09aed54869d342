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
	Attempts   int    // the claims so far; the last claim's number fences its writes
	Holder     string // the process whose worker holds a running scan
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

// ScansTx is the scans' part of a write transaction. A monitored domain
// has at most one active (queued or running) scan: a unique index refuses
// a second (ErrConflict).
type ScansTx interface {
	InsertScan(s Scan) error
	// UpdateScan writes a running scan as the claim that made s.Attempts
	// (a renewed lease, the scan queued again, its end): ErrLost, and
	// nothing written, when the scan is no longer running under that claim.
	UpdateScan(s Scan) error
	// ActiveScan is the queued or running scan of a monitored domain
	// (ErrNotFound when none).
	ActiveScan(domainID string) (Scan, error)
	// LatestScan is Scans.LatestScan in the transaction.
	LatestScan(accountID, clientID, domain string) (Scan, error)
	// ClaimScan takes the oldest queued scan, or a running one whose lease
	// ended before now, and leases it to holder until leaseEnd, adding one to its
	// Attempts (the claim's fencing token); a scan is never claimed by two
	// callers at once (PostgreSQL: FOR UPDATE SKIP LOCKED). ErrNotFound
	// when none.
	ClaimScan(holder string, now, leaseEnd time.Time) (Scan, error)
	// DueDomains lists up to limit monitored domains whose next scan is due
	// at now (one without a next scan is never due), soonest first.
	DueDomains(now time.Time, limit int) ([]DueDomain, error)
}
