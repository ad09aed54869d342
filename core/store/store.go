// Package store holds aivis's records and the interfaces its services need
// from a storage engine. store/sqlite is the embedded engine; another engine
// (PostgreSQL, say) implements the same interfaces.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Sentinel errors callers branch on.
var (
	ErrNotFound  = errors.New("store: not found")
	ErrConflict  = errors.New("store: conflict")
	ErrMalformed = errors.New("store: malformed cursor")
)

// Account types.
const (
	AccountStandard = "standard"
	AccountAgency   = "agency"
)

// Account is a customer of aivis.
type Account struct {
	ID        string
	Name      string
	Tier      string // a limits.Tier name
	Type      string // AccountStandard or AccountAgency
	CreatedAt time.Time
}

// Client is one of an agency account's clients.
type Client struct {
	ID        string
	AccountID string
	Name      string
	CreatedAt time.Time
}

// Key is an API key record. The key and secret themselves are never stored:
// only their SHA-256 hashes and a display hint.
type Key struct {
	ID         string
	AccountID  string
	ClientID   string // empty for an account-level key
	Name       string
	KeyHash    []byte
	SecretHash []byte
	Hint       string
	Scopes     []string
	ExpiresAt  time.Time // zero: never
	RevokedAt  time.Time // zero: not revoked
	CreatedAt  time.Time
	LastUsedAt time.Time
}

// Principal is a key with its account, as authentication needs it.
type Principal struct {
	Key     Key
	Account Account
}

// ContentRequest is stored as the API shows it; amounts are micro-dollars.
type ContentRequest struct {
	ID            string
	AccountID     string
	ClientID      string
	KeyID         string
	Type          string
	Status        string
	Domain        string
	URL           string
	Content       string
	TargetQueries []string
	Metadata      map[string]string
	Budget        int64
	Spent         int64
	BudgetMonth   string // YYYY-MM of the month its budget is committed to
	FailureReason string
	Result        []byte // JSON, nil until processed
	// Step is the step a processing request is at ("" while queued).
	Step string
	// Attempts counts the claims of the request by a worker (each claim's
	// number is its identity: it never goes down); HandBacks, the claims
	// handed back by a server that stopped gracefully; LeaseUntil is when
	// a processing request's claim ends unless renewed.
	Attempts   int
	HandBacks  int
	LeaseUntil time.Time
	// Work is what the paid steps produced so far (JSON, the content
	// engine's), so that a retry pays for no step twice.
	Work      []byte
	CreatedAt time.Time
	UpdatedAt time.Time
	StartedAt time.Time
	EndedAt   time.Time
}

// ContentFilter selects content requests for a list page. Empty fields do
// not filter. ClientID "" with AnyClient false would mean account-level only;
// callers scope with ClientID set for client keys.
type ContentFilter struct {
	AccountID string
	ClientID  string // "": the account's and every client's
	Status    string
	Domain    string
	Limit     int
	Cursor    string
}

// BudgetMonth is an account's budget ledger for one UTC calendar month.
type BudgetMonth struct {
	Spent    int64
	Reserved int64
}

// Idempotency is a stored response to a request made with an Idempotency-Key.
type Idempotency struct {
	Scope       string // account and client the key belongs to
	Key         string
	RequestHash []byte
	Status      int
	Body        []byte
	CreatedAt   time.Time
}

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

// Window is a persisted rate-limit window count.
type Window struct {
	AccountID string
	Window    string // "minute", "hour" or "day"
	Start     time.Time
	Count     int64
}

// KeyUsage is a number of requests made with one key in one UTC hour.
type KeyUsage struct {
	KeyID     string
	AccountID string
	ClientID  string
	Hour      time.Time
	Count     int64
	LastUsed  time.Time
}

// Store is everything the services need from a storage engine.
type Store interface {
	Accounts
	Keys
	Content
	Readings
	Counters
	Webhooks
	Plugins
	Domains
	Scans

	// DeleteIdempotencyBefore forgets idempotency records made before t.
	DeleteIdempotencyBefore(ctx context.Context, t time.Time) (int64, error)

	// Update runs fn in one write transaction: all of it commits or none.
	Update(ctx context.Context, fn func(Tx) error) error
	Close() error
}

