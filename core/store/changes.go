package store

import (
	"context"
	"time"
)

// Change is something a user changed on a monitored domain's site (a
// rewritten page, new FAQ markup), kept so that aivis can measure the
// lift it caused (core/lift) and mark it on the domain's charts.
type Change struct {
	ID        string
	AccountID string
	ClientID  string // the domain's owner: "" for the account itself
	DomainID  string
	Title     string
	Notes     string
	// At is when the change went live.
	At time.Time
	// Pages are the URLs or paths it targets; Prompts, the domain's
	// prompts it targets, by text. Each is empty, not nil, when none.
	Pages   []string
	Prompts []string
	// ContentRequestID is the content request whose published result
	// made the change, "" for one made by hand. An account has at most
	// one change of a content request (a deleted one lets the request
	// make another).
	ContentRequestID string
	CreatedAt        time.Time
	// LiftMeasuredAt is when the change first had a full window of scans
	// after it and its lift was measured (lift_measured), zero until then.
	LiftMeasuredAt time.Time
}

// ChangeFilter selects a page of a domain's changes that went live at
// or after From and before To; a zero From or To is no bound.
type ChangeFilter struct {
	AccountID string
	DomainID  string
	From, To  time.Time
	// Unmeasured selects only the changes whose lift was not measured yet
	// (LiftMeasuredAt zero).
	Unmeasured bool
	Cursor     string
	Limit      int
}

// Changes keeps the changes of monitored domains. Every method that names
// an account and a domain reads or writes that domain only when the
// account owns it: another account's domain is ErrNotFound for a write
// and holds nothing for a read. A change goes with its domain. The store
// keeps the text it is given (see Text): the API holds a change to its
// bounds (a title, notes, how many pages and prompts).
type Changes interface {
	// CreateChange keeps a change of c.AccountID's domain c.DomainID, its
	// ClientID the domain's (the one given is not read): ErrNotFound when
	// the account has no such domain, ErrConflict for a taken id or a
	// second change of one content request, however many callers make
	// one at once, on however many handles.
	CreateChange(ctx context.Context, c Change) error
	// Change reads a change of the account's domain; ErrNotFound for
	// another account's or another domain's.
	Change(ctx context.Context, accountID, domainID, id string) (Change, error)
	// ChangeOfContentRequest reads the account's change of a content
	// request (what a second CreateChange of it found); ErrNotFound when
	// it has none.
	ChangeOfContentRequest(ctx context.Context, accountID, contentRequestID string) (Change, error)
	// ListChanges returns one page of a domain's changes that f selects,
	// the latest At first (then by id, highest first), and the next
	// page's cursor ("" on the last).
	ListChanges(ctx context.Context, f ChangeFilter) ([]Change, string, error)
	// DeleteChange deletes a change of the account's domain; ErrNotFound
	// for another account's or another domain's.
	DeleteChange(ctx context.Context, accountID, domainID, id string) error
}

// ChangesTx is the changes' part of a write transaction.
type ChangesTx interface {
	// InsertChange is CreateChange in the transaction.
	InsertChange(c Change) error
	// MarkLiftMeasured sets LiftMeasuredAt of a change of the account to
	// at, once: ErrConflict when it is set already (another caller marked
	// it first, on however many handles), ErrNotFound when the account
	// has no such change. The event that says so is published in the
	// same transaction, so that it is published once.
	MarkLiftMeasured(accountID, id string, at time.Time) error
}
