package dashboard

import (
	"strings"
	"sync"
	"time"
)

// Failed sign-ins allowed per email address in a window, from any client
// address: the guard per client address alone lets many addresses try
// passwords against one user.
const (
	emailFailures      = 10
	emailFailureWindow = 15 * time.Minute
	emailGuardSize     = 100_000
)

// emailGuard counts failed sign-ins per email address (known or not, so
// that its answer tells nothing about which addresses sign in).
type emailGuard struct {
	mu sync.Mutex
	m  map[string]*emailCount
}

type emailCount struct {
	n     int
	start time.Time
}

func (g *emailGuard) key(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// blocked reports whether email has used its failures in this window.
func (g *emailGuard) blocked(email string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.m[g.key(email)]
	return ok && now.Sub(c.start) < emailFailureWindow && c.n >= emailFailures
}

// fail counts a failure of email.
func (g *emailGuard) fail(email string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]*emailCount{}
	}
	k := g.key(email)
	c, ok := g.m[k]
	if !ok || now.Sub(c.start) >= emailFailureWindow {
		if len(g.m) >= emailGuardSize {
			for k, c := range g.m {
				if now.Sub(c.start) >= emailFailureWindow {
					delete(g.m, k)
				}
			}
			if len(g.m) >= emailGuardSize {
				return // full of live windows: the per-address guard still holds
			}
		}
		c = &emailCount{start: now}
		g.m[k] = c
	}
	c.n++
}

// succeed forgets the failures of email.
func (g *emailGuard) succeed(email string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, g.key(email))
}
