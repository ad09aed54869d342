package limits

// These tests are inside the package so that the memory bound can be
// checked with a small maxEntries.

import (
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
)

var guardT0 = time.Date(2025, 6, 10, 14, 20, 15, 0, time.UTC) // 45 s left in the minute

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// minuteGuard is the guard of failed authentications per minute.
func minuteGuard(perMin int) *AuthGuard { return NewAuthGuard(perMin, time.Minute) }

// fail counts a failure of a from the guard and returns the failures left.
func fail(g *AuthGuard, a netip.Addr, now time.Time) int {
	return g.Take(AddrSubject(a), now).Remaining()
}

func checkOK(t *testing.T, g *AuthGuard, a netip.Addr, now time.Time, wantRemaining int) {
	t.Helper()
	tl := g.Peek(AddrSubject(a), now)
	if err := tl.Err(); err != nil {
		t.Fatalf("Peek(%v) = %v, want allowed with %d remaining", a, err, wantRemaining)
	}
	if tl.Remaining() != wantRemaining {
		t.Fatalf("Peek(%v) remaining %d, want %d", a, tl.Remaining(), wantRemaining)
	}
	if want := WindowStarts(now)[Minute] + 60; tl.Reset != want {
		t.Fatalf("Peek(%v) reset %d, want %d", a, tl.Reset, want)
	}
}

func checkBlocked(t *testing.T, g *AuthGuard, a netip.Addr, now time.Time, wantRetry int) {
	t.Helper()
	tl := g.Peek(AddrSubject(a), now)
	checkRefusal(t, tl, wantRetry)
	// Take refuses too, and counts nothing.
	if taken := g.Take(AddrSubject(a), now); taken.Allowed || taken.Count != tl.Count {
		t.Fatalf("Take on a blocked address: %+v after %+v", taken, tl)
	}
}

func checkRefusal(t *testing.T, tl Tally, wantRetry int) {
	t.Helper()
	fe, ok := fault.As(tl.Err())
	if !ok || fe.Code != fault.RateLimitExceeded || fe.Code.Status() != http.StatusTooManyRequests {
		t.Fatalf("%+v: %v; want 429 RATE_LIMIT_EXCEEDED", tl, tl.Err())
	}
	if tl.Remaining() != 0 {
		t.Fatalf("blocked with %d remaining", tl.Remaining())
	}
	if fe.RetryAfter != wantRetry {
		t.Fatalf("retry_after %d, want %d", fe.RetryAfter, wantRetry)
	}
	m := regexp.MustCompile(`retry after (\d+) seconds`).FindStringSubmatch(fe.Message)
	if m == nil {
		t.Fatalf("message %q names no wait", fe.Message)
	}
	if n, _ := strconv.Atoi(m[1]); n != fe.RetryAfter {
		t.Fatalf("message names %d seconds, retry_after is %d", n, fe.RetryAfter)
	}
}

func TestAuthGuardAllowsLimitThenBlocks(t *testing.T) {
	for _, perMin := range []int{1, 3, 20} {
		t.Run(fmt.Sprint(perMin), func(t *testing.T) {
			g := minuteGuard(perMin)
			if l := g.Peek(AddrSubject(addr("192.0.2.1")), guardT0).Limit; l != perMin {
				t.Fatalf("Limit = %d", l)
			}
			a := addr("203.0.113.7")
			for i := range perMin {
				checkOK(t, g, a, guardT0, perMin-i)
				if left := fail(g, a, guardT0); left != perMin-i-1 {
					t.Fatalf("Take %d left %d left, want %d", i+1, left, perMin-i-1)
				}
			}
			checkBlocked(t, g, a, guardT0, 45)
			checkBlocked(t, g, a, guardT0.Add(44*time.Second), 1)
			checkBlocked(t, g, a, guardT0.Add(44*time.Second+900*time.Millisecond), 1)
			// Further failures while blocked never go below zero.
			if left := fail(g, a, guardT0.Add(time.Second)); left != 0 {
				t.Fatalf("Take while blocked left %d", left)
			}
			// Another address is not affected.
			checkOK(t, g, addr("203.0.113.8"), guardT0, perMin)
			// The next minute starts afresh.
			next := guardT0.Add(45 * time.Second)
			checkOK(t, g, a, next, perMin)
			fail(g, a, next)
			if perMin > 1 {
				checkOK(t, g, a, next, perMin-1)
			} else {
				checkBlocked(t, g, a, next, 60)
			}
		})
	}
}

