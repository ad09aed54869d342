// Package store states what aivis needs from a storage engine: its
// records and, per domain, a small interface with its contract (one file
// each: accounts and keys, usage, content, readings and domains, scans,
// webhooks and deliveries, connections, events, plugins, people, AI
// crawler and referral traffic, the changes made to a domain's site, an
// account's export and erasure). An
// engine implements all of them (Store); a consumer declares, beside
// itself, the few methods it calls. store/sqlite is the embedded engine;
// store/storetest is the suite that every engine passes.
//
// Isolation, in words an implementer of any engine can follow:
//   - A method outside Update is one transaction of its own, and sees every
//     transaction that committed before it was called (read-committed at
//     least; never a stale replica or a cache that missed a commit).
//   - Update runs its function in one transaction that is serializable with
//     every other Update: as if no other ran meanwhile. SQLite has one
//     writer at a time; PostgreSQL runs it SERIALIZABLE and retries on a
//     serialization failure (40001), or takes the row locks each contract
//     names. A contract that promises more under concurrency (a claim never
//     handed out twice, a cap never passed) says how.
//   - Uniqueness a contract states is enforced by the engine (a unique
//     index), not by callers reading first.
//
// Records are values: a caller may change the fields of the records it
// gets, but not the contents of their slices and maps, which may be shared
// (with a cache, say); it replaces a slice rather than change it in place.
//
// Times: every engine keeps each time from MinTime up to (not including)
// MaxTime exactly, to the nanosecond, and gives it back in UTC. A time
// outside that range, the zero time.Time included, is kept exactly or
// refused with an error, never stored as another time: SQLite, which
// holds Unix nanoseconds in an int64, refuses those before 1677-09-21 or
// after 2262-04-11 (so the zero time of a record that must have a time);
// PostgreSQL keeps the years 1 to 9999 and refuses the others;
// a field that may be empty (an expiry, a lease, an end) keeps the zero
// time as none. A time a method compares with (since, before, now) may lie
// outside the range, a retention cut up to 2398 (where the ids that begin
// with their time end). The API refuses readings before 2000.
//
// Lists: a page's limit of zero or less means 20, and a cursor the engine
// cannot read is ErrMalformed.
//
// Text: every engine keeps a string of a record, or of a list, as given
// when it is valid UTF-8 without NUL, free text (a name, a reason, an
// answer, an error) of a megabyte and more; one that holds a NUL or bytes
// that are not UTF-8 is refused, the write with it (IsInvalidText), and so
// is such a string a read compares with. PostgreSQL's text cannot hold
// either; SQLite could, and refuses them too, so that what one engine
// keeps the other does. Callers clean text from outside before they write
// it (core/text). What may hold any bytes is []byte (a payload, a
// request's content), or the response body of an attempt. Strings an
// index holds (ids, domain names, emails) are as long as their services
// let them be.
package store

import (
	"context"
	"errors"
	"time"
)

// The range of times every engine keeps exactly (see above).
var (
	MinTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Sentinel errors callers branch on.
var (
	ErrNotFound  = errors.New("store: not found")
	ErrConflict  = errors.New("store: conflict")
	ErrMalformed = errors.New("store: malformed cursor")
	// ErrLost says a claim is no longer the caller's: its lease ended and
	// another holder took the work, or the work ended meanwhile. What the
	// late holder wanted to record is not recorded.
	ErrLost = errors.New("store: claim lost")
	// ErrInvalidText is the refusal of a string that holds a NUL or bytes
	// that are not UTF-8 (see Text above).
	ErrInvalidText = errors.New("store: text holds a NUL or bytes that are not UTF-8")
)

// IsInvalidText reports whether err is an engine's refusal of text it
// does not keep: ErrInvalidText, or SQLSTATE 22021 (a character not in the
// database's encoding) or 22P05 (one its JSON cannot hold), with which an
// SQL engine that checks the text itself refuses it.
func IsInvalidText(err error) bool {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState() == "22021" || coded.SQLState() == "22P05"
	}
	return errors.Is(err, ErrInvalidText)
}

// Store is all of an engine: what the server opens and storetest proves.
type Store interface {
	Accounts
	Keys
	Counters
	Usage
	Content
	ContentRetention
	Readings
	Domains
	Scans
	Webhooks
	Deliveries
	Events
	Plugins
	People
	Traffic
	Changes
	Erasure
	Sealed
	Updater
	// Ping reads from the engine within ctx: an error says it does not
	// answer now (readiness).
	Ping(ctx context.Context) error
	Close() error
}

// Updater runs write transactions.
type Updater interface {
	// Update runs fn in one write transaction: all of it commits or none
	// (see the package's isolation rules). fn may run more than once, when
	// an engine retries a transaction that lost a conflict: it reads and
	// writes only through tx, and sets nothing outside it that a second run
	// would not set again. tx's methods run under ctx and are not safe for
	// concurrent use; tx is not used after fn returns.
	Update(ctx context.Context, fn func(Tx) error) error
}

// Tx is one write transaction: the transactional part of each domain.
type Tx interface {
	ContentTx
	ReadingsTx
	DomainsTx
	ScansTx
	WebhooksTx
	DeliveriesTx
	EventsTx
	ChangesTx
	TrafficTx
}