// Accounts reads and writes accounts and agency clients.
type Accounts interface {
	CreateAccount(ctx context.Context, a Account) error
	Account(ctx context.Context, id string) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	SetTier(ctx context.Context, id, tier string) error
	CreateClient(ctx context.Context, c Client) error
	Client(ctx context.Context, accountID, id string) (Client, error)
	ListClients(ctx context.Context, accountID string) ([]Client, error)
}

// Keys reads and writes API keys.
type Keys interface {
	CreateKey(ctx context.Context, k Key) error
	// PrincipalByKeyHash finds a key, revoked or not, with its account:
	// of the key, what authentication reads (its id, account, client,
	// secret hash, scopes, expiry and revocation), not its name, hint,
	// hashes or times of creation and last use.
	PrincipalByKeyHash(ctx context.Context, hash []byte) (Principal, error)
	Key(ctx context.Context, id string) (Key, error)
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	// RevokeKey sets the key's revocation time to the earlier of at and
	// the time it has, so that a revocation is never postponed.
	RevokeKey(ctx context.Context, id string, at time.Time) (Key, error)
}

// Content reads content requests outside a write transaction.
type Content interface {
	ContentRequest(ctx context.Context, accountID, id string) (ContentRequest, error)
	// ContentRequestClaim reads only a request's status and attempts (not
	// its content, result or work): what the engine checks every second
	// of a processing request to notice a cancel or a takeover.
	ContentRequestClaim(ctx context.Context, accountID, id string) (status string, attempts int, err error)
	// ListContentRequests returns a page newest first and the cursor of the
	// next page ("" on the last).
	ListContentRequests(ctx context.Context, f ContentFilter) ([]ContentRequest, string, error)
	// Budget reads an account's ledger for a month (zero when untouched)
	// and how many of its requests are active, at one moment.
	Budget(ctx context.Context, accountID, month string) (BudgetMonth, int, error)
}

// Readings reads and writes visibility readings.
type Readings interface {
	AddReading(ctx context.Context, r Reading) (Reading, error)
	LatestReading(ctx context.Context, f ReadingFilter) (Reading, error)
	// LatestReadings finds, in one query, the newest reading of each of an
	// account's monitored domains (by id), each of the domain's own owner;
	// a domain without readings is absent from the map.
	LatestReadings(ctx context.Context, accountID string, domainIDs []string) (map[string]Reading, error)
	// ListReadings returns one page of a domain's readings, newest
	// measured first, and the next page's cursor ("" on the last).
	ListReadings(ctx context.Context, f ReadingFilter, cursor string, limit int) ([]Reading, string, error)
}

// Counters persists rate-limit windows and per-key usage, written behind
// the in-memory counter so that counts survive a restart.
type Counters interface {
	LoadWindows(ctx context.Context, since time.Time) ([]Window, error)
	SaveCounts(ctx context.Context, windows []Window, usage []KeyUsage) error
}

