package limits

// These tests are inside the package so that the memory bound can be
// checked with a small maxAddrs.

import (
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
)

var guardT0 = time.Date(2025, 6, 10, 14, 20, 15, 0, time.UTC) // 45 s left in the minute

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func checkOK(t *testing.T, g *AuthGuard, a netip.Addr, now time.Time, wantRemaining int) {
	t.Helper()
	rem, reset, err := g.Check(a, now)
	if err != nil {
		t.Fatalf("Check(%v) = %v, want allowed with %d remaining", a, err, wantRemaining)
	}
	if rem != wantRemaining {
		t.Fatalf("Check(%v) remaining %d, want %d", a, rem, wantRemaining)
	}
	if want := WindowStarts(now)[Minute] + 60; reset != want {
		t.Fatalf("Check(%v) reset %d, want %d", a, reset, want)
	}
}

func checkBlocked(t *testing.T, g *AuthGuard, a netip.Addr, now time.Time, wantRetry int) {
	t.Helper()
	rem, _, err := g.Check(a, now)
	fe, ok := fault.As(err)
	if !ok || fe.Code != fault.RateLimitExceeded || fe.Code.Status() != http.StatusTooManyRequests {
		t.Fatalf("Check(%v) = %d, %v; want 429 RATE_LIMIT_EXCEEDED", a, rem, err)
	}
	if rem != 0 {
		t.Fatalf("blocked with %d remaining", rem)
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
			g := NewAuthGuard(perMin)
			if g.Limit() != perMin {
				t.Fatalf("Limit() = %d", g.Limit())
			}
			a := addr("203.0.113.7")
			for i := range perMin {
				checkOK(t, g, a, guardT0, perMin-i)
				if left := g.Fail(a, guardT0); left != perMin-i-1 {
					t.Fatalf("Fail %d returned %d left, want %d", i+1, left, perMin-i-1)
				}
			}
			checkBlocked(t, g, a, guardT0, 45)
			checkBlocked(t, g, a, guardT0.Add(44*time.Second), 1)
			checkBlocked(t, g, a, guardT0.Add(44*time.Second+900*time.Millisecond), 1)
			// Further failures while blocked never go below zero.
			if left := g.Fail(a, guardT0.Add(time.Second)); left != 0 {
				t.Fatalf("Fail while blocked returned %d", left)
			}
			// Another address is not affected.
			checkOK(t, g, addr("203.0.113.8"), guardT0, perMin)
			// The next minute starts afresh.
			next := guardT0.Add(45 * time.Second)
			checkOK(t, g, a, next, perMin)
			g.Fail(a, next)
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
			g := NewAuthGuard(2)
			a, b := addr(tc.a), addr(tc.b)
			g.Fail(a, guardT0)
			g.Fail(a, guardT0)
			checkBlocked(t, g, a, guardT0, 45)
			_, _, err := g.Check(b, guardT0)
			if blocked := err != nil; blocked != tc.same {
				t.Fatalf("%s blocked=%v after %s failed twice; want %v", tc.b, blocked, tc.a, tc.same)
			}
		})
	}
}

func TestAuthGuardFailuresFromOneGroupAccumulate(t *testing.T) {
	g := NewAuthGuard(4)
	for i := range 4 {
		g.Fail(addr(fmt.Sprintf("2001:db8:aa:bb::%x", i+1)), guardT0)
	}
	checkBlocked(t, g, addr("2001:db8:aa:bb::1234"), guardT0, 45)
}

// TestAuthGuardMemoryIsBounded: an attack from very many addresses does not
// grow the table past maxAddrs; past windows are swept first.
func TestAuthGuardMemoryIsBounded(t *testing.T) {
	g := NewAuthGuard(3)
	g.maxAddrs = 100
	for i := range 1000 {
		g.Fail(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), guardT0)
		if len(g.m) > g.maxAddrs {
			t.Fatalf("after %d addresses the table holds %d, bound is %d", i+1, len(g.m), g.maxAddrs)
		}
	}

	// Entries of a past minute are dropped first; current ones survive.
	g = NewAuthGuard(1)
	g.maxAddrs = 10
	for i := range 5 {
		g.Fail(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), guardT0.Add(-time.Minute))
	}
	blocked := addr("192.0.2.1")
	g.Fail(blocked, guardT0)
	for i := range 4 {
		g.Fail(netip.AddrFrom4([4]byte{10, 2, 0, byte(i)}), guardT0)
	}
	if len(g.m) != 10 {
		t.Fatalf("table holds %d, want 10", len(g.m))
	}
	g.Fail(addr("192.0.2.99"), guardT0) // the 11th: sweeps the 5 stale ones
	if len(g.m) != 6 {
		t.Fatalf("after the sweep the table holds %d, want the 6 current addresses", len(g.m))
	}
	checkBlocked(t, g, blocked, guardT0, 45)
}

func TestAuthGuardConcurrent(t *testing.T) {
	g := NewAuthGuard(50)
	a := addr("203.0.113.50")
	var zero atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 10 {
				if g.Fail(a, guardT0) == 0 {
					zero.Add(1)
				}
				g.Check(a, guardT0)
			}
		})
	}
	wg.Wait()
	// 160 failures against 50 allowed: the 50th and the 110 after it left none.
	if zero.Load() != 111 {
		t.Fatalf("%d failures left none, want 111", zero.Load())
	}
	checkBlocked(t, g, a, guardT0, 45)
}

// TestAuthGuardLateFailureAtMinuteBoundary: the API reads the clock before
// it authenticates (a database lookup) and records the failure after, with
// that time, so a failure stamped in one minute can be recorded after the
// next minute's failures. Fail resets the count whenever the window start
// differs, backwards too: the late failure takes the address back to the
// past minute, and the blocked address is let through again in the
// current one.
func TestAuthGuardLateFailureAtMinuteBoundary(t *testing.T) {
	g := NewAuthGuard(3)
	a := addr("203.0.113.77")
	next := time.Date(2025, 6, 10, 14, 21, 0, 0, time.UTC)
	for range 3 {
		g.Fail(a, next)
	}
	checkBlocked(t, g, a, next, 60)
	g.Fail(a, next.Add(-time.Millisecond)) // began before the boundary, failed after
	checkBlocked(t, g, a, next.Add(time.Second), 59)
}

// TestAuthGuardOverflowKeepsBlockedAddresses: when the table is full of
// current addresses, sweep clears it all, so an attacker who fails from
// maxAddrs addresses (or /64s: 100,000 is under a /47 of IPv6) within a
// minute unblocks every address, its own included, and may go on guessing.
// The memory bound must not cost the guard: a blocked address stays
// blocked for the rest of its minute.
func TestAuthGuardOverflowKeepsBlockedAddresses(t *testing.T) {
	g := NewAuthGuard(2)
	g.maxAddrs = 100
	attacker := addr("2001:db8:aaaa::1")
	g.Fail(attacker, guardT0)
	g.Fail(attacker, guardT0)
	checkBlocked(t, g, attacker, guardT0, 45)
	for i := range 200 {
		// Other /64s of the same attacker.
		g.Fail(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0xbb, 0xbb, byte(i >> 8), byte(i), 15: 1}), guardT0)
	}
	checkBlocked(t, g, attacker, guardT0.Add(time.Second), 44)
}
