package limits

import (
	"context"
	"time"

	"github.com/aivis/aivis/core/store"
)

// StoreCounter is the shared Counter: the windows are the store's, each
// request checked and counted there in one transaction
// (store.Counters.TakeWindows), so every process on the same store shares
// them exactly. A request costs one write, and its key's usage is in the
// store as soon as Take returns.
type StoreCounter struct {
	store store.Counters
}

// NewStoreCounter counts requests in s.
func NewStoreCounter(s store.Counters) *StoreCounter { return &StoreCounter{store: s} }

// Take counts u in all three windows and its key's usage if no window is
// full, else in none.
func (c *StoreCounter) Take(ctx context.Context, u Use, limits [3]int) (Decision, error) {
	t := store.WindowTake{AccountID: u.AccountID, Starts: startTimes(u.At)}
	for i := range 3 {
		t.Limits[i] = int64(limits[i])
	}
	if u.KeyID != "" {
		t.Usage = store.KeyUsage{KeyID: u.KeyID, AccountID: u.AccountID, ClientID: u.ClientID, Hour: t.Starts[Hour], Count: 1, LastUsed: u.At}
	}
	counted, w, err := c.store.TakeWindows(ctx, t)
	if err != nil {
		return Decision{}, err
	}
	d := storeDecision(w, limits, u.At)
	d.Allowed = counted
	return d, nil
}

// Peek is the decision a request at now would see, without counting one.
func (c *StoreCounter) Peek(ctx context.Context, accountID string, limits [3]int, now time.Time) (Decision, error) {
	w, err := c.store.PeekWindows(ctx, accountID, startTimes(now))
	if err != nil {
		return Decision{}, err
	}
	d := storeDecision(w, limits, now)
	d.Allowed = d.room()
	return d, nil
}

// Shared is true: the counts are the store's.
func (c *StoreCounter) Shared() bool { return true }

// Run has nothing to do: every count is in the store when Take returns.
func (c *StoreCounter) Run(ctx context.Context) { <-ctx.Done() }

func startTimes(at time.Time) [3]time.Time {
	s := WindowStarts(at)
	return [3]time.Time{time.Unix(s[0], 0).UTC(), time.Unix(s[1], 0).UTC(), time.Unix(s[2], 0).UTC()}
}

func storeDecision(w store.WindowCounts, limits [3]int, now time.Time) Decision {
	var start, count [3]int64
	for i := range 3 {
		start[i], count[i] = w.Starts[i].Unix(), w.Counts[i]
	}
	return decision(start, count, limits, now)
}
