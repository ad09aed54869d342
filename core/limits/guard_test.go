package limits_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/limits/countertest"
)

// TestAuthGuard runs the suite every guard passes on the embedded guard:
// its guards of one name are one, as a process's are.
func TestAuthGuard(t *testing.T) {
	countertest.RunGuards(t, func(t *testing.T) func(*testing.T, string, int, time.Duration) limits.Guard {
		guards := map[string]limits.Guard{}
		return func(_ *testing.T, name string, limit int, window time.Duration) limits.Guard {
			if guards[name] == nil {
				guards[name] = limits.MemoryGuards(name, limit, window)
			}
			return guards[name]
		}
	})
}

var guardT0 = countertest.GuardT0 // 45 s left in the minute

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestAuthGuardMemoryIsBounded: an attack from very many addresses does not
// grow the table past its bound; past windows are swept first.
func TestAuthGuardMemoryIsBounded(t *testing.T) {
	g := limits.NewAuthGuard(3, time.Minute)
	g.Bound(100)
	for i := range 1000 {
		countertest.Fail(t, g, netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), guardT0)
		if g.Size() > 100 {
			t.Fatalf("after %d addresses the table holds %d, bound is 100", i+1, g.Size())
		}
	}

	// Entries of a past minute are dropped first; current ones survive.
	g = limits.NewAuthGuard(1, time.Minute)
	g.Bound(10)
	for i := range 5 {
		countertest.Fail(t, g, netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), guardT0.Add(-time.Minute))
	}
	blocked := addr("192.0.2.1")
	countertest.Fail(t, g, blocked, guardT0)
	for i := range 4 {
		countertest.Fail(t, g, netip.AddrFrom4([4]byte{10, 2, 0, byte(i)}), guardT0)
	}
	if g.Size() != 10 {
		t.Fatalf("table holds %d, want 10", g.Size())
	}
	countertest.Fail(t, g, addr("192.0.2.99"), guardT0) // the 11th: sweeps the 5 stale ones
	if g.Size() != 6 {
		t.Fatalf("after the sweep the table holds %d, want the 6 current addresses", g.Size())
	}
	countertest.Blocked(t, g, limits.AddrSubject(blocked), guardT0, 45)
}

// TestAuthGuardOverflowKeepsBlockedAddresses: when the table is full of
// current addresses, sweep clears it all, so an attacker who fails from
// maxEntries addresses (or /64s: 100,000 is under a /47 of IPv6) within a
// minute unblocks every address, its own included, and may go on guessing.
// The memory bound must not cost the guard: a blocked address stays
// blocked for the rest of its minute.
func TestAuthGuardOverflowKeepsBlockedAddresses(t *testing.T) {
	g := limits.NewAuthGuard(2, time.Minute)
	g.Bound(100)
	attacker := addr("2001:db8:aaaa::1")
	countertest.Fail(t, g, attacker, guardT0)
	countertest.Fail(t, g, attacker, guardT0)
	countertest.Blocked(t, g, limits.AddrSubject(attacker), guardT0, 45)
	for i := range 200 {
		// Other /64s of the same attacker.
		countertest.Fail(t, g, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0xbb, 0xbb, byte(i >> 8), byte(i), 15: 1}), guardT0)
	}
	countertest.Blocked(t, g, limits.AddrSubject(attacker), guardT0.Add(time.Second), 44)
}

// TestSubjects: an email address is one subject whatever its case and the
// spaces around it, two long ones are two, and a key is no email address.
func TestSubjects(t *testing.T) {
	if limits.EmailSubject(" Owner@Example.com\t") != limits.EmailSubject("owner@example.com") {
		t.Error("an email address in capitals or between spaces is another subject")
	}
	long := strings.Repeat("a", 64<<10)
	if limits.EmailSubject(long+"@example.com") == limits.EmailSubject(long+"@example.org") {
		t.Error("two long email addresses are one subject")
	}
	const key = "svc_0123456789012345678901234567890123456789"
	if limits.KeySubject(key) == limits.EmailSubject(key) || limits.KeySubject(key) == limits.KeySubject(key[:len(key)-1]+"X") {
		t.Error("a key is the subject of another key or of an email address")
	}
}
