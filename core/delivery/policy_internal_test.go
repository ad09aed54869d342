package delivery

import (
	"net/http"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/sdk"
)

var policyAt = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// A webhook's answer: 2xx delivered, 410 gone, anything else retried;
// only a 429, 502, 503 or 504 has its Retry-After read, at the attempt's
// time.
func TestAnswered(t *testing.T) {
	after := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	for _, tc := range []struct {
		name    string
		status  int
		h       http.Header
		want    verdict
		retryIn time.Duration
	}{
		{"200", 200, nil, delivered, 0},
		{"204", 204, nil, delivered, 0},
		{"299", 299, nil, delivered, 0},
		{"200 with a Retry-After", 200, after("60"), delivered, 0},
		{"no answer", 0, nil, retry, 0},
		{"1xx", 101, nil, retry, 0},
		{"redirect, not followed", 302, after("60"), retry, 0},
		{"400", 400, nil, retry, 0},
		{"404", 404, nil, retry, 0},
		{"410", 410, after("60"), gone, 0},
		{"500 with a Retry-After: not read", 500, after("60"), retry, 0},
		{"429 in seconds", 429, after("120"), retry, 2 * time.Minute},
		{"429 without one", 429, nil, retry, 0},
		{"429 in the past", 429, after(policyAt.Add(-time.Hour).Format(http.TimeFormat)), retry, 0},
		{"429 unreadable", 429, after("soon"), retry, 0},
		{"429 past the cap: capped when scheduled", 429, after("172800"), retry, 48 * time.Hour},
		{"502 as a date", 502, after(policyAt.Add(90 * time.Second).Format(http.TimeFormat)), retry, 90 * time.Second},
		{"503", 503, after("30"), retry, 30 * time.Second},
		{"504", 504, after("7"), retry, 7 * time.Second},
	} {
		v, in := answered(tc.status, tc.h, policyAt)
		if v != tc.want || in != tc.retryIn {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, v, in, tc.want, tc.retryIn)
		}
	}
}

// A connector's result: each outcome its verdict and its word; an outcome
// the engine does not know fails for good; Retry-After capped.
func TestConnectorVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       sdk.Result
		want    verdict
		retryIn time.Duration
		result  string
	}{
		{"delivered", sdk.Result{Outcome: sdk.Delivered, Reason: "ok", RetryAfter: time.Minute}, delivered, 0, ResultDelivered},
		{"retry", sdk.RetryResult(30*time.Second, "rate limited"), retry, 30 * time.Second, ResultRetry},
		{"retry at once", sdk.RetryResult(0, "busy"), retry, 0, ResultRetry},
		{"retry at the cap", sdk.RetryResult(MaxRetryAfter, "busy"), retry, MaxRetryAfter, ResultRetry},
		{"retry past the cap", sdk.RetryResult(MaxRetryAfter+time.Second, "busy"), retry, MaxRetryAfter, ResultRetry},
		{"gone", sdk.GoneResult("archived"), gone, 0, ResultGone},
		{"failed", sdk.FailedResult("bad settings"), failed, 0, ResultFailed},
		{"no outcome", sdk.Result{}, failed, 0, ResultFailed},
		{"an unknown outcome", sdk.Result{Outcome: 99, RetryAfter: time.Minute}, failed, 0, ResultFailed},
	} {
		v, in, result := connectorVerdict(tc.r)
		if v != tc.want || in != tc.retryIn || result != tc.result {
			t.Errorf("%s: %v, %v, %q; want %v, %v, %q", tc.name, v, in, result, tc.want, tc.retryIn, tc.result)
		}
	}
}

