package limits

import (
	"context"
	"log/slog"
	"time"

	"github.com/aivis/aivis/core/store"
)

// StoreCounter is the shared Counter: the windows are the store's, each
// request checked and counted there in one transaction
// (store.Counters.TakeWindows), so every process on the same store shares
// them exactly. A request costs one write, and its key's usage is in the
// store as soon as Take returns. Its guards of failed authentications
// (Guard) keep their windows in the store too.
type StoreCounter struct {
	store store.Counters
	log   *slog.Logger
}

// NewStoreCounter counts requests in s; log (nil: none) says when Run
// cannot prune the guards' windows.
func NewStoreCounter(s store.Counters, log *slog.Logger) *StoreCounter {
	return &StoreCounter{store: s, log: log}
}

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

// Run prunes the guards' windows (StoreGuard) that ended a minute ago or
// more, every minute, until ctx ends: every count is in the store when
// Take returns.
func (c *StoreCounter) Run(ctx context.Context) {
	for {
		if _, err := c.store.PruneGuards(ctx, time.Now().Add(-time.Minute).Unix(), pruneGuards); err != nil && ctx.Err() == nil && c.log != nil {
			c.log.Error("cannot prune the guards' windows of failed authentications", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Minute):
		}
	}
}

// pruneGuards bounds the windows one statement of Run's pruning deletes.
const pruneGuards = 1000

// StoreGuard is the Guard of the store counter: a subject's window is the
// store's (store.Counters' TakeGuard, PeekGuard, GiveGuard), shared by every
// process on the store, as the counter's windows are. Take is one write,
// Peek one read; Screen answers from the refusals this process has seen,
// without asking the store. Subjects are kept as AuthGuard keeps them (a
// key and an email address as their SHA-256, an address by host or /64).
type StoreGuard struct {
	store store.Counters
	name  string
	shared
}

// Guard makes the guard named name in c's store: limit failures per
// subject in each window of the given length (a whole number of seconds
// that divides a day).
func (c *StoreCounter) Guard(name string, limit int, window time.Duration) Guard {
	return &StoreGuard{store: c.store, name: name, shared: newShared(limit, window)}
}

// Take counts a failure of s unless its window is full.
func (g *StoreGuard) Take(ctx context.Context, s Subject, now time.Time) (Tally, error) {
	start := g.start(now)
	counted, w, err := g.store.TakeGuard(ctx, store.GuardTake{Guard: g.name, Subject: s.key(), Start: start, End: start + g.length, Limit: int64(g.limit)})
	if err != nil {
		return Tally{}, err
	}
	return g.seen(s, g.tallyOf(counted, w.Start, w.Count, s, now)), nil
}

// Peek reports the window of s without counting.
func (g *StoreGuard) Peek(ctx context.Context, s Subject, now time.Time) (Tally, error) {
	w, err := g.store.PeekGuard(ctx, g.name, s.key(), g.start(now))
	if err != nil {
		return Tally{}, err
	}
	return g.seen(s, g.tallyOf(w.Count < int64(g.limit), w.Start, w.Count, s, now)), nil
}

// Give takes back a failure Take counted in t's window (and forgets a
// refusal of s that this process saw).
func (g *StoreGuard) Give(ctx context.Context, s Subject, t Tally) error {
	g.forget(s)
	return g.store.GiveGuard(ctx, g.name, s.key(), t.Start)
}

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
