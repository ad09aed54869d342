package limits

import (
	"context"
	"sync"
	"time"
)

// shared is what a guard whose windows are kept where every process sees
// them (RedisGuard on Redis, StoreGuard in the store) keeps in its own
// process: its limit and window, and the subjects it has seen refused,
// each with the end of the window it was refused in (Unix seconds), which
// are Screen's answer without a round trip.
type shared struct {
	limit  int
	length int64 // the window's, in seconds

	mu      sync.Mutex
	refused map[Subject]int64
}

// maxRefused bounds the refusals a shared guard remembers; past it, those
// whose windows have ended are dropped, and if none has, all of them
// (their subjects are then refused by Admit or Take, where the windows
// are, until Screen has seen them refused again).
const maxRefused = 10_000

func newShared(limit int, window time.Duration) shared {
	return shared{limit: limit, length: int64(window / time.Second), refused: make(map[Subject]int64)}
}

// start is the start of the window that holds a failure at now.
func (g *shared) start(now time.Time) int64 {
	sec := now.Unix()
	return sec - sec%g.length
}

func (g *shared) tallyOf(allowed bool, start, count int64, s Subject, now time.Time) Tally {
	return Tally{Allowed: allowed, Limit: g.limit, Count: int(count), Start: start, Reset: start + g.length, Now: now, kind: s.kind}
}

// seen remembers t if it refused s, and returns it.
func (g *shared) seen(s Subject, t Tally) Tally {
	if t.Allowed {
		return t
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.refused) >= maxRefused {
		now := t.Now.Unix()
		for k, end := range g.refused {
			if end <= now {
				delete(g.refused, k)
			}
		}
		if len(g.refused) >= maxRefused {
			clear(g.refused)
		}
	}
	g.refused[s] = t.Reset
	return t
}

// forget forgets a refusal of s, when a failure of s is given back.
func (g *shared) forget(s Subject) {
	g.mu.Lock()
	delete(g.refused, s)
	g.mu.Unlock()
}

// Screen refuses s while this process has seen it refused in a window
// that has not ended at now; otherwise it allows s in now's window, with
// no count. It asks nothing of where the windows are.
func (g *shared) Screen(_ context.Context, s Subject, now time.Time) (Tally, error) {
	g.mu.Lock()
	end, ok := g.refused[s]
	g.mu.Unlock()
	if !ok || end <= now.Unix() {
		return g.tallyOf(true, g.start(now), 0, s, now), nil
	}
	return g.tallyOf(false, end-g.length, int64(g.limit), s, now), nil
}

// key is s as the shared engines keep it: its kind, then its id.
func (s Subject) key() []byte {
	b := make([]byte, 1+len(s.id))
	b[0] = s.kind
	copy(b[1:], s.id[:])
	return b
}
