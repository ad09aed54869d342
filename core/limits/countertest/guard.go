package countertest

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store/storetest"
)

// GuardConstructor makes a fresh backing for one test (a Redis key
// prefix, say) and returns an opener of guards on it. Each guard it opens
// is one as a process opens it: the guards of one name on a shared engine
// share their counts; an engine whose counts are its process's returns the
// same guard for the same name. Guards are closed when the test that
// opened them ends.
type GuardConstructor func(t *testing.T) (open func(t *testing.T, name string, limit int, window time.Duration) limits.Guard)

var guardTests = []test[GuardConstructor]{
	{"AllowsTheLimitThenRefusesUntilTheWindowEnds", testAllowsLimitThenBlocks},
	{"AddressesGroupByHostAndIPv6Slash64", testGroupsAddresses},
	{"SubjectsOfEachKindApart", testSubjectsApart},
	{"ConcurrentAttemptsOverTwoHandles", testConcurrentAttempts},
	{"GiveBack", testGiveBack},
	{"LateFailureAtAMinuteBoundary", testLateFailure},
	{"WindowsOfFifteenMinutes", testQuarterHour},
	{"GuardsOfOtherNamesApart", testNamesApart},
}

// RunGuards runs the guards' cases (the limit, then a refusal until the
// window ends; subjects and how addresses group; concurrent attempts over
// two handles; failures given back; late failures at a boundary; windows
// of other lengths; guards of other names apart) on backings newGuards
// makes, each in parallel with the others on a backing of its own:
//
//	func TestGuard(t *testing.T) { countertest.RunGuards(t, newGuards) }
func RunGuards(t *testing.T, newGuards GuardConstructor) { runAll(t, guardTests, newGuards) }

// GuardT0 is the guards' cases' present: 45 s left in its minute.
var GuardT0 = time.Date(2025, 6, 10, 14, 20, 15, 0, time.UTC)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// minuteGuards opens n handles of the guard of perMin failures a minute on
// a fresh backing.
func minuteGuards(t *testing.T, newGuards GuardConstructor, perMin, n int) []limits.Guard {
	open := newGuards(t)
	var gs []limits.Guard
	for range n {
		gs = append(gs, open(t, "auth", perMin, time.Minute))
	}
	return gs
}

