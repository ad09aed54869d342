package delivery

import (
	"math/rand/v2"
	"time"
)

// Schedule is the delay before each attempt of a delivery: the first at
// once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h after
// the attempt before (destinations.md). Ten attempts over about 3.2 days.
var Schedule = []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

// Jitter spreads retries by up to this fraction either way, so endpoints
// that failed together are not retried in one burst.
const Jitter = 0.1

// MaxRetryAfter bounds how long a Retry-After may postpone an attempt.
const MaxRetryAfter = 24 * time.Hour

// retryDelay is the wait before schedule step `step` (1-based for retries),
// with jitter, and never shorter than what a Retry-After asked for.
func retryDelay(step int, retryAfter time.Duration) time.Duration {
	d := Schedule[step]
	if d > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * Jitter * float64(d))
	}
	return max(d, min(retryAfter, MaxRetryAfter))
}

// DisableAfter is how long an endpoint may fail without a success before
// it is disabled.
const DisableAfter = 5 * 24 * time.Hour

// DisableMinFailures is the anti-flap guard: an endpoint is disabled only
// after this many failed attempts in a row as well, so a few failures
// spread over days (a webhook that rarely fires) do not disable it.
const DisableMinFailures = 10