// The wait before a retry: the schedule's step moved by the jitter's draw,
// never shorter than a Retry-After, which is capped.
func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		name       string
		step       int
		retryAfter time.Duration
		spread     float64
		want       time.Duration
	}{
		{"the first attempt is at once", 0, 0, 1, 0},
		{"step 1", 1, 0, 0, 5 * time.Second},
		{"step 1, earliest", 1, 0, -1, 4500 * time.Millisecond},
		{"step 1, later", 1, 0, 0.5, 5250 * time.Millisecond},
		{"step 2", 2, 0, 0, 5 * time.Minute},
		{"step 9, the last", 9, 0, 0, 24 * time.Hour},
		{"step 9, earliest", 9, 0, -1, 21*time.Hour + 36*time.Minute},
		{"a Retry-After longer than the step", 1, time.Minute, 0, time.Minute},
		{"a Retry-After longer than the jittered step", 1, 5 * time.Second, -1, 5 * time.Second},
		{"a Retry-After shorter than the step", 2, time.Second, 0, 5 * time.Minute},
		{"a Retry-After on the first attempt", 0, 10 * time.Second, 0, 10 * time.Second},
		{"a negative Retry-After", 1, -time.Hour, 0, 5 * time.Second},
		{"a Retry-After at the cap", 1, MaxRetryAfter, 0, MaxRetryAfter},
		{"a Retry-After past the cap", 1, 48 * time.Hour, 0, MaxRetryAfter},
		{"past the cap, step 9 earliest", 9, 30 * time.Hour, -1, MaxRetryAfter},
		{"the cap bounds the Retry-After, not the schedule", 9, 30 * time.Hour, 0.5, 25*time.Hour + 12*time.Minute},
	} {
		if got := retryDelay(tc.step, tc.retryAfter, tc.spread); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// decide, for every branch: success, retry and giving up, a permanent
// failure, gone, a subscription ended, and the anti-flap rule's edges.
func TestDecide(t *testing.T) {
	at := policyAt
	live := target{live: true, enabled: true}
	with := func(t target, h health) target { t.health = h; return t }
	failing := func(since time.Duration, failures int) health {
		return health{failingSince: at.Add(-since), failures: failures, lastSuccessAt: at.Add(-since - time.Hour)}
	}
	conn, sub := live, live
	conn.connection = true
	sub.connection, sub.subscription = true, true
	disabled, deleted := live, live
	disabled.enabled = false
	deleted.live = false
	since := func(d time.Duration) string { return at.Add(-d).Format(time.RFC3339) }
	// an attempt at `at` at the given step
	try := func(v verdict, step int, retryIn time.Duration) tried {
		return tried{verdict: v, retryIn: retryIn, step: step, at: at, error: "it answered 418"}
	}
	oneFailure := health{failingSince: at, failures: 1}
	for _, tc := range []struct {
		name   string
		a      tried
		t      target
		spread float64
		want   decision
	}{
		// Delivered: the failures reset; the success time written at most once a minute.
		{"delivered, healthy", try(delivered, 1, 0), with(live, health{lastSuccessAt: at.Add(-30 * time.Second)}), 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at.Add(-30 * time.Second)}}},
		{"delivered, last success a minute ago", try(delivered, 1, 0), with(live, health{lastSuccessAt: at.Add(-time.Minute)}), 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at.Add(-time.Minute)}}},
		{"delivered, last success just over a minute ago", try(delivered, 1, 0), with(live, health{lastSuccessAt: at.Add(-time.Minute - 1)}), 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at}, changed: true}},
		{"delivered, never before", try(delivered, 1, 0), live, 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at}, changed: true}},
		{"delivered after failures", try(delivered, 4, 0), with(live, failing(time.Hour, 3)), 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at}, changed: true}},
		{"delivered, a failure counted but no time", try(delivered, 2, 0), with(live, health{failures: 1, lastSuccessAt: at}), 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at}, changed: true}},
		{"delivered to a disabled target: it stays disabled", try(delivered, 1, 0), with(disabled, failing(time.Hour, 3)), 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at}, changed: true}},
		{"delivered to a deleted target", try(delivered, 1, 0), deleted, 0,
			decision{status: store.DeliverySucceeded, health: health{lastSuccessAt: at}, changed: true}},

		// Retried on the schedule, with jitter and Retry-After; the failure counts.
		{"first failure", try(retry, 1, 0), live, 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Second), health: oneFailure, changed: true}},
		{"first failure, earliest jitter", try(retry, 1, 0), live, -1,
			decision{status: store.DeliveryPending, next: at.Add(4500 * time.Millisecond), health: oneFailure, changed: true}},
		{"first failure, later jitter", try(retry, 1, 0), live, 0.5,
			decision{status: store.DeliveryPending, next: at.Add(5250 * time.Millisecond), health: oneFailure, changed: true}},
		{"a failure adds to the run", try(retry, 3, 0), with(live, failing(time.Hour, 2)), 0,
			decision{status: store.DeliveryPending, next: at.Add(30 * time.Minute), health: failing(time.Hour, 3), changed: true}},
		{"a run without a start starts now", try(retry, 3, 0), with(live, health{failures: 2}), 0,
			decision{status: store.DeliveryPending, next: at.Add(30 * time.Minute), health: health{failingSince: at, failures: 3}, changed: true}},
		{"the last retry", try(retry, 9, 0), live, 0,
			decision{status: store.DeliveryPending, next: at.Add(24 * time.Hour), health: oneFailure, changed: true}},
		{"Retry-After longer than the schedule", try(retry, 1, 10*time.Minute), live, 0,
			decision{status: store.DeliveryPending, next: at.Add(10 * time.Minute), health: oneFailure, changed: true}},
		{"Retry-After shorter than the schedule", try(retry, 2, time.Second), live, 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Minute), health: oneFailure, changed: true}},
		{"Retry-After past the cap", try(retry, 1, 72*time.Hour), live, 0,
			decision{status: store.DeliveryPending, next: at.Add(MaxRetryAfter), health: oneFailure, changed: true}},
		{"a retry to a disabled target is still scheduled", try(retry, 1, 0), disabled, 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Second), health: oneFailure, changed: true}},

		// Given up: past the schedule, a permanent failure, a deleted target.
		{"past the schedule", try(retry, 10, 0), live, 0,
			decision{status: store.DeliveryFailed, health: oneFailure, changed: true}},
		{"past the schedule, a Retry-After too", try(retry, 10, time.Minute), live, 0,
			decision{status: store.DeliveryFailed, health: oneFailure, changed: true}},
		{"a permanent failure", try(failed, 1, 0), live, 0,
			decision{status: store.DeliveryFailed, health: oneFailure, changed: true}},
		{"a retry to a deleted target", try(retry, 1, 0), deleted, 0,
			decision{status: store.DeliveryFailed, health: oneFailure, changed: true}},

		// Disabled after DisableAfter and DisableMinFailures failures in a row, both.
		{"anti-flap: both exactly met", try(retry, 5, 0), with(live, failing(DisableAfter, DisableMinFailures-1)), 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Hour), health: failing(DisableAfter, DisableMinFailures),
				changed: true, disable: "no successful delivery since " + since(DisableAfter) + " (10 failed attempts)"}},
		{"anti-flap: a nanosecond short of the time", try(retry, 5, 0), with(live, failing(DisableAfter-1, 40)), 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Hour), health: failing(DisableAfter-1, 41), changed: true}},
		{"anti-flap: a failure short of the count", try(retry, 5, 0), with(live, failing(10*DisableAfter, DisableMinFailures-2)), 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Hour), health: failing(10*DisableAfter, DisableMinFailures-1), changed: true}},
		{"anti-flap: many failures, the run starting now", try(retry, 5, 0), with(live, health{failures: 50}), 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Hour), health: health{failingSince: at, failures: 51}, changed: true}},
		{"anti-flap: a permanent failure counts", try(failed, 1, 0), with(conn, failing(6*24*time.Hour, 30)), 0,
			decision{status: store.DeliveryFailed, health: failing(6*24*time.Hour, 31), changed: true,
				disable: "no successful delivery since " + since(6*24*time.Hour) + " (31 failed attempts)"}},
		{"anti-flap: the last attempt given up disables too", try(retry, 10, 0), with(live, failing(DisableAfter, 9)), 0,
			decision{status: store.DeliveryFailed, health: failing(DisableAfter, 10), changed: true,
				disable: "no successful delivery since " + since(DisableAfter) + " (10 failed attempts)"}},
		{"anti-flap: already disabled", try(retry, 5, 0), with(disabled, failing(DisableAfter, 20)), 0,
			decision{status: store.DeliveryPending, next: at.Add(5 * time.Hour), health: failing(DisableAfter, 21), changed: true}},
		{"anti-flap: deleted", try(retry, 5, 0), with(deleted, failing(DisableAfter, 20)), 0,
			decision{status: store.DeliveryFailed, health: failing(DisableAfter, 21), changed: true}},

		// Gone: disabled (or a subscription deleted), the failure not counted.
		{"410 from a webhook", try(gone, 1, 0), with(live, failing(time.Hour, 2)), 0,
			decision{status: store.DeliveryFailed, health: failing(time.Hour, 2), changed: true, disable: "the endpoint answered 410 Gone"}},
		{"a connection's destination gone", try(gone, 1, 0), conn, 0,
			decision{status: store.DeliveryFailed, changed: true, disable: "the destination is gone: it answered 418"}},
		{"gone, already disabled", try(gone, 1, 0), disabled, 0,
			decision{status: store.DeliveryFailed}},
		{"gone, deleted", try(gone, 1, 0), deleted, 0,
			decision{status: store.DeliveryFailed}},
		{"gone, a Retry-After ignored", try(gone, 1, time.Minute), live, 0,
			decision{status: store.DeliveryFailed, changed: true, disable: "the endpoint answered 410 Gone"}},
		{"a subscription gone", try(gone, 1, 0), with(sub, failing(time.Hour, 2)), 0,
			decision{status: store.DeliveryFailed, health: failing(time.Hour, 2), unsubscribe: "the destination ended the subscription: it answered 418"}},
		{"a disabled subscription gone", try(gone, 1, 0), target{live: true, subscription: true, connection: true}, 0,
			decision{status: store.DeliveryFailed, unsubscribe: "the destination ended the subscription: it answered 418"}},
		{"a deleted subscription gone", try(gone, 1, 0), target{subscription: true, connection: true, enabled: true}, 0,
			decision{status: store.DeliveryFailed}},
	} {
		got := decide(tc.a, tc.t, tc.spread)
		if !sameDecision(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

func sameDecision(a, b decision) bool {
	return a.status == b.status && a.next.Equal(b.next) && a.changed == b.changed && a.disable == b.disable &&
		a.unsubscribe == b.unsubscribe && a.health.failures == b.health.failures &&
		a.health.failingSince.Equal(b.health.failingSince) && a.health.lastSuccessAt.Equal(b.health.lastSuccessAt)
}
