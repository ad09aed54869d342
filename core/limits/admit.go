package limits

import "context"

// Admit decides an authenticated request u from the address addr: refused
// while addr has no failures left in guard (the Tally, not Allowed, as
// guard's Peek reports it), else decided by c's Take (the Decision). Where
// c and guard keep their windows on one Redis server it is one atomic step,
// one script run on the server; otherwise guard's Peek, then c's Take, each
// atomic. A Tally that allows tells no count.
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
