package limits

import (
	"context"
	"crypto/sha256"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/core/fault"
)

// Guard counts failed attempts at a credential per subject (a client
// address, an API key, an email address) in fixed windows aligned to UTC,
// so that no credential can be guessed by brute force. Deciding an attempt
// and counting it are one step: each method is atomic (the embedded
// AuthGuard holds a lock, RedisGuard runs one script on the subject's
// key, StoreGuard one statement of the store's), so concurrent attempts
// never pass the limit. An error says the guard's engine cannot be reached
// (RATE_LIMIT_UNAVAILABLE on Redis): the attempt is then refused, never let
// through uncounted. core/limits/countertest's RunGuards is the suite every
// implementation passes.
type Guard interface {
	// Take counts a failure of the subject unless its window is full, and
	// reports the window. A refusal (Tally.Err) counts nothing. A failure
	// whose clock was read before its window rolled counts in the current
	// window, never taking the subject back to an earlier one.
	Take(ctx context.Context, s Subject, now time.Time) (Tally, error)
	// Peek reports the subject's window without counting.
	Peek(ctx context.Context, s Subject, now time.Time) (Tally, error)
	// Screen is the look at a client's address before its credentials are
	// checked: while it refuses (the Tally is not Allowed) the request is
	// refused whatever its credentials, which need not be looked at. A
	// refusal is exact; an allowance may not be, where the exact look is
	// Admit's, or a failure's Take, once the credentials are checked:
	// AuthGuard's is its Peek; a RedisGuard's and a StoreGuard's are the
	// refusals of s their process has seen in the window, without a round
	// trip.
	Screen(ctx context.Context, s Subject, now time.Time) (Tally, error)
	// Give takes back the failure that Take counted and reported as t,
	// when the attempt it was taken for turned out right. A window that
	// has ended since is left alone.
	Give(ctx context.Context, s Subject, t Tally) error
}

// Guards makes the guard named name (its keys' name in a shared engine),
// which allows limit failures per subject in each window of the given
// length (a whole number of seconds that divides a day).
type Guards func(name string, limit int, window time.Duration) Guard

// MemoryGuards makes guards in this process's memory (AuthGuard).
func MemoryGuards(_ string, limit int, window time.Duration) Guard {
	return NewAuthGuard(limit, window)
}

// The kinds of subject, which name what a refusal is about.
const (
	byAddress = iota
	byKey
	byEmail
)

var refusals = [...]string{
	byAddress: "too many failed authentication attempts from this address",
	byKey:     "too many requests with this revoked or expired API key",
	byEmail:   "too many failed sign-ins for this email address",
}

// Subject is what failures are counted against. Its size is fixed: a
// credential or an address of any length takes the same room.
type Subject struct {
	kind byte
	id   [sha256.Size]byte
}

// AddrSubject is a client address. IPv6 addresses are grouped by /64, the
// unit one host usually controls; an IPv4-mapped address is its IPv4.
func AddrSubject(a netip.Addr) Subject {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		a = p.Addr()
	}
	s := Subject{kind: byAddress}
	b := a.As16() // an IPv4 address as ::ffff:a.b.c.d, which no /64 is
	copy(s.id[:], b[:])
	return s
}

// KeySubject is an API key, kept as its SHA-256.
func KeySubject(key string) Subject { return Subject{kind: byKey, id: sha256.Sum256([]byte(key))} }

// EmailSubject is an email address, trimmed and lower-cased, kept as its
// SHA-256.
func EmailSubject(email string) Subject {
	return Subject{kind: byEmail, id: sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))}
}

// Tally is a subject's window as a Take or a Peek found it.
type Tally struct {
	Allowed bool // Take: the failure was counted; Peek: the window has room
	Limit   int
	Count   int   // failures in the window, the one Take counted included
	Start   int64 // the window's start and end, Unix seconds
	Reset   int64
	Now     time.Time
	kind    byte
}

// Remaining is the failures left in the window, never below zero.
func (t Tally) Remaining() int { return max(t.Limit-t.Count, 0) }

// Err is the 429 of a refusal (naming the whole seconds until the window
// ends), nil when the attempt may go on.
func (t Tally) Err() error {
	if t.Allowed {
		return nil
	}
	return fault.Wait(fault.RateLimitExceeded, int(t.Reset-t.Now.Unix()), "%s", refusals[t.kind])
}

// AuthGuard is the embedded Guard: the windows live in this process's
// memory, in a table of bounded size.
type AuthGuard struct {
	mu         sync.Mutex
	limit      int
	window     int64 // seconds
	maxEntries int
	m          map[Subject]*failures
}

type failures struct {
	start int64
	count int
}

// NewAuthGuard allows limit failures per subject in each window of the
// given length (a whole number of seconds that divides a day).
func NewAuthGuard(limit int, window time.Duration) *AuthGuard {
	return &AuthGuard{limit: limit, window: int64(window / time.Second), maxEntries: 100_000, m: make(map[Subject]*failures)}
}

func (g *AuthGuard) start(now time.Time) int64 {
	s := now.Unix()
	return s - s%g.window
}

// tally reports f, counted in the window starting at start.
func (g *AuthGuard) tally(s Subject, f *failures, start int64, now time.Time) Tally {
	t := Tally{Limit: g.limit, Start: start, Reset: start + g.window, Now: now, kind: s.kind}
	if f != nil && f.start == start {
		t.Count = f.count
	}
	t.Allowed = t.Count < g.limit
	return t
}

// Take counts a failure of s unless its window is full.
func (g *AuthGuard) Take(_ context.Context, s Subject, now time.Time) (Tally, error) {
	start := g.start(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.m[s]
	if f == nil {
		if len(g.m) >= g.maxEntries {
			g.sweep(start)
		}
		f = &failures{start: start}
		g.m[s] = f
	}
	// An attempt whose clock was read before the window rolled counts in
	// the current window rather than emptying it.
	if start > f.start {
		f.start, f.count = start, 0
	}
	t := g.tally(s, f, f.start, now)
	if t.Allowed {
		f.count++
		t.Count++
	}
	return t, nil
}

// Peek reports the window of s without counting.
func (g *AuthGuard) Peek(_ context.Context, s Subject, now time.Time) (Tally, error) {
	start := g.start(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.m[s]
	if f != nil && f.start > start {
		start = f.start
	}
	return g.tally(s, f, start, now), nil
}

// Screen is Peek: the window is in memory.
func (g *AuthGuard) Screen(ctx context.Context, s Subject, now time.Time) (Tally, error) {
	return g.Peek(ctx, s, now)
}

// Give takes back a failure Take counted in t's window.
func (g *AuthGuard) Give(_ context.Context, s Subject, t Tally) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.m[s]; f != nil && f.start == t.Start && f.count > 0 {
		f.count--
	}
	return nil
}

// sweep drops past windows, then the current subjects that are not
// blocked, which bounds memory under an attack from very many addresses
// without unblocking any. Only a table full of blocked subjects loses some
// of them (an eighth, chosen at random) to make room.
func (g *AuthGuard) sweep(start int64) {
	for s, f := range g.m {
		if f.start < start {
			delete(g.m, s)
		}
	}
	if len(g.m) < g.maxEntries {
		return
	}
	for s, f := range g.m {
		if f.count < g.limit {
			delete(g.m, s)
		}
	}
	for s := range g.m {
		if len(g.m) <= g.maxEntries-g.maxEntries/8-1 {
			break
		}
		delete(g.m, s)
	}
}
