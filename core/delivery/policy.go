package delivery

import (
	"fmt"
	"net/http"
	"time"

	"github.com/aivis/aivis/core/retryafter"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/sdk"
)

// The outcome policy: what an attempt came to (delivered, retried, failed
// for good, gone), when a retry comes, when a delivery is given up, and
// when its target is disabled. Its functions read no clock and draw no
// random number: the caller passes the time of the attempt and the
// jitter's draw, so that each rule is a row of a table
// (policy_internal_test.go). The recorder (record.go) reads the target,
// asks decide, and writes what it says.

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

// DisableAfter is how long an endpoint may fail without a success before
// it is disabled.
const DisableAfter = 5 * 24 * time.Hour

// DisableMinFailures is the anti-flap guard: an endpoint is disabled only
// after this many failed attempts in a row as well, so a few failures
// spread over days (a webhook that rarely fires) do not disable it.
const DisableMinFailures = 10

// verdict is what an attempt came to.
type verdict uint8

const (
	// retry: not delivered, tried again on the schedule: no answer, any
	// status but a 2xx or 410, a connector's Retry, a plugin's own failure.
	// The zero value: an attempt that learnt nothing else is retried.
	retry verdict = iota
	delivered
	failed // a connector's permanent failure: not tried again
	gone   // a 410, a connector's Gone: the destination no longer exists
)

var verdicts = [...]string{retry: "retry", delivered: "delivered", failed: "failed", gone: "gone"}

// String is the verdict's word: retry, delivered, failed, gone.
func (v verdict) String() string { return verdicts[v] }

// What a connector answered, as an attempt records it.
const (
	ResultDelivered = "delivered"
	ResultRetry     = "retry"
	ResultFailed    = "failed"
	ResultGone      = "gone"
	ResultError     = "error" // the plugin failed: not running, crashed, past its deadline
)

// answered is what a webhook's answer means: a 2xx delivered the event, a
// 410 says the endpoint is gone, and anything else (no answer, status 0; a
// redirect; any other status) is retried, not before the Retry-After of a
// 429, 502, 503 or 504, read at the attempt's time.
func answered(status int, h http.Header, at time.Time) (verdict, time.Duration) {
	switch status {
	case http.StatusGone:
		return gone, 0
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retry, retryafter.Header(h, at)
	}
	if status >= 200 && status < 300 {
		return delivered, 0
	}
	return retry, 0
}

// connectorVerdict is what a connector's result means, with the word the
// attempt records: an outcome it does not know is a permanent failure, and
// its Retry-After is capped at MaxRetryAfter.
func connectorVerdict(r sdk.Result) (v verdict, retryIn time.Duration, result string) {
	switch r.Outcome {
	case sdk.Delivered:
		return delivered, 0, ResultDelivered
	case sdk.Retry:
		return retry, min(r.RetryAfter, MaxRetryAfter), ResultRetry
	case sdk.Gone:
		return gone, 0, ResultGone
	default:
		return failed, 0, ResultFailed
	}
}

// tried is what the policy reads of an attempt.
type tried struct {
	verdict verdict
	retryIn time.Duration // what a Retry-After asked for
	step    int           // the delivery's step in Schedule with this attempt: 1 after its first
	at      time.Time     // when it was made
	error   string        // what went wrong, as its log says
}

// health is a target's run of failures.
type health struct {
	failingSince  time.Time // the first failure since the last success; zero while it succeeds
	failures      int       // failed attempts since the last success
	lastSuccessAt time.Time
}

// target is what the policy reads of a delivery's webhook or connection.
type target struct {
	live         bool // not deleted (a deletion meanwhile included): its deliveries may go on
	enabled      bool
	subscription bool // a Zapier REST Hook subscription, which its destination may end
	connection   bool
	health
}

// decision is what follows from an attempt: for the delivery, and for its
// target.
type decision struct {
	status  string    // the delivery's: succeeded, pending (until next) or failed
	next    time.Time // the next attempt of a pending delivery
	health  health    // the target's, after the attempt
	changed bool      // health (or, with disable, the target) is to be written back
	// Why the target is to be disabled, or its subscription deleted; ""
	// when it stays as it is.
	disable, unsubscribe string
}

// decide applies the policy to an attempt of a delivery to t. spread is
// the jitter's draw, in [-1, 1): how far, as a fraction of Jitter, a retry
// moves from its place in the schedule.
//
//   - Delivered: the delivery succeeded; the target's failures are reset,
//     and its success time moves if it is more than a minute old (so that a
//     busy endpoint's health is written once a minute, not per delivery).
//   - Gone: the delivery failed; a live subscription is deleted, any other
//     live and enabled target is disabled.
//   - Retry or failed: the failure counts against the target. A retry is
//     pending at its step of the schedule with jitter, no sooner than its
//     Retry-After (capped at MaxRetryAfter); past the schedule, for a
//     permanent failure, or once the target is deleted, the delivery
//     failed. The target is disabled once it has failed for DisableAfter
//     and at least DisableMinFailures attempts in a row (the anti-flap
//     rule: both must hold).
func decide(a tried, t target, spread float64) decision {
	d := decision{health: t.health, status: store.DeliveryFailed}
	switch {
	case a.verdict == delivered:
		d.status = store.DeliverySucceeded
		if !t.failingSince.IsZero() || t.failures > 0 || a.at.Sub(t.lastSuccessAt) > time.Minute {
			d.health, d.changed = health{lastSuccessAt: a.at}, true
		}
	case a.verdict == gone && t.subscription && t.live:
		// The destination's own subscription ended (Zapier REST Hooks).
		d.unsubscribe = "the destination ended the subscription: " + a.error
	case a.verdict == gone:
		if t.enabled && t.live {
			d.disable, d.changed = "the endpoint answered 410 Gone", true
			if t.connection {
				d.disable = "the destination is gone: " + a.error
			}
		}
	default:
		if a.step < len(Schedule) && a.verdict != failed && t.live {
			d.status, d.next = store.DeliveryPending, a.at.Add(retryDelay(a.step, a.retryIn, spread))
		}
		if d.health.failingSince.IsZero() {
			d.health.failingSince = a.at
		}
		d.health.failures++
		d.changed = true
		if t.enabled && t.live && a.at.Sub(d.health.failingSince) >= DisableAfter && d.health.failures >= DisableMinFailures {
			d.disable = fmt.Sprintf("no successful delivery since %s (%d failed attempts)",
				d.health.failingSince.Format(time.RFC3339), d.health.failures)
		}
	}
	return d
}

// retryDelay is the wait before schedule step `step` (1-based for
// retries), moved by spread (in [-1, 1)) times Jitter, and never shorter
// than what a Retry-After asked for, up to MaxRetryAfter.
func retryDelay(step int, retryAfter time.Duration, spread float64) time.Duration {
	d := Schedule[step]
	if d > 0 {
		d += time.Duration(spread * Jitter * float64(d))
	}
	return max(d, min(retryAfter, MaxRetryAfter))
}