// Tx is one write transaction.
type Tx interface {
	ContentRequest(accountID, id string) (ContentRequest, error)
	InsertContentRequest(cr ContentRequest) error
	UpdateContentRequest(cr ContentRequest) error
	ActiveContentRequests(accountID string) (int, error)
	// ClaimContentRequest moves the next request to process to processing
	// with a lease until leaseEnd: a processing one whose lease ended
	// before now (its worker died), else a queued one of the account, and
	// within it the client, with the fewest processing and the longest
	// wait since their last start (fair shares), oldest first.
	// ErrNotFound when there is none.
	ClaimContentRequest(now, leaseEnd time.Time) (ContentRequest, error)
	// RenewContentLease sets the lease of a request still processing under
	// the claim that made attempts, writing nothing else; ErrNotFound when
	// the request is no longer that claim's (cancelled, ended, taken again).
	RenewContentLease(id string, attempts int, leaseUntil time.Time) error
	// HandBackContentRequest ends the lease of a request still processing
	// under the claim that made attempts, at now, and counts a hand-back:
	// a server that stops gracefully leaves the request to the next claim.
	// ErrNotFound as for RenewContentLease.
	HandBackContentRequest(id string, attempts int, now time.Time) error
	BudgetMonth(accountID, month string) (BudgetMonth, error)
	AddToBudgetMonth(accountID, month string, spent, reserved int64) error
	Idempotency(scope, key string, notBefore time.Time) (Idempotency, error)
	PutIdempotency(rec Idempotency) error

	// Publish writes messages to a bus topic in this transaction (the
	// outbox): subscribers see them once it commits, never if it rolls back.
	Publish(topic string, msgs ...*message.Message) error

	// LatestReading is the newest reading of exactly one owner (ClientID ""
	// is the account's own) for a domain.
	LatestReading(f ReadingFilter) (Reading, error)
	InsertReading(r Reading) (Reading, error)

	// InsertDomain adds a monitored domain (ErrConflict when the owner
	// monitors it already); CountDomains counts an account's, its clients'
	// included.
	InsertDomain(d MonitoredDomain) error
	MonitoredDomain(accountID, id string) (MonitoredDomain, error)
	UpdateDomain(d MonitoredDomain) error
	DeleteDomain(accountID, id string) error
	CountDomains(accountID string) (int, error)

	InsertScan(s Scan) error
	UpdateScan(s Scan) error
	// ActiveScan is the queued or running scan of a monitored domain
	// (ErrNotFound when none).
	ActiveScan(domainID string) (Scan, error)
	// ClaimScan takes the oldest queued scan, or a running one whose lease
	// ended before now, and leases it until leaseEnd (ErrNotFound when
	// none).
	ClaimScan(now, leaseEnd time.Time) (Scan, error)
	// DueDomains lists up to limit monitored domains whose next scan is due
	// at now.
	DueDomains(now time.Time, limit int) ([]DueDomain, error)

	InsertWebhook(w Webhook) error
	// CountWebhooks is Webhooks.CountWebhooks in the transaction: with
	// InsertWebhook, a cap checked and kept in one step.
	CountWebhooks(accountID string, connections bool) (int, error)
	// Webhook reads a webhook of an account, a deleted one included, for
	// update.
	Webhook(accountID, id string) (Webhook, error)
	UpdateWebhook(w Webhook) error
	// UpdateWebhookHealth writes only what attempts change: failing_since,
	// failures and last_success_at. updated_at stays when the settings
	// last changed, which an edit checks it read the latest of.
	UpdateWebhookHealth(w Webhook) error
	// DeleteWebhook deletes a webhook or connection that is not deleted
	// yet (else ErrNotFound) at at, for the reason given: it keeps it
	// without its secrets for its history, and fails its pending
	// deliveries.
	DeleteWebhook(accountID, id, reason string, at time.Time) error
	// LogEvent keeps an event in the event log (once: a repeat is ignored).
	LogEvent(e LoggedEvent) error
	// InsertDelivery adds a delivery unless the webhook already has one for
	// the event or was deleted (added reports which).
	InsertDelivery(d Delivery) (added bool, err error)
	AddAttempt(a Attempt) error
	// RecordOutcome writes an attempt and the delivery's new state, and ends
	// its lease once the transaction commits; nothing when the delivery is
	// gone (retention removed it).
	RecordOutcome(deliveryID string, o DeliveryOutcome) error
	// Redeliver makes failed or succeeded deliveries of a webhook pending
	// again from the start of the schedule: ids, or with ids nil every
	// failed one of an event in [since, until). It returns how many.
	Redeliver(webhookID string, ids []string, since, until, now time.Time) (int, error)
}

type asOfKey struct{}

// AsOf returns a context whose reads reflect every commit made before t.
// An engine that caches may then serve reads it validated after t, so one
// validation serves a whole request, and concurrent requests share it.
// Without it, every read validates.
func AsOf(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, asOfKey{}, t)
}

// AsOfTime is the time given to AsOf, if any.
func AsOfTime(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(asOfKey{}).(time.Time)
	return t, ok
}
