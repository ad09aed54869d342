package store

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/core/text"
)

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

// The kinds of an account's windows, in the order of a take's starts,
// limits and counts (WindowTake, WindowCounts).
var WindowKinds = [3]string{"minute", "hour", "day"}

// WindowTake is one request to count against an account's three windows
// (WindowKinds) and, when it has a key, in that key's hourly usage.
type WindowTake struct {
	AccountID string
	// Starts are the starts of the windows that hold the request.
	Starts [3]time.Time
	// Limits are the most requests each window may count.
	Limits [3]int64
	// Usage is the key's use that an allowed request adds: one in the
	// hour Usage.Hour, its last use moved to Usage.LastUsed; none when
	// Usage.KeyID is empty. Usage.Count is not read.
	Usage KeyUsage
}

// WindowCounts are an account's three windows (WindowKinds) as a take or
// a peek found them: each one's start and count.
type WindowCounts struct {
	Starts [3]time.Time
	Counts [3]int64
}

// GuardTake is one failed attempt at a credential to count against a
// subject's window of a guard of failed authentications (core/limits
// Guard). Windows are whole seconds, Unix seconds.
type GuardTake struct {
	// Guard is the guard's name; each guard keeps its subjects apart.
	Guard string
	// Subject is what the failures are counted against: at most 64 bytes.
	Subject []byte
	// Start and End are the window that holds the failure.
	Start, End int64
	// Limit is the most failures the window may count.
	Limit int64
}

// GuardWindow is a subject's window as a take or a peek found it: its
// start (Unix seconds) and its failures.
type GuardWindow struct {
	Start int64
	Count int64
}

// Counters keeps rate-limit windows and per-key usage: written behind an
// in-memory counter (LoadWindows, SaveCounts) so that counts survive a
// restart, or counted in the store itself, one request at a time
// (TakeWindows, PeekWindows), so that every process on the store shares
// them. The two share the windows: one per account and kind. The guards'
// windows of failed authentications (TakeGuard, PeekGuard, GiveGuard) are
// the store counter's, shared alike by every process on the store.
type Counters interface {
	// LoadWindows lists the saved windows that start at since or later.
	LoadWindows(ctx context.Context, since time.Time) ([]Window, error)
	// SaveCounts saves windows and adds usage, in one transaction. A
	// window is kept per account and kind; a saved one is replaced only
	// by a later start or, for the same start, a higher count, so saves
	// that race or arrive out of order never lower a count. Usage counts
	// add up per key and hour, and move the key's last use forward only.
	SaveCounts(ctx context.Context, windows []Window, usage []KeyUsage) error
	// TakeWindows counts one request in every window of its account, and
	// its key's use, if no window is full; else it counts nothing, in no
	// window and no usage. It returns whether it counted the request and
	// the windows after it (the request included when counted).
	//
	// Against a take's start, a kept window that starts earlier holds
	// none (the take replaces it with its own start); one that starts at
	// the same time or later holds its count and keeps its start: a
	// request stamped just before a boundary but counted after it counts
	// in the newer window, never moving it back.
	//
	// Isolation: exact under any number of concurrent callers on any
	// number of handles (processes): of n takes against room for k,
	// exactly min(n, k) count. The read of the account's windows, the
	// decision and the writes are one transaction, during which no other
	// take of that account reads or writes its windows; takes of other
	// accounts need not wait. SQLite has one writer at a time. PostgreSQL,
	// at READ COMMITTED, locks the three rows before it reads them, in
	// one statement that makes and locks them alike: INSERT the three
	// (count 0, the take's starts) ON CONFLICT (account_id, window) DO
	// UPDATE SET count = rate_windows.count RETURNING start, count; then,
	// if every window has room, UPDATEs them and upserts the key's usage
	// (ON CONFLICT (key_id, hour) DO UPDATE SET count = usage_hourly.count
	// + 1) in the same transaction, and commits. The rows stay locked
	// until the commit; a plain SELECT before the write is not enough.
	TakeWindows(ctx context.Context, t WindowTake) (counted bool, w WindowCounts, err error)
	// PeekWindows is the windows of an account as a take with these
	// starts would find them (the same rules), counting nothing; an
	// account with no windows holds none, at starts.
	PeekWindows(ctx context.Context, accountID string, starts [3]time.Time) (WindowCounts, error)

	// TakeGuard counts a failure in the subject's window of the guard
	// unless the window is full. It returns whether it counted and the
	// window after it (the failure included when counted). The windows
	// roll as TakeWindows's do: a kept window that starts before t.Start
	// holds none (the take replaces it with its own); one that starts at
	// t.Start or later keeps its start and count.
	//
	// Isolation: exact as TakeWindows is, under any number of concurrent
	// callers on any number of handles: of n takes against room for k,
	// exactly min(n, k) count. SQLite has one writer at a time.
	// PostgreSQL, at READ COMMITTED, decides and writes in one INSERT ...
	// ON CONFLICT (guard, subject) DO UPDATE ... WHERE, which locks the
	// row and reads its latest version; a take refused by the WHERE reads
	// the row it locked, in the same transaction.
	TakeGuard(ctx context.Context, t GuardTake) (counted bool, w GuardWindow, err error)
	// PeekGuard is the subject's window as a take at start would find it,
	// counting nothing; a subject with no window holds none, at start.
	PeekGuard(ctx context.Context, guard string, subject []byte, start int64) (GuardWindow, error)
	// GiveGuard takes back one failure of the subject's window if the
	// window still starts at start and holds one; otherwise it does
	// nothing.
	GiveGuard(ctx context.Context, guard string, subject []byte, start int64) error
	// PruneGuards deletes the guards' windows that ended before before
	// (Unix seconds), in statements of at most limit rows, and says how
	// many it deleted.
	PruneGuards(ctx context.Context, before int64, limit int) (int64, error)
}

// Usage reads the recorded per-key hourly request counts.
type Usage interface {
	// UsageSince lists an account's per-key hourly counts from since on,
	// oldest first (by key within an hour).
	UsageSince(ctx context.Context, accountID string, since time.Time) ([]KeyUsage, error)
	// ListUsage reads a page of the counts f selects, oldest hour first,
	// by key id within an hour, and the cursor of the next page (UsageCursor;
	// "" on the last).
	ListUsage(ctx context.Context, f UsageFilter) ([]KeyUsage, string, error)
}

// UsageFilter selects an account's per-key hourly counts of the hours
// that start at From or later and before To (the zero To: no end).
type UsageFilter struct {
	AccountID  string
	ClientID   string // "" with AllClients false: the account's own keys only
	AllClients bool   // the account's keys and every client's
	KeyID      string // one key's only, when set
	From, To   time.Time
	Cursor     string
	Limit      int
}

// UsageCursor is the cursor of the page of usage after the count of key
// in hour; UsageAfter reads it back (ErrMalformed for what it did not
// make: a key id is text).
func UsageCursor(hour time.Time, keyID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(hour.UnixNano(), 10) + " " + keyID))
}

func UsageAfter(cursor string) (time.Time, string, error) {
	b, _ := base64.RawURLEncoding.DecodeString(cursor)
	n, id, _ := strings.Cut(string(b), " ")
	ns, err := strconv.ParseInt(n, 10, 64)
	hour := time.Unix(0, ns).UTC()
	if err != nil || id == "" || !text.Valid(id) || UsageCursor(hour, id) != cursor {
		return time.Time{}, "", ErrMalformed
	}
	return hour, id, nil
}
