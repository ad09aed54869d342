package store

import (
	"context"
	"time"

	"github.com/aivis/aivis/core/text"
)

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
	TargetQueries []string          // empty, not nil, when none
	Metadata      map[string]string // empty, not nil, when none
	Budget        int64
	Spent         int64
	BudgetMonth   string // YYYY-MM of the month its budget is committed to
	FailureReason string
	Result        []byte // JSON, nil until processed
	// Step is the step a processing request is at ("" while queued).
	Step string
	// Attempts counts the claims of the request by a worker (each claim's
	// number is its identity: it never goes down); HandBacks, the claims
	// handed back by a server that stopped gracefully; Holder, the process
	// whose worker holds it; LeaseUntil is when a processing request's
	// claim ends unless renewed.
	Attempts   int
	HandBacks  int
	Holder     string
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
// not filter: ClientID "" lists the account's and every client's.
type ContentFilter struct {
	AccountID string
	ClientID  string
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
	// Status is the response's HTTP status once it is kept; before, 0
	// (and an empty Body): the request holds its key and still runs, or
	// IdempotencyActed (1): acted, the request's action committed, its
	// answer not kept yet.
	Status    int
	Body      []byte
	CreatedAt time.Time
}

// Content reads content requests outside a write transaction. A request's
// id is unique (ErrConflict); the store refuses one whose spent is outside
// [0, Budget], whose budget is not positive, whose status is not queued,
// processing, completed, failed or cancelled, or whose account does not
// exist. Another account's request is ErrNotFound.
type Content interface {
	ContentRequest(ctx context.Context, accountID, id string) (ContentRequest, error)
	// ContentRequestClaim reads only a request's status and attempts (not
	// its content, result or work): what the engine checks every second
	// of a processing request to notice a cancel or a takeover.
	ContentRequestClaim(ctx context.Context, accountID, id string) (status string, attempts int, err error)
	// ListContentRequests returns a page newest first (then by id, highest
	// first), without each request's Content and Work, and the cursor of
	// the next page ("" on the last).
	ListContentRequests(ctx context.Context, f ContentFilter) ([]ContentRequest, string, error)
	// Budget reads an account's ledger for a month (zero when untouched)
	// and how many of its requests are active, at one moment.
	Budget(ctx context.Context, accountID, month string) (BudgetMonth, int, error)
}

// ContentRetention forgets what content requests no longer need.
type ContentRetention interface {
	// DeleteIdempotencyBefore forgets idempotency records made before t.
	DeleteIdempotencyBefore(ctx context.Context, t time.Time) (int64, error)
}

// ContentTx is the content part of a write transaction. The ledger of an
// account's month and its active requests are what a budget or the
// active-request cap is checked against: read and changed in one Update,
// they admit no more than the limit however many callers race (PostgreSQL:
// SERIALIZABLE, or the account's month row locked FOR UPDATE first).
type ContentTx interface {
	ContentRequest(accountID, id string) (ContentRequest, error)
	InsertContentRequest(cr ContentRequest) error
	// UpdateContentRequest writes a request. With claim > 0 it is the write
	// of the worker whose claim made Attempts claim: it succeeds only while
	// the request is processing under that claim, else ErrLost and nothing
	// is written (a cancel, an end or a new claim came first). With claim 0
	// (a cancel) it writes whatever holds the request.
	UpdateContentRequest(cr ContentRequest, claim int) error
	ActiveContentRequests(accountID string) (int, error)
	// ClaimContentRequest moves the next request to process to processing
	// for holder with a lease until leaseEnd: a processing one whose lease ended
	// before now (its worker died), else a queued one of the account, and
	// within it the client, with the fewest processing and the longest
	// wait since their last start (fair shares), oldest first. The claim
	// adds one to the request's Attempts, which is the claim's fencing
	// token: a request is never claimed by two callers at once (PostgreSQL:
	// FOR UPDATE SKIP LOCKED). ErrNotFound when there is none.
	ClaimContentRequest(holder string, now, leaseEnd time.Time) (ContentRequest, error)
	// RenewContentLease sets the lease of a request still processing under
	// the claim that made attempts, writing nothing else; ErrLost when the
	// request is no longer that claim's (cancelled, ended, taken again).
	RenewContentLease(id string, attempts int, leaseUntil time.Time) error
	// HandBackContentRequest ends the lease of a request still processing
	// under the claim that made attempts, at now, and counts a hand-back:
	// a server that stops gracefully leaves the request to the next claim.
	// ErrLost as for RenewContentLease.
	HandBackContentRequest(id string, attempts int, now time.Time) error
	// BudgetMonth reads an account's ledger for a month (zero when
	// untouched); AddToBudgetMonth adds to it, refusing (and changing
	// nothing) to take spent or reserved below zero, a release from an
	// untouched month included.
	BudgetMonth(accountID, month string) (BudgetMonth, error)
	AddToBudgetMonth(accountID, month string, spent, reserved int64) error
	// Idempotency reads the record of (scope, key) made at notBefore or
	// later (ErrNotFound otherwise); PutIdempotency keeps one per (scope,
	// key), replacing an older one; DeleteIdempotency forgets it (none is
	// no error).
	Idempotency(scope, key string, notBefore time.Time) (Idempotency, error)
	PutIdempotency(rec Idempotency) error
	DeleteIdempotency(scope, key string) error
}

// CheckMetadata refuses a request's metadata whose key or value is not
// text (ErrInvalidText, see Text): kept as JSON, it would be escaped or
// changed where a column refuses it.
func CheckMetadata(m map[string]string) error {
	for k, v := range m {
		if !text.Valid(k) || !text.Valid(v) {
			return ErrInvalidText
		}
	}
	return nil
}
