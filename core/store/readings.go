package store

import (
	"context"
	"fmt"
	"time"
)

// Reading is one visibility reading of a domain.
type Reading struct {
	ID              int64
	AccountID       string
	ClientID        string
	Domain          string
	VisibilityScore int
	Sentiment       string
	SentimentScore  float64
	Source          string
	MeasuredAt      time.Time
	// FormulaVersion is the version of the visibility score's formula a
	// scan computed the reading with; 0 (kept as none) for readings of
	// other sources.
	FormulaVersion int
}

// ReadingFilter selects readings: ClientID scopes to one client when set.
type ReadingFilter struct {
	AccountID string
	ClientID  string
	Domain    string
	// AtOrBefore, when set, bounds measured_at: the latest reading as of
	// that moment.
	AtOrBefore time.Time
}

// Readings reads and writes visibility readings. Outside a transaction a
// filter without ClientID reads the account and every client of it (the
// newest reading of any owner); with one, that client's only. Readings
// are ordered newest measured first, then by id, highest first: ids grow
// with each reading added. The store refuses a score outside 0..100, a
// sentiment score outside -1..1, a negative formula version and an unknown
// account.
type Readings interface {
	// AddReading adds a reading in a transaction of its own.
	AddReading(ctx context.Context, r Reading) (Reading, error)
	// LatestReading is the newest reading of the filter's domain, measured
	// at AtOrBefore or earlier when that is set (ErrNotFound when none).
	LatestReading(ctx context.Context, f ReadingFilter) (Reading, error)
	// LatestReadings finds, in one query, the newest n readings (at least
	// one) of each of an account's monitored domains (by id), each of the
	// domain's own owner, newest measured first; a domain without readings
	// is absent from the map.
	LatestReadings(ctx context.Context, accountID string, domainIDs []string, n int) (map[string][]Reading, error)
	// ListReadings returns one page of a domain's readings, newest
	// measured first, and the next page's cursor ("" on the last).
	ListReadings(ctx context.Context, f ReadingFilter, cursor string, limit int) ([]Reading, string, error)
}

// NewerThan reports whether r is newer than o as LatestReading orders
// readings: measured later, or at the same time and added after.
func (r Reading) NewerThan(o Reading) bool {
	return r.MeasuredAt.After(o.MeasuredAt) || (r.MeasuredAt.Equal(o.MeasuredAt) && r.ID > o.ID)
}

// ReadingsTx is the readings part of a write transaction.
type ReadingsTx interface {
	// LatestReading is the newest reading of exactly one owner (ClientID ""
	// is the account's own) for a domain.
	LatestReading(f ReadingFilter) (Reading, error)
	// InsertReading adds a reading and returns it with its id.
	InsertReading(r Reading) (Reading, error)
	// InsertReadings adds readings, in their order, as InsertReading
	// would one after another, and returns them with their ids and, for
	// each, the newest reading its owner had of its domain before any of
	// them was added (ID 0: none). It is how readings that arrive
	// together are written: on PostgreSQL the owners' latest are read
	// and the rows written in one round trip.
	InsertReadings(rs []Reading) (added, before []Reading, err error)
}

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
	Prompts     []Prompt // the owner's own prompts, in order
	// Markets are where and in which language the domain is scanned,
	// each as its language and country ("de-DE", "zh-Hant-TW"), in
	// order; none: the engines' own default.
	Markets    []string
	NextScanAt time.Time
	LastScanAt time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Prompt is one of an owner's own prompts, with its intent tag.
type Prompt struct {
	Text   string
	Intent string
}

// SplitPrompts gives the texts and the intents of prompts as two lists,
// as engines keep them (the texts are the domain's prompts list of
// before intents).
func SplitPrompts(ps []Prompt) (texts, intents []string) {
	texts, intents = make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		texts[i], intents[i] = p.Text, p.Intent
	}
	return texts, intents
}

// JoinPrompts is SplitPrompts undone; lists of different lengths are an
// error.
func JoinPrompts(texts, intents []string) ([]Prompt, error) {
	if len(texts) != len(intents) {
		return nil, fmt.Errorf("store: %d prompts with %d intents", len(texts), len(intents))
	}
	ps := make([]Prompt, len(texts))
	for i := range texts {
		ps[i] = Prompt{Text: texts[i], Intent: intents[i]}
	}
	return ps, nil
}

// DomainFilter selects an owner's monitored domains.
type DomainFilter struct {
	AccountID  string
	ClientID   string // "" with AllClients false: the account's own only
	AllClients bool   // the account's and every client's
	Cursor     string
	Limit      int
}

// Domains reads monitored domains outside a write transaction.
type Domains interface {
	MonitoredDomain(ctx context.Context, accountID, id string) (MonitoredDomain, error)
	// ListDomains returns one page of an owner's domains, newest first
	// (then by id, highest first), and the next page's cursor.
	ListDomains(ctx context.Context, f DomainFilter) ([]MonitoredDomain, string, error)
}

// DomainsTx is the monitored domains' part of a write transaction. An
// owner monitors a domain once (a unique index: ErrConflict), the account
// and each client apart. The cap of an account's domains is CountDomains
// then InsertDomain in one Update. Another account's domain is
// ErrNotFound to read, update and delete.
type DomainsTx interface {
	InsertDomain(d MonitoredDomain) error
	MonitoredDomain(accountID, id string) (MonitoredDomain, error)
	// UpdateDomain writes the lists, the scan times and UpdatedAt; the
	// owner, the name and CreatedAt stay.
	UpdateDomain(d MonitoredDomain) error
	DeleteDomain(accountID, id string) error
	// CountDomains counts an account's domains, its clients' included.
	CountDomains(accountID string) (int, error)
}
