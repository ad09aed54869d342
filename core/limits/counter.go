package limits

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Counter decides and counts requests against an account's three windows
// (minute, hour, day). The contract every engine keeps, which
// core/limits/countertest checks:
//   - Take is one atomic check-and-count: either every window counts the
//     request or, if any is full, none does; of n concurrent Takes against
//     room for k, exactly min(n, k) are allowed.
//   - A window starts at the UTC minute, hour or day of the request's time
//     (Use.At, not the clock of the call) and counts from zero when the next
//     starts.
//   - Peek is the decision a request at that time would see, counting none.
//   - An allowed Take with a key counts one use of that key in its UTC hour
//     (store.KeyUsage), which reaches the store within the engine's flush
//     interval at the latest.
//
// Shared says whether the counts are shared exactly by every process that
// opens the same engine: a memory counter's are its process's alone, so
// only one process at a time serves the API with it (core/app/apiturn.go).
type Counter interface {
	Take(ctx context.Context, u Use, limits [3]int) (Decision, error)
	Peek(ctx context.Context, accountID string, limits [3]int, now time.Time) (Decision, error)
	Shared() bool
	// Run does the counter's background work until ctx ends, and returns
	// when what it holds is safe (written behind, for the memory counter).
	Run(ctx context.Context)
}

// Use is one authenticated request: whose it is and when it came.
type Use struct {
	AccountID string
	KeyID     string
	ClientID  string
	At        time.Time
}

const shardCount = 256

// Memory is the embedded Counter: counts live in memory, sharded by account,
// and are written behind to a store.Counters every flush interval, so they
// survive a restart (a crash loses at most one interval of counts).
type Memory struct {
	// Interval is how often Run writes the counts behind (default 1 s).
	Interval time.Duration
	seed     maphash.Seed
	shards   [shardCount]shard
	store    store.Counters
	log      *slog.Logger
}

// shard holds the windows of some accounts and the usage of their keys
// since the last flush, under one lock.
type shard struct {
	mu    sync.Mutex
	m     map[string]*entry
	dirty []*entry
	usage map[usageKey]*store.KeyUsage
}

type entry struct {
	account string
	start   [3]int64
	count   [3]int64
	dirty   bool
}

type usageKey struct {
	key  string
	hour int64
}

// NewMemory returns a counter persisted to s (which may be nil for none).
func NewMemory(s store.Counters, log *slog.Logger) *Memory {
	m := &Memory{seed: maphash.MakeSeed(), store: s, log: log}
	for i := range m.shards {
		m.shards[i].m = make(map[string]*entry)
		m.shards[i].usage = make(map[usageKey]*store.KeyUsage)
	}
	return m
}

func (m *Memory) shard(account string) *shard {
	return &m.shards[maphash.String(m.seed, account)%shardCount]
}

// Load restores the windows that are still current at now.
func (m *Memory) Load(ctx context.Context, now time.Time) error {
	if m.store == nil {
		return nil
	}
	starts := WindowStarts(now)
	ws, err := m.store.LoadWindows(ctx, time.Unix(starts[Day], 0))
	if err != nil {
		return err
	}
	for _, w := range ws {
		i := -1
		for j, n := range windowNames {
			if n == w.Window {
				i = j
			}
		}
		if i < 0 || w.Start.Unix() != starts[i] {
			continue
		}
		sh := m.shard(w.AccountID)
		sh.mu.Lock()
		e := sh.get(w.AccountID)
		e.start[i], e.count[i] = starts[i], max(e.count[i], w.Count)
		sh.mu.Unlock()
	}
	return nil
}

func (sh *shard) get(account string) *entry {
	e := sh.m[account]
	if e == nil {
		e = &entry{account: account}
		sh.m[account] = e
	}
	return e
}

// roll moves the entry's windows forward to those containing now. It never
// moves one back: a request stamped just before a boundary but counted after
// it (its clock was read before the shard's lock was taken) counts in the
// current window rather than emptying it.
func (e *entry) roll(starts [3]int64) {
	for i := range 3 {
		if starts[i] > e.start[i] {
			e.start[i], e.count[i] = starts[i], 0
		}
	}
}

// decision is the decision of windows that start at start (Unix seconds)
// and hold count, Allowed left to the caller.
func decision(start, count [3]int64, limits [3]int, now time.Time) Decision {
	d := Decision{Limit: limits, Now: now}
	for i := range 3 {
		d.Count[i] = int(count[i])
		d.Reset[i] = start[i] + int64(windowLengths[i]/time.Second)
	}
	return d
}