func TestAuthGuardGroupsAddresses(t *testing.T) {
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
			g := minuteGuard(2)
			a, b := addr(tc.a), addr(tc.b)
			fail(g, a, guardT0)
			fail(g, a, guardT0)
			checkBlocked(t, g, a, guardT0, 45)
			if blocked := !g.Peek(AddrSubject(b), guardT0).Allowed; blocked != tc.same {
				t.Fatalf("%s blocked=%v after %s failed twice; want %v", tc.b, blocked, tc.a, tc.same)
			}
		})
	}
}

func TestAuthGuardFailuresFromOneGroupAccumulate(t *testing.T) {
	g := minuteGuard(4)
	for i := range 4 {
		fail(g, addr(fmt.Sprintf("2001:db8:aa:bb::%x", i+1)), guardT0)
	}
	checkBlocked(t, g, addr("2001:db8:aa:bb::1234"), guardT0, 45)
}

// TestAuthGuardMemoryIsBounded: an attack from very many addresses does not
// grow the table past maxEntries; past windows are swept first.
func TestAuthGuardMemoryIsBounded(t *testing.T) {
	g := minuteGuard(3)
	g.maxEntries = 100
	for i := range 1000 {
		fail(g, netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), guardT0)
		if len(g.m) > g.maxEntries {
			t.Fatalf("after %d addresses the table holds %d, bound is %d", i+1, len(g.m), g.maxEntries)
		}
	}

	// Entries of a past minute are dropped first; current ones survive.
	g = minuteGuard(1)
	g.maxEntries = 10
	for i := range 5 {
		fail(g, netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), guardT0.Add(-time.Minute))
	}
	blocked := addr("192.0.2.1")
	fail(g, blocked, guardT0)
	for i := range 4 {
		fail(g, netip.AddrFrom4([4]byte{10, 2, 0, byte(i)}), guardT0)
	}
	if len(g.m) != 10 {
		t.Fatalf("table holds %d, want 10", len(g.m))
	}
	fail(g, addr("192.0.2.99"), guardT0) // the 11th: sweeps the 5 stale ones
	if len(g.m) != 6 {
		t.Fatalf("after the sweep the table holds %d, want the 6 current addresses", len(g.m))
	}
	checkBlocked(t, g, blocked, guardT0, 45)
}

