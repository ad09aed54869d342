// Package countertest is the suite every rate-limit counter engine
// passes, as every store passes core/store/storetest: its counter
// (limits.Counter, Run) and its guards of failed authentications
// (limits.Guard, RunGuards; see guard.go). The counter's cases are one
// per rule of the contract (all or none, exactly the room under
// concurrent requests, windows of the UTC minute, hour and day that roll,
// Peek, the decision's fields at the edges, key usage in the store,
// counts that outlive a handle), each on a fresh backing. An engine's
// tests hand Run a constructor:
//
//	func TestCounter(t *testing.T) { countertest.Run(t, newCounter) }
//
// Each case is a subtest named after its rule (for example
// TestCounter/ConcurrentTakesAdmitExactlyTheRoom), and its failures say
// which rule broke. Where a case needs several processes' worth of
// counters, it opens several handles on the backing; a Shared engine
// must then give each the same counts, and one that is not is tested on
// one handle.
package countertest

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store"
)

// Constructor makes a fresh backing for one test (a store file, a Redis
// database) and returns the store that key usage reaches and an opener
// of handles on the backing. Each handle is a counter as one process
// opens it; now is that process's present, for an engine that restores
// counts when it opens (the memory counter restores those current at
// now). Handles are closed when the test that opened them ends.
type Constructor func(t *testing.T) (st store.Store, open func(t *testing.T, now time.Time) limits.Counter)

// A test is one rule's case, run on backings that a constructor C makes.
type test[C any] struct {
	name string
	run  func(t *testing.T, newBacking C)
}

var tests = []test[Constructor]{
	{"TakeAdmitsExactlyTheLimit", testTakeAdmitsExactlyTheLimit},
	{"RefusedCountsInNoWindow", testRefusedCountsInNoWindow},
	{"ConcurrentTakesAdmitExactlyTheRoom", testConcurrentTakes},
	{"WindowsOfTheUTCMinuteHourAndDayRoll", testWindowsRoll},
	{"LateRequestNeverMovesAWindowBack", testLateRequest},
	{"ConcurrentRequestsAcrossAMinuteBoundary", testConcurrentAtMinuteBoundary},
	{"PeekCountsNothingAndSeesTakes", testPeek},
	{"DecisionAtTheEdges", testDecisionAtTheEdges},
	{"KeyUsageReachesTheStore", testKeyUsage},
	{"CountsOutliveTheHandle", testCountsOutliveTheHandle},
}

// Run runs every case on backings newCounter makes, each in parallel with
// the others on a backing of its own.
func Run(t *testing.T, newCounter Constructor) { runAll(t, tests, newCounter) }

func runAll[C any](t *testing.T, cases []test[C], newBacking C) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newBacking)
		})
	}
}

var (
	ctx = context.Background()
	// t0 is the suite's present, well inside a minute, an hour and a day:
	// 2025-06-10 14:20:30 UTC.
	t0 = time.Date(2025, 6, 10, 14, 20, 30, 0, time.UTC)
	// tokyo and nepal are zones whose days and hours are not UTC's.
	tokyo = time.FixedZone("JST", 9*3600)
	nepal = time.FixedZone("NPT", 5*3600+45*60)
)

const (
	big = math.MaxInt
	// concurrency is how many requests the concurrency cases race.
	concurrency = 32
)

// backing is one case's backing: its store and handles.
type backing struct {
	st   store.Store
	open func(t *testing.T, now time.Time) limits.Counter
}

func newBacking(t *testing.T, newCounter Constructor, accounts ...string) backing {
	t.Helper()
	st, open := newCounter(t)
	for _, id := range accounts {
		newAccount(t, st, id, "")
	}
	return backing{st, open}
}

// handles are n handles, opened at now, on b when the engine shares its
// counts (the first's Shared says), else the first alone n times.
func (b backing) handles(t *testing.T, now time.Time, n int) []limits.Counter {
	t.Helper()
	c := b.open(t, now)
	hs := []limits.Counter{c}
	for len(hs) < n {
		if c.Shared() {
			hs = append(hs, b.open(t, now))
		} else {
			hs = append(hs, c)
		}
	}
	return hs
}

// newAccount makes an account with the key key_<id>, of the client
// cli_<id> when client is set (the account is then an agency).
func newAccount(t *testing.T, st store.Store, id string, client string) {
	t.Helper()
	typ := store.AccountStandard
	if client != "" {
		typ = store.AccountAgency
	}
	if err := st.CreateAccount(ctx, store.Account{ID: id, Name: id, Tier: "starter", Type: typ, CreatedAt: t0}); err != nil {
		t.Fatalf("CreateAccount(%s): %v", id, err)
	}
	if client != "" {
		if err := st.CreateClient(ctx, store.Client{ID: client, AccountID: id, Name: client, CreatedAt: t0}); err != nil {
			t.Fatalf("CreateClient(%s): %v", client, err)
		}
	}
	if err := st.CreateKey(ctx, store.Key{ID: "key_" + id, AccountID: id, ClientID: client, Name: "key",
		KeyHash: []byte("kh-" + id), SecretHash: []byte("sh-" + id), Hint: "svc_…", CreatedAt: t0}); err != nil {
		t.Fatalf("CreateKey(key_%s): %v", id, err)
	}
}

// use is a request of account's key at at.
func use(account string, at time.Time) limits.Use {
	return limits.Use{AccountID: account, KeyID: "key_" + account, At: at}
}

func take(t *testing.T, c limits.Counter, u limits.Use, l [3]int) limits.Decision {
	t.Helper()
	d, err := c.Take(ctx, u, l)
	if err != nil {
		t.Fatalf("Take(%s at %v): %v", u.AccountID, u.At, err)
	}
	return d
}

func peek(t *testing.T, c limits.Counter, account string, l [3]int, now time.Time) limits.Decision {
	t.Helper()
	d, err := c.Peek(ctx, account, l, now)
	if err != nil {
		t.Fatalf("Peek(%s at %v): %v", account, now, err)
	}
	return d
}

// run runs c's background work until the returned stop, which waits for
// Run to return; stop runs when the test ends, if not before.
func run(t *testing.T, c limits.Counter) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.Run(runCtx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// resets are the ends of the windows that hold at, Unix seconds.
func resets(at time.Time) [3]int64 {
	s := limits.WindowStarts(at)
	return [3]int64{s[0] + 60, s[1] + 3600, s[2] + 86400}
}

func counts(n int) [3]int { return [3]int{n, n, n} }
