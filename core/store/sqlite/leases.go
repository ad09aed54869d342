package sqlite

import (
	"sync"
	"time"
)

// leases are the deliveries this process is attempting or about to: a
// lease keeps claims away until its outcome commits (or the lease ends).
// They live in the serving process, so a crash ends them all at once.
//
// A delivery read from a snapshot may have been leased, attempted and
// released, its outcome committed, after the snapshot was taken: the
// snapshot still shows it pending. So a delivery released after the time
// its reader read it is not leased again from that read.
type leases struct {
	mu       sync.Mutex
	end      map[string]time.Time
	released map[string]time.Time // when, for the last minute or so
	sweep    time.Time
}

func newLeases() leases {
	return leases{end: make(map[string]time.Time), released: make(map[string]time.Time)}
}

// recentRelease is how long a release is remembered: longer than any read
// of deliveries takes.
const recentRelease = time.Minute

// held lists the deliveries leased at now, forgetting ended leases.
func (l *leases) held(now time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.end))
	for id, end := range l.end {
		if end.After(now) {
			out = append(out, id)
		} else {
			delete(l.end, id)
		}
	}
	return out
}

// take leases, in order, up to n (all when n < 0) of the ids neither
// leased at now nor released after read, until end, and returns them.
func (l *leases) take(ids []string, n int, now, end, read time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range ids {
		if len(out) == n {
			break
		}
		if e, ok := l.end[id]; ok && e.After(now) {
			continue
		}
		if r, ok := l.released[id]; ok && r.After(read) {
			continue
		}
		l.end[id] = end
		out = append(out, id)
	}
	return out
}

func (l *leases) release(id string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.end, id)
	l.released[id] = now
	if now.Sub(l.sweep) > recentRelease {
		l.sweep = now
		for id, at := range l.released {
			if now.Sub(at) > recentRelease {
				delete(l.released, id)
			}
		}
	}
}