// must returns a guard's Tally, failing t on the guard's error.
func must(t *testing.T) func(limits.Tally, error) limits.Tally {
	return func(tl limits.Tally, err error) limits.Tally {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
}

func takeFailure(t *testing.T, g limits.Guard, s limits.Subject, now time.Time) limits.Tally {
	t.Helper()
	return must(t)(g.Take(ctx, s, now))
}

func peekGuard(t *testing.T, g limits.Guard, s limits.Subject, now time.Time) limits.Tally {
	t.Helper()
	return must(t)(g.Peek(ctx, s, now))
}

func give(t *testing.T, g limits.Guard, s limits.Subject, tl limits.Tally) {
	t.Helper()
	if err := g.Give(ctx, s, tl); err != nil {
		t.Fatalf("Give: %v", err)
	}
}

// Fail counts a failure of address a and returns the failures left.
func Fail(t *testing.T, g limits.Guard, a netip.Addr, now time.Time) int {
	t.Helper()
	return takeFailure(t, g, limits.AddrSubject(a), now).Remaining()
}

// open checks that s may try again, with wantRemaining failures left in
// the window that ends at end (Unix seconds; 0: at the end of now's
// minute).
func open(t *testing.T, g limits.Guard, s limits.Subject, now time.Time, wantRemaining int, end int64) {
	t.Helper()
	if end == 0 {
		end = limits.WindowStarts(now)[limits.Minute] + 60
	}
	tl := peekGuard(t, g, s, now)
	if err := tl.Err(); err != nil || tl.Remaining() != wantRemaining || tl.Reset != end {
		t.Fatalf("Peek: %v, %d remaining, the window ending at %d; want allowed, %d, %d", err, tl.Remaining(), tl.Reset, wantRemaining, end)
	}
}

// Blocked checks that s is refused, by Peek and by Take (which counts
// nothing then), with a 429 naming wantRetry seconds.
func Blocked(t *testing.T, g limits.Guard, s limits.Subject, now time.Time, wantRetry int) {
	t.Helper()
	tl := peekGuard(t, g, s, now)
	fe, ok := fault.As(tl.Err())
	if !ok || fe.Code != fault.RateLimitExceeded || fe.Code.Status() != http.StatusTooManyRequests || tl.Remaining() != 0 {
		t.Fatalf("%+v: %v; want 429 RATE_LIMIT_EXCEEDED, none remaining", tl, tl.Err())
	}
	if fe.RetryAfter != wantRetry || namedWait(fe.Message) != wantRetry {
		t.Fatalf("retry_after %d, message %q; want %d in both", fe.RetryAfter, fe.Message, wantRetry)
	}
	if taken := takeFailure(t, g, s, now); taken.Allowed || taken.Count != tl.Count {
		t.Fatalf("Take on a blocked subject: %+v after %+v", taken, tl)
	}
}

// The limit's failures are counted, each reporting what is left; then the
// address is refused until its minute ends, and the next starts afresh.
// Other addresses are not affected.
func testAllowsLimitThenBlocks(t *testing.T, newGuards GuardConstructor) {
	for _, perMin := range []int{1, 3, 20} {
		t.Run(fmt.Sprint(perMin), func(t *testing.T) {
			g := minuteGuards(t, newGuards, perMin, 1)[0]
			if l := peekGuard(t, g, limits.AddrSubject(addr("192.0.2.1")), GuardT0).Limit; l != perMin {
				t.Fatalf("Limit = %d", l)
			}
			a := addr("203.0.113.7")
			s := limits.AddrSubject(a)
			for i := range perMin {
				open(t, g, s, GuardT0, perMin-i, 0)
				if left := Fail(t, g, a, GuardT0); left != perMin-i-1 {
					t.Fatalf("Take %d left %d, want %d", i+1, left, perMin-i-1)
				}
			}
			Blocked(t, g, s, GuardT0, 45)
			Blocked(t, g, s, GuardT0.Add(44*time.Second), 1)
			Blocked(t, g, s, GuardT0.Add(44*time.Second+900*time.Millisecond), 1)
			// Further failures while blocked never go below zero.
			if left := Fail(t, g, a, GuardT0.Add(time.Second)); left != 0 {
				t.Fatalf("Take while blocked left %d", left)
			}
			open(t, g, limits.AddrSubject(addr("203.0.113.8")), GuardT0, perMin, 0)
			next := GuardT0.Add(45 * time.Second)
			open(t, g, s, next, perMin, 0)
			Fail(t, g, a, next)
			if perMin > 1 {
				open(t, g, s, next, perMin-1, 0)
			} else {
				Blocked(t, g, s, next, 60)
			}
		})
	}
}

// IPv6 addresses count per /64, the unit one host usually controls; an
// IPv4-mapped address is its IPv4; IPv4 hosts are apart.
func testGroupsAddresses(t *testing.T, newGuards GuardConstructor) {
	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		{"IPv6 same /64", "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"IPv6 same /64, another spelling", "2001:db8:1:2:0:0:0:5", "2001:0db8:0001:0002::abcd", true},
		{"IPv6 next /64", "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"IPv6 same /48, other /64", "2001:db8:1:2::1", "2001:db8:1:ff::1", false},
		{"IPv6 zone ignored within /64", "fe80::1%eth0", "fe80::2%eth1", true},
		{"IPv4-mapped is IPv4", "198.51.100.9", "::ffff:198.51.100.9", true},
		{"IPv4 hosts are separate", "198.51.100.9", "198.51.100.10", false},
		{"IPv4 vs IPv6", "198.51.100.9", "2001:db8::1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := minuteGuards(t, newGuards, 2, 1)[0]
			a, b := addr(tc.a), addr(tc.b)
			Fail(t, g, a, GuardT0)
			Fail(t, g, a, GuardT0)
			Blocked(t, g, limits.AddrSubject(a), GuardT0, 45)
			if blocked := !peekGuard(t, g, limits.AddrSubject(b), GuardT0).Allowed; blocked != tc.same {
				t.Fatalf("%s blocked=%v after %s failed twice; want %v", tc.b, blocked, tc.a, tc.same)
			}
		})
	}
	// The failures of one /64's addresses add up.
	g := minuteGuards(t, newGuards, 4, 1)[0]
	for i := range 4 {
		Fail(t, g, addr(fmt.Sprintf("2001:db8:aa:bb::%x", i+1)), GuardT0)
	}
	Blocked(t, g, limits.AddrSubject(addr("2001:db8:aa:bb::1234")), GuardT0, 45)
}

// An address, a key and an email address are subjects apart, even where
// their text is the same, so that one guard may hold all three; an email
// address is one subject whatever its case and the spaces around it.
func testSubjectsApart(t *testing.T, newGuards GuardConstructor) {
	g := minuteGuards(t, newGuards, 1, 1)[0]
	const key = "svc_0123456789012345678901234567890123456789"
	takeFailure(t, g, limits.KeySubject(key), GuardT0)
	takeFailure(t, g, limits.EmailSubject(key), GuardT0)
	open(t, g, limits.AddrSubject(addr("203.0.113.9")), GuardT0, 1, 0)
	Blocked(t, g, limits.KeySubject(key), GuardT0, 45)
	Blocked(t, g, limits.EmailSubject(key), GuardT0, 45)
	open(t, g, limits.KeySubject(key[:len(key)-1]+"X"), GuardT0, 1, 0)
	takeFailure(t, g, limits.EmailSubject(" Owner@Example.com\t"), GuardT0)
	Blocked(t, g, limits.EmailSubject("owner@example.com"), GuardT0, 45)
	if tl := takeFailure(t, g, limits.KeySubject(key), GuardT0); tl.Err() == nil || !strings.Contains(tl.Err().Error(), "API key") {
		t.Errorf("a key's refusal %v does not say it is about the key", tl.Err())
	}
}

// Of attempts taken at once over two handles, exactly the room left are
// allowed, and a failure given back among them is one more allowed.
func testConcurrentAttempts(t *testing.T, newGuards GuardConstructor) {
	gs := minuteGuards(t, newGuards, 50, 2)
	s := limits.AddrSubject(addr("203.0.113.50"))
	first := takeFailure(t, gs[0], s, GuardT0) // an attempt that turns out right
	var allowed atomic.Int64
	storetest.Together(16, func(i int) {
		g := gs[i%2]
		if i == 0 { // gives back before its own attempts, which use the place
			if err := g.Give(ctx, s, first); err != nil {
				t.Error(err)
			}
		}
		for range 10 {
			tl, err := g.Take(ctx, s, GuardT0)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := g.Peek(ctx, s, GuardT0); err != nil {
				t.Error(err)
			}
			if tl.Allowed {
				allowed.Add(1)
			}
		}
	})
	// 160 attempts against the 49 places left and the one given back.
	if allowed.Load() != 50 {
		t.Fatalf("%d attempts allowed, want 50", allowed.Load())
	}
	for _, g := range gs {
		Blocked(t, g, s, GuardT0, 45)
	}
}

// A failure given back frees its place in its own window only, and never
// takes the count below zero.
func testGiveBack(t *testing.T, newGuards GuardConstructor) {
	g := minuteGuards(t, newGuards, 2, 1)[0]
	s := limits.AddrSubject(addr("203.0.113.60"))
	first := takeFailure(t, g, s, GuardT0)
	takeFailure(t, g, s, GuardT0)
	Blocked(t, g, s, GuardT0, 45)
	give(t, g, s, first)
	open(t, g, s, GuardT0, 1, 0)
	// A failure of the past minute given back in this one changes nothing.
	next := GuardT0.Add(time.Minute)
	takeFailure(t, g, s, next)
	takeFailure(t, g, s, next)
	give(t, g, s, first)
	Blocked(t, g, s, next, 45)
	// Nor does one given back twice, or for a subject with no failures.
	g = minuteGuards(t, newGuards, 1, 1)[0]
	tl := takeFailure(t, g, s, GuardT0)
	give(t, g, s, tl)
	give(t, g, s, tl)
	give(t, g, limits.AddrSubject(addr("192.0.2.1")), tl)
	takeFailure(t, g, s, GuardT0)
	Blocked(t, g, s, GuardT0, 45)
}

// The API reads the clock before it authenticates (a database lookup) and
// takes the failure after, with that time, so a failure stamped in one
// minute can be taken after the next minute's failures. It counts in the
// current minute: taking the address back to the past minute would let
// it through again.
func testLateFailure(t *testing.T, newGuards GuardConstructor) {
	g := minuteGuards(t, newGuards, 3, 1)[0]
	a := addr("203.0.113.77")
	s := limits.AddrSubject(a)
	next := time.Date(2025, 6, 10, 14, 21, 0, 0, time.UTC)
	for range 3 {
		Fail(t, g, a, next)
	}
	Blocked(t, g, s, next, 60)
	if tl := takeFailure(t, g, s, next.Add(-time.Millisecond)); tl.Allowed || tl.Reset != next.Unix()+60 {
		t.Fatalf("a late failure: %+v, want refused by the minute from %v", tl, next)
	}
	Blocked(t, g, s, next.Add(time.Second), 59)
	if tl := peekGuard(t, g, s, next.Add(-time.Millisecond)); tl.Allowed || tl.Start != next.Unix() {
		t.Fatalf("a late Peek: %+v, want the current minute, full", tl)
	}
}

// A guard of 15-minute windows (the dashboard's per email address) counts
// in the UTC quarter hour, and refuses until it ends.
func testQuarterHour(t *testing.T, newGuards GuardConstructor) {
	g := newGuards(t)(t, "email", 2, 15*time.Minute)
	s := limits.EmailSubject("owner@example.com")
	end := time.Date(2025, 6, 10, 14, 30, 0, 0, time.UTC)
	later := GuardT0.Add(5 * time.Minute)
	takeFailure(t, g, s, GuardT0)
	open(t, g, s, later, 1, end.Unix())
	takeFailure(t, g, s, later)
	Blocked(t, g, s, later, int(end.Sub(later)/time.Second))
	open(t, g, s, end, 2, end.Add(15*time.Minute).Unix())
}

// Guards of other names keep their counts apart; guards of one name, as
// other processes open them, share them.
func testNamesApart(t *testing.T, newGuards GuardConstructor) {
	openGuard := newGuards(t)
	auth, signin := openGuard(t, "auth", 1, time.Minute), openGuard(t, "signin", 1, time.Minute)
	s := limits.AddrSubject(addr("203.0.113.90"))
	takeFailure(t, auth, s, GuardT0)
	Blocked(t, auth, s, GuardT0, 45)
	open(t, signin, s, GuardT0, 1, 0)
	Blocked(t, openGuard(t, "auth", 1, time.Minute), s, GuardT0, 45)
}
