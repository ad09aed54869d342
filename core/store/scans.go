package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
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
	ID        string
	AccountID string
	ClientID  string
	DomainID  string
	Domain    string
	Trigger   string
	Status    string
	Attempts  int // the claims so far; the last claim's number fences its writes
	// HandBacks are the claims handed back by a server that stopped
	// gracefully (UpdateScan writes it): they do not count against the
	// scans' attempts.
	HandBacks  int
	Holder     string // the process whose worker holds a running scan
	LeaseUntil time.Time
	Result     json.RawMessage // when completed
	Error      string          // when failed, or why the last attempt failed
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
}

// ScanAnswer is one answer of a completed scan, or a probe that failed,
// kept with the scan as the evidence of its figures until the retention
// of answers forgets it.
type ScanAnswer struct {
	ScanID string
	Seq    int // its place among the scan's answers, from 0
	// PromptIndex is the prompt's place in the scan's prompt set; Prompt
	// and Intent, the prompt itself.
	PromptIndex int
	Prompt      string
	Intent      string
	Run         int    // which of the prompt's runs on the engine, from 0
	Engine      string // the engine's label
	Kind        string // the engine's kind
	// Market is the market the prompt was asked in, as its language and
	// country ("de-DE"); "" when the scan asked none.
	Market string
	Text   string
	Error  string // a failed probe's: no answer
	// SourcesReported says whether the engine reported its sources.
	SourcesReported bool
	Mentioned       bool
	Cited           bool
	Position        int // the brand's rank among the brands named; 0 when not named
	// Detail is the rest of the answer, JSON the store keeps as given: its
	// sources, citations, queries and the sentences that name the brand.
	Detail     json.RawMessage
	RecordedAt time.Time // when the scan that found it ended
}

// AnswerFilter selects a page of one scan's answers. A nil pointer and an
// empty string match any.
type AnswerFilter struct {
	AccountID string
	ScanID    string
	Engine    string
	Market    string // the answers of one market ("de-DE"; "" any)
	Prompt    *int   // PromptIndex
	Mentioned *bool
	Cited     *bool
	// Query matches the answers whose Text contains it, case-insensitively
	// (letters of every script: SQLite folds them as Go's
	// strings.ToLower does, PostgreSQL as ICU's root locale does).
	Query  string
	Cursor string
	Limit  int
}

// ScanFilter selects the completed scans of one owner's domain: ClientID
// "" is the account's own.
type ScanFilter struct {
	AccountID string
	ClientID  string
	Domain    string
	Cursor    string
	Limit     int
}

// AnswerCursor is the cursor of the page after the answer seq; AnswerSeq
// reads it back (ErrMalformed for what it did not make, another writing
// of the same number included).
func AnswerCursor(seq int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("seq:" + strconv.Itoa(seq)))
}

func AnswerSeq(cursor string) (int, error) {
	b, _ := base64.RawURLEncoding.DecodeString(cursor)
	digits, _ := strings.CutPrefix(string(b), "seq:")
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || AnswerCursor(n) != cursor {
		return 0, ErrMalformed
	}
	return n, nil
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
	// ListScans reads a page of the completed scans of exactly one owner's
	// domain, the last finished first (then by id, highest first), and the
	// next page's cursor ("" on the last).
	ListScans(ctx context.Context, f ScanFilter) ([]Scan, string, error)
	// LatestScans finds, in one query, the last completed scan of each of
	// an account's monitored domains (by id), each of the domain's own
	// owner; a domain without one is absent from the map.
	LatestScans(ctx context.Context, accountID string, domainIDs []string) (map[string]Scan, error)
	// ListScanAnswers returns one page of a scan's answers that match the
	// filter, by Seq, and the next page's cursor ("" on the last); another
	// account's scan has none.
	ListScanAnswers(ctx context.Context, f AnswerFilter) ([]ScanAnswer, string, error)
	// PruneScanAnswers forgets, oldest first, at most limit answers
	// recorded before t, in one short write transaction, and says how many
	// went (a number under limit: none is left).
	PruneScanAnswers(ctx context.Context, t time.Time, limit int) (int, error)
	// ScansAround returns the completed scans of exactly one owner's
	// domain around w.At: the last w.Before that finished before it and
	// the first w.After that finished at or after it, each list in the
	// order they finished (then by id), without their results (Result
	// nil: not read).
	ScansAround(ctx context.Context, w ScanWindows) (before, after []Scan, err error)
	// ScanEngines finds, in one query, the engines that gave at least one
	// kept answer (a failed probe is none) in each of an account's scans,
	// each scan's sorted; a scan without one (its answers failed or
	// forgotten), and another account's, is absent from the map.
	ScanEngines(ctx context.Context, accountID string, scanIDs []string) (map[string][]string, error)
	// AnswerFacts returns, in one query, the kept answers of an account's
	// scans, failed probes left out, by scan and then Seq, each without
	// its Text (not read: what an answer found is in its other fields);
	// another account's scans have none.
	AnswerFacts(ctx context.Context, accountID string, scanIDs []string) ([]ScanAnswer, error)
}

// ScanWindows selects the completed scans of one owner's domain (ClientID
// "" is the account's own) around a time: at most Before scans that
// finished before At, at most After that finished at or after it.
type ScanWindows struct {
	AccountID string
	ClientID  string
	Domain    string
	At        time.Time
	Before    int
	After     int
}

// ScansTx is the scans' part of a write transaction. A monitored domain
// has at most one active (queued or running) scan: a unique index refuses
// a second (ErrConflict).
type ScansTx interface {
	InsertScan(s Scan) error
	// UpdateScan writes a running scan as the claim that made s.Attempts
	// (a renewed lease, the scan queued again and its HandBacks, its
	// end): ErrLost, and
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
	// InsertScanAnswers adds answers of a scan; (ScanID, Seq) is unique
	// and the scan must exist (ErrConflict).
	InsertScanAnswers(answers []ScanAnswer) error
}
