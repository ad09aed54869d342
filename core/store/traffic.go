package store

import (
	"context"
	"time"
)

// The sources an ingest token takes logs from.
const (
	TrafficCloudflare = "cloudflare" // Cloudflare Logpush, HTTP destination
	TrafficVercel     = "vercel"     // Vercel log drains
	TrafficFastly     = "fastly"     // Fastly HTTPS logging
	TrafficFile       = "file"       // combined log files, uploaded
)

// IngestToken lets one log source deliver a monitored domain's logs. Its
// secret is shown once and kept as its SHA-256 (Hash, unique).
type IngestToken struct {
	ID        string
	AccountID string
	ClientID  string // the domain's owner: "" for the account itself
	DomainID  string
	Name      string
	Source    string // TrafficCloudflare, TrafficVercel, TrafficFastly or TrafficFile
	Hash      []byte
	Prefix    string // the secret's first characters, to tell tokens apart
	// SigningSecret is, sealed (secrets.Box) by the caller, the secret a
	// Vercel drain signs its deliveries with (x-vercel-signature); empty
	// for the other sources. The store keeps it as given and leaves it out
	// of an account's export.
	SigningSecret string
	// FastlyServiceID is the Fastly service a fastly token takes logs
	// from (its SHA-256 answers Fastly's challenge); empty otherwise.
	FastlyServiceID string
	CreatedAt       time.Time
	LastUsedAt      *time.Time
	RevokedAt       *time.Time
}

// CrawlerHits are a day's requests of one AI agent, as one verification
// found it, to one page of a monitored domain.
type CrawlerHits struct {
	AccountID string
	DomainID  string
	// Day is a UTC midnight from MinTime up to MaxTime (any zone, the
	// same instant); the engines refuse any other time and give it back
	// in UTC.
	Day time.Time
	// Page is the request's path without its query, at most
	// MaxTrafficPage bytes.
	Page         string
	Agent        string // the catalog's token, e.g. GPTBot
	Verification string // verified, unverified or spoofed
	Hits         int64
	// Status counts the hits by class: [0] 2xx, [1] 3xx, [2] 4xx, [3] 5xx,
	// [4] none (no status: a crashed function, a revalidation).
	Status [5]int64
	Bytes  int64
}

// ReferralVisits are a day's visits to one page of a monitored domain
// that an AI assistant sent (its Referer or utm_source).
type ReferralVisits struct {
	AccountID string
	DomainID  string
	Day       time.Time // a UTC midnight, as CrawlerHits.Day
	Page      string
	Assistant string // e.g. chatgpt, perplexity
	Visits    int64
}

// MaxTrafficPage is the longest page path kept; a longer one is cut.
const MaxTrafficPage = 512

// MalformedLine is a line of a batch that could not be read: where it
// was and why, and an excerpt with its addresses blanked.
type MalformedLine struct {
	Line    int    `json:"line"`
	Reason  string `json:"reason"`
	Excerpt string `json:"excerpt"`
}

// TrafficBatch is one delivery of logs, kept to refuse the same batch
// twice: its content's SHA-256 is unique per domain.
type TrafficBatch struct {
	ID         string
	AccountID  string
	DomainID   string
	TokenID    string // "" for a file imported by the CLI or the API
	Source     string
	Hash       []byte
	Lines      int64
	Malformed  int64
	Samples    []MalformedLine // the first few malformed lines
	ReceivedAt time.Time
	// Then, when not nil, runs in the transaction that keeps a batch the
	// domain did not have yet, after its aggregates: the events it
	// publishes (tx.Publish) commit with the batch, and its error keeps
	// nothing. It does not run for a duplicate. It is never read back.
	Then func(tx Tx) error
}

// TrafficFilter selects a domain's aggregates over days [From, To): a
// day is in when its midnight is at or after From and before To; a zero
// To is no end.
type TrafficFilter struct {
	AccountID string
	DomainID  string
	From, To  time.Time
}

// TrafficTx is the traffic part of a write transaction.
type TrafficTx interface {
	// InsertIngestToken is CreateIngestToken in the transaction.
	InsertIngestToken(t IngestToken) error
}

// Traffic keeps the aggregates of AI crawler visits and AI referrals,
// never a log line, a client address or a query string. Every method
// that names an account and a domain reads or writes that domain only
// when the account owns it: another account's domain is ErrNotFound for
// a write and holds nothing for a read.
type Traffic interface {
	// CreateIngestToken keeps a token of t.AccountID's domain t.DomainID:
	// ErrNotFound when the account has no such domain, ErrConflict for
	// a taken id or hash. A token goes with its domain.
	CreateIngestToken(ctx context.Context, t IngestToken) error
	// IngestTokenByHash finds a token by its secret's hash, revoked ones
	// too (the caller refuses those); ErrNotFound when none.
	IngestTokenByHash(ctx context.Context, hash []byte) (IngestToken, error)
	// ListIngestTokens returns a domain's tokens, revoked ones too,
	// newest first.
	ListIngestTokens(ctx context.Context, accountID, domainID string) ([]IngestToken, error)
	// RevokeIngestToken revokes a token of the account's domain;
	// ErrNotFound for another account's or domain's. Revocation is never
	// postponed: a revoked token keeps the earlier of its RevokedAt and at.
	RevokeIngestToken(ctx context.Context, accountID, domainID, id string, at time.Time) error
	// AddTrafficBatch keeps a batch and adds its aggregates to the
	// domain's, in one transaction: a batch whose Hash the domain already
	// has adds nothing and returns (true, nil), however many callers add
	// it at once, on however many handles. The aggregates count for
	// b.DomainID (their own AccountID and DomainID are not read), each
	// count added to its key's (those of one key in hits or refs add up
	// too). The token's LastUsedAt moves to the batch's ReceivedAt (never
	// back). ErrNotFound when b.AccountID has no domain b.DomainID; a day
	// or a text the store refuses refuses the whole batch. b.Then runs in
	// the transaction of a batch kept.
	AddTrafficBatch(ctx context.Context, b TrafficBatch, hits []CrawlerHits, refs []ReferralVisits) (duplicate bool, err error)
	// ListTrafficBatches returns a domain's latest batches, newest first.
	// A limit of zero or less means 20.
	ListTrafficBatches(ctx context.Context, accountID, domainID string, limit int) ([]TrafficBatch, error)
	// ListCrawlerHits returns the domain's hits of the days f selects,
	// by day, page, agent and verification.
	ListCrawlerHits(ctx context.Context, f TrafficFilter) ([]CrawlerHits, error)
	// ListReferralVisits returns the domain's visits of the days f
	// selects, by day, page and assistant.
	ListReferralVisits(ctx context.Context, f TrafficFilter) ([]ReferralVisits, error)
	// DeleteTrafficBefore deletes every aggregate of a day that ended by
	// day (a day wholly before it: day's own UTC day stays), and the
	// batches received before it, of every domain, in transactions of at
	// most DeleteBatch rows each; it says how many rows went.
	DeleteTrafficBefore(ctx context.Context, day time.Time) (int64, error)
	// CrawlerRanges are the IP range lists that replaced the binary's
	// snapshot (aivis crawlers update, or the configured URL), by name;
	// none when nothing replaced it.
	CrawlerRanges(ctx context.Context) (map[string][]byte, time.Time, error)
	// SaveCrawlerRanges replaces the lists kept, all at once: a reader
	// sees the lists before or after, never some of each.
	SaveCrawlerRanges(ctx context.Context, lists map[string][]byte, at time.Time) error
}
