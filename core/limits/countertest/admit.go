package countertest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store/storetest"
)

// AdmitConstructor makes a fresh backing for one test and returns an
// opener of what one process opens on it: a counter and, from the same
// engine, its guard of failed authentications with limit failures a
// minute, as core/app pairs them. An engine whose counts are its
// process's returns the same pair every time.
type AdmitConstructor func(t *testing.T) (open func(t *testing.T, limit int) (limits.Counter, limits.Guard))

var admitTests = []test[AdmitConstructor]{
	{"AdmitRefusesWhileTheAddressIsOutOfFailures", testAdmitRefuses},
	{"ConcurrentFailuresAndAdmits", testConcurrentAdmits},
}

// RunAdmit runs the cases of limits.Admit and limits.Guard's Screen, the steps of
// an authenticated request, on a counter and its guard:
//
//	func TestAdmit(t *testing.T) { countertest.RunAdmit(t, newPair) }
func RunAdmit(t *testing.T, newPair AdmitConstructor) { runAll(t, admitTests, newPair) }

var admitLimits = [3]int{5, 100, 1000}

// process is what one process opens: a counter and its guard.
type process struct {
	c limits.Counter
	g limits.Guard
}

// useAt is a request of the suite's account, n ms into GuardT0's second.
func useAt(n int) limits.Use {
	return limits.Use{AccountID: "acct_admit", KeyID: "key_admit", At: GuardT0.Add(time.Duration(n) * time.Millisecond)}
}

func admit(t *testing.T, c limits.Counter, g limits.Guard, a string, n int) (limits.Tally, limits.Decision) {
	t.Helper()
	tl, d, err := limits.Admit(ctx, c, g, limits.AddrSubject(addr(a)), useAt(n), admitLimits)
	if err != nil {
		t.Fatal(err)
	}
	return tl, d
}

func counted(t *testing.T, c limits.Counter) int {
	t.Helper()
	d, err := c.Peek(ctx, "acct_admit", admitLimits, GuardT0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return d.Count[limits.Minute]
}

// An address with failures left is admitted and its request counted, as
// Take counts it, up to the account's limit; once the address is out of
// failures its requests are refused with the guard's 429 and count
// nothing, at this process and at another, which also screens the address
// out from then on, without credentials; the next minute admits it again.
func testAdmitRefuses(t *testing.T, newPair AdmitConstructor) {
	open := newPair(t)
	c1, g1 := open(t, 3)
	c2, g2 := open(t, 3)
	const a, other = "203.0.113.80", "203.0.113.81"
	s := limits.AddrSubject(addr(a))
	if tl, d := admit(t, c1, g1, a, 0); !tl.Allowed || !d.Allowed || d.Count[limits.Minute] != 1 {
		t.Fatalf("the first request: %+v %+v; want admitted and counted once", tl, d)
	}
	for range 3 {
		takeFailure(t, g1, s, GuardT0)
	}
	if tl := takeFailure(t, g1, s, GuardT0); tl.Allowed {
		t.Fatalf("a failure past the limit: %+v", tl)
	}
	if tl := must(t)(g1.Screen(ctx, s, GuardT0)); tl.Allowed || tl.Reset != GuardT0.Unix()+45 || tl.Err() == nil {
		t.Fatalf("Screen of the address at the process that saw it refused: %+v; want refused until its minute ends", tl)
	}
	for i, p := range []process{{c1, g1}, {c2, g2}} {
		tl, _ := admit(t, p.c, p.g, a, 1)
		if tl.Allowed || tl.Count != 3 || tl.Reset != GuardT0.Unix()+45 || namedWait(tl.Err().Error()) != 45 {
			t.Fatalf("process %d: Admit of the address out of failures: %+v (%v); want refused with 3 counted, 45 s to wait", i+1, tl, tl.Err())
		}
		if tl := must(t)(p.g.Screen(ctx, s, GuardT0)); tl.Allowed {
			t.Fatalf("process %d: Screen of the address after Admit refused it: %+v", i+1, tl)
		}
	}
	if n := counted(t, c1); n != 1 {
		t.Fatalf("the account's minute counts %d after refused requests, want 1", n)
	}
	for i := 2; i <= 5; i++ {
		if tl, d := admit(t, c2, g2, other, i); !tl.Allowed || !d.Allowed || d.Count[limits.Minute] != i {
			t.Fatalf("request %d from another address: %+v %+v; want admitted and counted", i, tl, d)
		}
	}
	if tl, d := admit(t, c1, g1, other, 6); !tl.Allowed || d.Allowed || d.Err() == nil {
		t.Fatalf("a request past the account's limit: %+v %+v; want the address admitted and the windows' 429", tl, d)
	}
	if n := counted(t, c2); n != 5 {
		t.Fatalf("the account's minute counts %d, want its limit, 5", n)
	}
	next := GuardT0.Add(time.Minute)
	if tl := must(t)(g1.Screen(ctx, s, next)); !tl.Allowed {
		t.Fatalf("Screen in the next minute: %+v; want allowed", tl)
	}
	tl, d, err := limits.Admit(ctx, c1, g1, s, limits.Use{AccountID: "acct_admit", At: next}, admitLimits)
	if err != nil || !tl.Allowed || !d.Allowed {
		t.Fatalf("Admit in the next minute: %+v %+v %v; want admitted", tl, d, err)
	}
}

// Failures and valid requests of one address at once, over two processes:
// exactly the guard's limit of failures is taken, every admitted request
// is counted once and no refused one, and once the failures are in, the
// address is refused.
func testConcurrentAdmits(t *testing.T, newPair AdmitConstructor) {
	open := newPair(t)
	const limit = 20
	c1, g1 := open(t, limit)
	c2, g2 := open(t, limit)
	const a = "203.0.113.90"
	s := limits.AddrSubject(addr(a))
	var failures, admitted atomic.Int64
	storetest.Together(8, func(i int) {
		c, g := c1, g1
		if i%2 == 1 {
			c, g = c2, g2
		}
		for n := range 10 {
			if i < 4 {
				tl, err := g.Take(ctx, s, GuardT0)
				if err != nil {
					t.Error(err)
					return
				}
				if tl.Allowed {
					failures.Add(1)
				}
				continue
			}
			tl, d, err := limits.Admit(ctx, c, g, s, useAt(n), [3]int{1000, 1000, 1000})
			if err != nil {
				t.Error(err)
				return
			}
			if tl.Allowed != d.Allowed {
				t.Errorf("Admit: the address %v, the windows %v; a request the address passes is counted here", tl.Allowed, d.Allowed)
			}
			if tl.Allowed {
				admitted.Add(1)
			}
		}
	})
	if failures.Load() != limit {
		t.Fatalf("%d failures taken of 40 at once, want the limit, %d", failures.Load(), limit)
	}
	d, err := c1.Peek(ctx, "acct_admit", [3]int{1000, 1000, 1000}, GuardT0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if d.Count[limits.Minute] != int(admitted.Load()) {
		t.Fatalf("the account's minute counts %d, but %d requests were admitted", d.Count[limits.Minute], admitted.Load())
	}
	for i, p := range []process{{c1, g1}, {c2, g2}} {
		if tl, _ := admit(t, p.c, p.g, a, 20); tl.Allowed {
			t.Fatalf("process %d: Admit once the failures are in: %+v; want refused", i+1, tl)
		}
	}
}
