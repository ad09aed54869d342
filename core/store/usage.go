package store

import (
	"context"
	"time"
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

// Counters persists rate-limit windows and per-key usage, written behind
// an in-memory counter so that counts survive a restart.
type Counters interface {
	// LoadWindows lists the saved windows that start at since or later.
	LoadWindows(ctx context.Context, since time.Time) ([]Window, error)
	// SaveCounts saves windows and adds usage, in one transaction. A
	// window is kept per account and kind; a saved one is replaced only
	// by a later start or, for the same start, a higher count, so saves
	// that race or arrive out of order never lower a count. Usage counts
	// add up per key and hour, and move the key's last use forward only.
	SaveCounts(ctx context.Context, windows []Window, usage []KeyUsage) error
}

// Usage reads the recorded per-key hourly request counts.
type Usage interface {
	// UsageSince lists an account's per-key hourly counts from since on,
	// oldest first (by key within an hour).
	UsageSince(ctx context.Context, accountID string, since time.Time) ([]KeyUsage, error)
}