// TestAuthGuardConcurrent: of attempts taken at once, exactly the limit
// are allowed, and a failure given back is one more allowed.
func TestAuthGuardConcurrent(t *testing.T) {
	g := minuteGuard(50)
	s := AddrSubject(addr("203.0.113.50"))
	var allowed, given atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 10 {
				tl := g.Take(s, guardT0)
				g.Peek(s, guardT0)
				if tl.Allowed {
					allowed.Add(1)
					if i == 0 && j == 0 { // this attempt turned out right
						g.Give(s, tl)
						given.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	// 160 attempts against 50 allowed, one of which was given back.
	if allowed.Load() != 51 || given.Load() != 1 {
		t.Fatalf("%d attempts allowed (%d given back), want 51 (1)", allowed.Load(), given.Load())
	}
	checkBlocked(t, g, addr("203.0.113.50"), guardT0, 45)
}

// TestAuthGuardGiveBack: a failure given back frees its place in its own
// window only, and never takes the count below zero.
func TestAuthGuardGiveBack(t *testing.T) {
	g := minuteGuard(2)
	a := addr("203.0.113.60")
	s := AddrSubject(a)
	first := g.Take(s, guardT0)
	g.Take(s, guardT0)
	checkBlocked(t, g, a, guardT0, 45)
	g.Give(s, first)
	checkOK(t, g, a, guardT0, 1)
	// A failure of the past minute given back in this one changes nothing.
	next := guardT0.Add(time.Minute)
	g.Take(s, next)
	g.Take(s, next)
	g.Give(s, first)
	checkBlocked(t, g, a, next, 45)
	// Nor does one given back twice, or for a subject with no failures.
	g = minuteGuard(1)
	tl := g.Take(s, guardT0)
	g.Give(s, tl)
	g.Give(s, tl)
	g.Give(AddrSubject(addr("192.0.2.1")), tl)
	g.Take(s, guardT0)
	checkBlocked(t, g, a, guardT0, 45)
}

// TestAuthGuardLateFailureAtMinuteBoundary: the API reads the clock before
// it authenticates (a database lookup) and takes the failure after, with
// that time, so a failure stamped in one minute can be taken after the
// next minute's failures. It counts in the current minute: taking the
// address back to the past minute would let it through again.
func TestAuthGuardLateFailureAtMinuteBoundary(t *testing.T) {
	g := minuteGuard(3)
	a := addr("203.0.113.77")
	next := time.Date(2025, 6, 10, 14, 21, 0, 0, time.UTC)
	for range 3 {
		fail(g, a, next)
	}
	checkBlocked(t, g, a, next, 60)
	fail(g, a, next.Add(-time.Millisecond)) // began before the boundary, failed after
	checkBlocked(t, g, a, next.Add(time.Second), 59)
}

// TestAuthGuardOverflowKeepsBlockedAddresses: when the table is full of
// current addresses, sweep clears it all, so an attacker who fails from
// maxEntries addresses (or /64s: 100,000 is under a /47 of IPv6) within a
// minute unblocks every address, its own included, and may go on guessing.
// The memory bound must not cost the guard: a blocked address stays
// blocked for the rest of its minute.
func TestAuthGuardOverflowKeepsBlockedAddresses(t *testing.T) {
	g := minuteGuard(2)
	g.maxEntries = 100
	attacker := addr("2001:db8:aaaa::1")
	fail(g, attacker, guardT0)
	fail(g, attacker, guardT0)
	checkBlocked(t, g, attacker, guardT0, 45)
	for i := range 200 {
		// Other /64s of the same attacker.
		fail(g, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0xbb, 0xbb, byte(i >> 8), byte(i), 15: 1}), guardT0)
	}
	checkBlocked(t, g, attacker, guardT0.Add(time.Second), 44)
}

// TestSubjects: an email address is one subject whatever its case and the
// spaces around it, and subjects of different kinds never meet, so a key
// and an address may share a guard.
func TestSubjects(t *testing.T) {
	if EmailSubject(" Owner@Example.com\t") != EmailSubject("owner@example.com") {
		t.Error("an email address in capitals or between spaces is another subject")
	}
	long := strings.Repeat("a", 64<<10)
	if EmailSubject(long+"@example.com") == EmailSubject(long+"@example.org") {
		t.Error("two long email addresses are one subject")
	}
	const key = "svc_0123456789012345678901234567890123456789"
	if KeySubject(key) == EmailSubject(key) || KeySubject(key) == KeySubject(key[:len(key)-1]+"X") {
		t.Error("a key is the subject of another key or of an email address")
	}
	g := minuteGuard(1)
	a := addr("203.0.113.9")
	g.Take(KeySubject(key), guardT0)
	g.Take(EmailSubject(key), guardT0)
	checkOK(t, g, a, guardT0, 1)
	if g.Peek(KeySubject(key), guardT0).Allowed {
		t.Error("the key's failure was not counted")
	}
}
