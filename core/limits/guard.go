package limits

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/aivis/aivis/core/fault"
)

// AuthGuard limits failed authentication attempts per client address, so a
// credential cannot be guessed by brute force. It is independent of
// accounts: a blocked address is refused before its credentials are checked.
// IPv6 addresses are grouped by /64, the unit one host usually controls.
type AuthGuard struct {
	mu       sync.Mutex
	perMin   int
	maxAddrs int
	m        map[netip.Addr]*failures
}

type failures struct {
	start int64
	count int
}

// NewAuthGuard allows perMinute failed attempts per address per minute.
func NewAuthGuard(perMinute int) *AuthGuard {
	return &AuthGuard{perMin: perMinute, maxAddrs: 100_000, m: make(map[netip.Addr]*failures)}
}

func group(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// Limit is the number of failed attempts allowed per minute.
func (g *AuthGuard) Limit() int { return g.perMin }

// Check reports the failures left for addr this minute, the window's end,
// and a 429 when none is left.
func (g *AuthGuard) Check(addr netip.Addr, now time.Time) (remaining int, reset int64, err error) {
	start := WindowStarts(now)[Minute]
	reset = start + 60
	g.mu.Lock()
	f := g.m[group(addr)]
	n := 0
	if f != nil && f.start == start {
		n = f.count
	}
	g.mu.Unlock()
	remaining = max(g.perMin-n, 0)
	if remaining == 0 {
		ra := int(max(reset-now.Unix(), 1))
		return 0, reset, &fault.Error{Code: fault.RateLimitExceeded, RetryAfter: ra,
			Message: fmt.Sprintf("too many failed authentication attempts from this address; retry after %d seconds", ra)}
	}
	return remaining, reset, nil
}

// Fail records a failed attempt from addr and returns the failures left.
func (g *AuthGuard) Fail(addr netip.Addr, now time.Time) int {
	start := WindowStarts(now)[Minute]
	a := group(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.m[a]
	if f == nil {
		if len(g.m) >= g.maxAddrs {
			g.sweep(start)
		}
		f = &failures{}
		g.m[a] = f
	}
	if start > f.start { // a failure stamped in a past minute counts in the current one
		f.start, f.count = start, 0
	}
	f.count++
	return max(g.perMin-f.count, 0)
}

// sweep drops past windows, then the current addresses that are not
// blocked, which bounds memory under an attack from very many addresses
// without unblocking any. Only a table full of blocked addresses loses some
// of them (an eighth, chosen at random) to make room.
func (g *AuthGuard) sweep(start int64) {
	for a, f := range g.m {
		if f.start < start {
			delete(g.m, a)
		}
	}
	if len(g.m) < g.maxAddrs {
		return
	}
	for a, f := range g.m {
		if f.count < g.perMin {
			delete(g.m, a)
		}
	}
	for a := range g.m {
		if len(g.m) <= g.maxAddrs-g.maxAddrs/8-1 {
			break
		}
		delete(g.m, a)
	}
}
