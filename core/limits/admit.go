package limits

import (
	"context"
	"time"
)

// Screen is the look at a client's address before its credentials are
// checked: while the guard's window of s is full the request is refused
// (the Tally is not Allowed) whatever its credentials, and they need not
// be looked at. A guard in this process's memory is asked (Peek). A
// RedisGuard answers from the refusals of s that this process has seen in
// the window, without a round trip; the exact look is Admit's, or the
// Take of a failure, once the credentials are checked, so a request
// refused by neither is refused by those.
func Screen(ctx context.Context, g Guard, s Subject, now time.Time) (Tally, error) {
	if rg, ok := g.(*RedisGuard); ok {
		if t, refused := rg.screen(s, now); refused {
			return t, nil
		}
		return Tally{Allowed: true, Limit: rg.limit[0], Now: now, kind: s.kind}, nil
	}
	return g.Peek(ctx, s, now)
}

// Admit decides an authenticated request u from the address addr: refused
// while addr has no failures left in guard (the Tally, not Allowed, as
// guard's Peek reports it), else decided by c's Take (the Decision). Where
// c and guard keep their windows on one Redis server it is one atomic step,
// one script run on the server; otherwise guard's Peek, then c's Take, each
// atomic. A Tally that allows tells nothing more.
func Admit(ctx context.Context, c Counter, guard Guard, addr Subject, u Use, limits [3]int) (Tally, Decision, error) {
	if r, ok := c.(*Redis); ok {
		if g, ok := guard.(*RedisGuard); ok && g.conn == r.conn {
			return r.admit(ctx, g, addr, u, limits)
		}
	}
	t, err := guard.Peek(ctx, addr, u.At)
	if err != nil || !t.Allowed {
		return t, Decision{}, err
	}
	d, err := c.Take(ctx, u, limits)
	return t, d, err
}