// Take counts u in all three windows if none is full, else in none.
func (m *Memory) Take(_ context.Context, u Use, limits [3]int) (Decision, error) {
	starts := WindowStarts(u.At)
	sh := m.shard(u.AccountID)
	sh.mu.Lock()
	e := sh.get(u.AccountID)
	e.roll(starts)
	d := decision(e.start, e.count, limits, u.At)
	d.Allowed = d.room()
	if d.Allowed {
		for i := range 3 {
			e.count[i]++
			d.Count[i]++
		}
		if !e.dirty {
			e.dirty = true
			sh.dirty = append(sh.dirty, e)
		}
		if u.KeyID != "" {
			sh.recordUse(u, starts[Hour])
		}
	}
	sh.mu.Unlock()
	return d, nil
}

func (sh *shard) recordUse(u Use, hour int64) {
	k := usageKey{u.KeyID, hour}
	ku := sh.usage[k]
	if ku == nil {
		ku = &store.KeyUsage{KeyID: u.KeyID, AccountID: u.AccountID, ClientID: u.ClientID, Hour: time.Unix(hour, 0).UTC()}
		sh.usage[k] = ku
	}
	ku.Count++
	ku.LastUsed = u.At
}

// Flush writes the windows changed since the last flush and the usage
// recorded since then. On failure the same counts are written next time.
func (m *Memory) Flush(ctx context.Context) error {
	if m.store == nil {
		return nil
	}
	var windows []store.Window
	var usage []store.KeyUsage
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for _, e := range sh.dirty {
			e.dirty = false
			for w := range 3 {
				windows = append(windows, store.Window{AccountID: e.account, Window: windowNames[w],
					Start: time.Unix(e.start[w], 0).UTC(), Count: e.count[w]})
			}
		}
		sh.dirty = sh.dirty[:0]
		for _, u := range sh.usage {
			usage = append(usage, *u)
		}
		clear(sh.usage)
		sh.mu.Unlock()
	}
	if len(windows) == 0 && len(usage) == 0 {
		return nil
	}
	if err := m.store.SaveCounts(ctx, windows, usage); err != nil {
		m.requeue(windows, usage)
		return err
	}
	return nil
}

// requeue puts back what a failed flush did not write.
func (m *Memory) requeue(windows []store.Window, usage []store.KeyUsage) {
	for _, w := range windows {
		sh := m.shard(w.AccountID)
		sh.mu.Lock()
		if e := sh.m[w.AccountID]; e != nil && !e.dirty {
			e.dirty = true
			sh.dirty = append(sh.dirty, e)
		}
		sh.mu.Unlock()
	}
	for _, u := range usage {
		sh := m.shard(u.AccountID)
		k := usageKey{u.KeyID, u.Hour.Unix()}
		sh.mu.Lock()
		if cur := sh.usage[k]; cur != nil {
			cur.Count += u.Count
			if u.LastUsed.After(cur.LastUsed) {
				cur.LastUsed = u.LastUsed
			}
		} else {
			sh.usage[k] = &u
		}
		sh.mu.Unlock()
	}
}

// Shared is false: the counts are this process's.
func (m *Memory) Shared() bool { return false }

// Run flushes every Interval until ctx ends, then flushes once more.
func (m *Memory) Run(ctx context.Context) {
	flushEvery(ctx, m.Interval, m.log, "request counts", m.Flush, func() { m.prune(time.Now()) })
}

// flushEvery runs flush every interval (1 s when not set) until ctx ends,
// then once more, logging its failures as of what; after each flush but
// the last it runs after.
func flushEvery(ctx context.Context, interval time.Duration, log *slog.Logger, what string, flush func(context.Context) error, after func()) {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := flush(fctx); err != nil {
				log.Error("final write of "+what+" failed", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := flush(ctx); err != nil && ctx.Err() == nil {
				log.Warn("writing "+what+" failed; will retry", "err", err)
			}
			after()
		}
	}
}

// prune forgets accounts whose day window has passed with nothing to write.
func (m *Memory) prune(now time.Time) {
	day := WindowStarts(now)[Day]
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if e.start[Day] < day && !e.dirty {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// Peek is the decision a request at now would see, without counting one.
func (m *Memory) Peek(_ context.Context, accountID string, limits [3]int, now time.Time) (Decision, error) {
	sh := m.shard(accountID)
	var e entry
	sh.mu.Lock()
	if p := sh.m[accountID]; p != nil {
		e = *p
	}
	sh.mu.Unlock()
	e.roll(WindowStarts(now))
	d := decision(e.start, e.count, limits, now)
	d.Allowed = d.room()
	return d, nil
}
