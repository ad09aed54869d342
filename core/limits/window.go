package limits

import (
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

// The three fixed windows, aligned to UTC.
const (
	Minute = iota
	Hour
	Day
)

// windowNames are the windows' names, as the store keeps them and as
// messages say them.
var windowNames = store.WindowKinds
var windowLengths = [3]time.Duration{time.Minute, time.Hour, 24 * time.Hour}

// WindowStarts are the starts of the windows that contain t, as Unix seconds.
func WindowStarts(t time.Time) [3]int64 {
	s := t.Unix()
	return [3]int64{s - s%60, s - s%3600, s - s%86400}
}

// Decision is the outcome of counting one request against the windows.
type Decision struct {
	Allowed bool
	Limit   [3]int
	Count   [3]int   // the windows' counts, this request included when allowed
	Reset   [3]int64 // the windows' ends, Unix seconds
	Now     time.Time
}

// Remaining in window w, never below zero.
func (d Decision) Remaining(w int) int { return max(d.Limit[w]-d.Count[w], 0) }

// room reports that no window is full.
func (d Decision) room() bool {
	for w := range 3 {
		if d.Count[w] >= d.Limit[w] {
			return false
		}
	}
	return true
}

// Tightest is the window with the fewest requests remaining; on a tie, the
// shortest. X-RateLimit-* headers report it.
func (d Decision) Tightest() int {
	best := Minute
	for w := Hour; w <= Day; w++ {
		if d.Remaining(w) < d.Remaining(best) {
			best = w
		}
	}
	return best
}

// RetryAfter is the whole number of seconds until every exhausted window
// has reset: only then can a request pass.
func (d Decision) RetryAfter() int {
	wait := int64(0)
	for w := range 3 {
		if d.Count[w] >= d.Limit[w] {
			wait = max(wait, d.Reset[w]-d.Now.Unix())
		}
	}
	return int(max(wait, 1))
}

// Err is the 429 of a refused decision, nil when it was allowed.
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	w := Day
	for i := range 3 {
		if d.Count[i] >= d.Limit[i] {
			w = i
		}
	}
	return fault.Wait(fault.RateLimitExceeded, d.RetryAfter(), "rate limit of %d requests per %s exceeded", d.Limit[w], windowNames[w])
}
