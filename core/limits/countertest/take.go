package countertest

import (
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store/storetest"
)

// Requests one after another are allowed up to the tightest window's
// limit, each counted in every window, and refused past it; other
// accounts are not affected.
func testTakeAdmitsExactlyTheLimit(t *testing.T, newCounter Constructor) {
	b := newBacking(t, newCounter, "acct", "other")
	c := b.open(t, t0)
	for i, tc := range []struct {
		name   string
		limits [3]int
		n      int
	}{
		{"minute binds", [3]int{3, 100, 100}, 3},
		{"hour binds", [3]int{100, 4, 100}, 4},
		{"day binds", [3]int{100, 100, 5}, 5},
		{"all equal", [3]int{7, 7, 7}, 7},
		{"limit one", [3]int{1, 1, 1}, 1},
		{"starter", limits.Tier{PerMinute: 60, PerHour: 1000, PerDay: 10000}.Limits(), 60},
	} {
		// Each limit on a day of its own, so that the windows start empty.
		day := t0.AddDate(0, 0, i)
		for i := 1; i <= tc.n; i++ {
			d := take(t, c, use("acct", day), tc.limits)
			if !d.Allowed || d.Count != counts(i) || d.Err() != nil {
				t.Fatalf("%s: request %d of %d: %+v (Err %v), want allowed with %d in every window", tc.name, i, tc.n, d, d.Err(), i)
			}
		}
		for range 3 {
			if d := take(t, c, use("acct", day), tc.limits); d.Allowed || d.Count != counts(tc.n) {
				t.Fatalf("%s: a request past the limit: %+v, want refused, the counts left at %d", tc.name, d, tc.n)
			}
		}
		if d := take(t, c, use("other", day), tc.limits); !d.Allowed || d.Count != counts(1) {
			t.Fatalf("%s: another account's first request: %+v", tc.name, d)
		}
	}
}

// A request refused by one window is counted in none of the others
// (decisions.md 4: a 429 does not count).
func testRefusedCountsInNoWindow(t *testing.T, newCounter Constructor) {
	b := newBacking(t, newCounter, "a", "b")
	c := b.open(t, t0)
	l := [3]int{2, 10, 100}
	for range 2 {
		take(t, c, use("a", t0), l)
	}
	for range 50 {
		if d := take(t, c, use("a", t0), l); d.Allowed || d.Count != counts(2) {
			t.Fatalf("the minute full: %+v, want refused and [2 2 2]", d)
		}
	}
	if d := take(t, c, use("a", t0.Add(time.Minute)), l); !d.Allowed || d.Count != [3]int{1, 3, 3} {
		t.Fatalf("the next minute: %+v, want allowed with [1 3 3]: the hour and day hold only the 2 allowed", d)
	}
	// The hour full: the minute does not count the refused requests.
	l = [3]int{100, 3, 100}
	for range 3 {
		take(t, c, use("b", t0), l)
	}
	for range 10 {
		take(t, c, use("b", t0.Add(time.Second)), l)
	}
	if d := take(t, c, use("b", t0.Add(time.Second)), l); d.Allowed || d.Count != counts(3) {
		t.Fatalf("the hour full: %+v, want refused and [3 3 3]", d)
	}
}

// Of 32 requests raced against room for k, exactly min(32, k) are
// allowed, spread over two handles of a shared engine; every allowed one
// is given a count of its own.
func testConcurrentTakes(t *testing.T, newCounter Constructor) {
	b := newBacking(t, newCounter, "tight", "roomy")
	hs := b.handles(t, t0, 2)
	for account, room := range map[string]int{"tight": concurrency * 5 / 8, "roomy": concurrency + 8} {
		l := [3]int{room, 1000, 1000}
		var allowed, refused atomic.Int64
		var given [concurrency + 1]atomic.Int32
		storetest.Together(concurrency, func(i int) {
			d, err := hs[i%2].Take(ctx, use(account, t0), l)
			switch {
			case err != nil:
				t.Errorf("Take %d: %v", i, err)
			case d.Allowed:
				allowed.Add(1)
				if n := d.Count[limits.Minute]; n >= 1 && n <= concurrency {
					given[n].Add(1)
				} else {
					t.Errorf("an allowed request counted %d in its minute", n)
				}
			default:
				refused.Add(1)
				if d.Count[limits.Minute] != room {
					t.Errorf("a refused request found %d in its minute, want it full (%d)", d.Count[limits.Minute], room)
				}
			}
		})
		want := min(room, concurrency)
		if allowed.Load() != int64(want) || refused.Load() != int64(concurrency-want) {
			t.Errorf("room for %d: %d allowed, %d refused; want exactly %d allowed", room, allowed.Load(), refused.Load(), want)
		}
		for n := 1; n <= want; n++ {
			if given[n].Load() != 1 {
				t.Errorf("room for %d: the count %d was given to %d requests, want 1", room, n, given[n].Load())
			}
		}
		for i, h := range hs {
			if d := peek(t, h, account, l, t0); d.Count != counts(want) {
				t.Errorf("room for %d: handle %d sees %v, want %d in every window", room, i, d.Count, want)
			}
		}
	}
}

// A window starts at the UTC minute, hour or day of the request's time
// (whatever its zone) and counts from zero when the next starts; a full
// window opens again at the next one, and not before.
func testWindowsRoll(t *testing.T, newCounter Constructor) {
	cases := []struct {
		name          string
		before, after time.Time
		want          [3]int // counts after one request at before and one at after
	}{
		{"same minute", time.Date(2025, 6, 10, 14, 20, 0, 0, time.UTC), time.Date(2025, 6, 10, 14, 20, 59, 999_999_999, time.UTC), [3]int{2, 2, 2}},
		{"minute boundary", time.Date(2025, 6, 10, 14, 20, 59, 999_999_999, time.UTC), time.Date(2025, 6, 10, 14, 21, 0, 0, time.UTC), [3]int{1, 2, 2}},
		{"hour boundary", time.Date(2025, 6, 10, 14, 59, 59, 0, time.UTC), time.Date(2025, 6, 10, 15, 0, 0, 0, time.UTC), [3]int{1, 1, 2}},
		{"day boundary", time.Date(2025, 6, 10, 23, 59, 59, 0, time.UTC), time.Date(2025, 6, 11, 0, 0, 0, 0, time.UTC), [3]int{1, 1, 1}},
		{"next hour, same minute number", time.Date(2025, 6, 10, 14, 20, 0, 0, time.UTC), time.Date(2025, 6, 10, 15, 20, 0, 0, time.UTC), [3]int{1, 1, 2}},
		{"next day, same hour", time.Date(2025, 6, 10, 14, 20, 0, 0, time.UTC), time.Date(2025, 6, 11, 14, 20, 0, 0, time.UTC), [3]int{1, 1, 1}},
		// 08:30 in Tokyo on the 11th is 23:30 UTC on the 10th.
		{"the UTC day, not the zone's", time.Date(2025, 6, 10, 1, 0, 0, 0, time.UTC), time.Date(2025, 6, 11, 8, 30, 0, 0, tokyo), [3]int{1, 1, 2}},
		// 20:10 in Nepal is 14:25 UTC.
		{"the UTC hour, not the zone's", time.Date(2025, 6, 10, 14, 0, 0, 0, time.UTC), time.Date(2025, 6, 10, 20, 10, 0, 0, nepal), [3]int{1, 2, 2}},
	}
	var accounts []string
	for i := range cases {
		accounts = append(accounts, fmt.Sprintf("acct_%d", i))
	}
	b := newBacking(t, newCounter, append(accounts, "full")...)
	c := b.open(t, t0)
	l := [3]int{big, big, big}
	for i, tc := range cases {
		take(t, c, use(accounts[i], tc.before), l)
		d := take(t, c, use(accounts[i], tc.after), l)
		if d.Count != tc.want || d.Reset != resets(tc.after) {
			t.Errorf("%s: counts %v, resets %v; want %v, %v", tc.name, d.Count, d.Reset, tc.want, resets(tc.after))
		}
	}
	l = [3]int{5, big, big}
	start := time.Date(2025, 6, 10, 14, 20, 0, 0, time.UTC)
	for range 5 {
		take(t, c, use("full", start), l)
	}
	if d := take(t, c, use("full", start.Add(59*time.Second+999*time.Millisecond)), l); d.Allowed {
		t.Fatal("a full minute allowed a request before it ended")
	}
	if d := take(t, c, use("full", start.Add(time.Minute)), l); !d.Allowed || d.Count != [3]int{1, 6, 6} {
		t.Fatalf("at the next minute: %+v, want allowed with [1 6 6]", d)
	}
}

// The API reads the clock before Take, so at a window boundary a request
// stamped just before it can be counted after requests stamped just
// after it. Such a late request counts in the new window rather than
// taking the account back to the old one: were the new window emptied,
// its counts would be lost and more than its limit pass.
func testLateRequest(t *testing.T, newCounter Constructor) {
	b := newBacking(t, newCounter, "minute", "hour", "day")
	c := b.open(t, t0)
	// 15:00:00 is a minute and an hour boundary; midnight is all three.
	for _, tc := range []struct {
		name   string
		next   time.Time // the start of the new window
		limits [3]int
		w      int // the window that fills
	}{
		{"minute", time.Date(2025, 6, 10, 14, 21, 0, 0, time.UTC), [3]int{2, big, big}, limits.Minute},
		{"hour", time.Date(2025, 6, 10, 15, 0, 0, 0, time.UTC), [3]int{big, 2, big}, limits.Hour},
		{"day", time.Date(2025, 6, 11, 0, 0, 0, 0, time.UTC), [3]int{big, big, 2}, limits.Day},
	} {
		for i := range 2 {
			if d := take(t, c, use(tc.name, tc.next.Add(time.Duration(i)*time.Microsecond)), tc.limits); !d.Allowed {
				t.Fatalf("%s: request %d of the new window refused: %+v", tc.name, i+1, d)
			}
		}
		late := take(t, c, use(tc.name, tc.next.Add(-time.Millisecond)), tc.limits)
		if late.Allowed || late.Count[tc.w] != 2 || late.Reset != resets(tc.next) {
			t.Errorf("%s: the late request: %+v; want refused by the new window, which holds 2 of 2 and ends at %v", tc.name, late, resets(tc.next))
		}
		if d := take(t, c, use(tc.name, tc.next.Add(time.Second)), tc.limits); d.Allowed || d.Count[tc.w] != 2 {
			t.Errorf("%s: after a late request, the new window that holds 2 of 2: allowed=%v, count %d; want refused, the count kept",
				tc.name, d.Allowed, d.Count[tc.w])
		}
	}
}

// Requests stamped with a clock that crosses a minute boundary race to
// Take, as API requests do, over two handles of a shared engine: however
// they interleave, the minute after the boundary never lets more than its
// limit through.
func testConcurrentAtMinuteBoundary(t *testing.T, newCounter Constructor) {
	const limit, rounds = 50, 20
	boundary := time.Date(2025, 6, 10, 14, 21, 0, 0, time.UTC)
	var accounts []string
	for r := range rounds {
		accounts = append(accounts, fmt.Sprintf("acct_%d", r))
	}
	b := newBacking(t, newCounter, accounts...)
	hs := b.handles(t, boundary, 2)
	for _, account := range accounts {
		var tick atomic.Int64
		var after atomic.Int64 // allowed requests stamped in the new minute
		storetest.Together(16, func(g int) {
			for range 40 {
				// The shared clock crosses the boundary after 200 readings;
				// a goroutine may be descheduled between reading it and Take.
				at := boundary.Add(time.Duration(tick.Add(1)-200) * time.Microsecond)
				runtime.Gosched()
				d, err := hs[g%2].Take(ctx, use(account, at), [3]int{limit, big, big})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed && !at.Before(boundary) {
					after.Add(1)
				}
			}
		})
		if after.Load() > limit {
			t.Fatalf("%s: %d requests stamped in the minute after the boundary were allowed; its limit is %d", account, after.Load(), limit)
		}
	}
}

// Peek is the decision a request would see, counting nothing, and sees
// what Take counted (on another handle of a shared engine).
func testPeek(t *testing.T, newCounter Constructor) {
	b := newBacking(t, newCounter, "a")
	hs := b.handles(t, t0, 2)
	taker, peeker := hs[0], hs[1]
	l := [3]int{2, 10, 100}
	if d := peek(t, peeker, "a", l, t0); d.Count != counts(0) || !d.Allowed || d.Reset != resets(t0) || d.Limit != l {
		t.Fatalf("Peek of an account with no requests: %+v", d)
	}
	for range 2 {
		take(t, taker, use("a", t0), l)
	}
	for range 3 {
		if d := peek(t, peeker, "a", l, t0.Add(time.Second)); d.Count != counts(2) || d.Allowed || d.Reset != resets(t0) {
			t.Fatalf("Peek: %+v, want 2 in each window and the minute full", d)
		}
	}
	if d := peek(t, peeker, "a", l, t0.Add(time.Minute)); d.Count != [3]int{0, 2, 2} || !d.Allowed || d.Reset != resets(t0.Add(time.Minute)) {
		t.Fatalf("Peek in the next minute: %+v, want [0 2 2] and room", d)
	}
	if d := take(t, taker, use("a", t0.Add(2*time.Second)), l); d.Allowed || d.Count != counts(2) {
		t.Fatalf("peeking made room in the full minute: %+v", d)
	}
}

var retryAfterRE = regexp.MustCompile(`retry after (\d+) seconds`)

// namedWait is the wait a message names, in seconds; -1 if none.
func namedWait(message string) int {
	n := -1
	if m := retryAfterRE.FindStringSubmatch(message); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	return n
}

// A decision carries the limits, every window's count (the request's
// included when allowed), when each window ends, and, when refused, a
// 429 whose retry_after is the whole seconds until every full window has
// ended, at least 1; a request at that time passes.
func testDecisionAtTheEdges(t *testing.T, newCounter Constructor) {
	b := newBacking(t, newCounter, "a")
	c := b.open(t, t0)
	l := [3]int{3, 5, 7}
	at := func(h, m, s int, ms ...int) time.Time {
		d := time.Date(2025, 6, 10, h, m, s, 0, time.UTC)
		if len(ms) > 0 {
			d = d.Add(time.Duration(ms[0]) * time.Millisecond)
		}
		return d
	}
	for _, st := range []struct {
		at      time.Time
		allowed bool
		count   [3]int
		retry   int // the refusal's retry_after
		window  string
	}{
		{at(14, 20, 30), true, [3]int{1, 1, 1}, 0, ""},
		{at(14, 20, 30), true, [3]int{2, 2, 2}, 0, ""},
		{at(14, 20, 30), true, [3]int{3, 3, 3}, 0, ""}, // allowed at the limit
		{at(14, 20, 30), false, [3]int{3, 3, 3}, 30, "3 requests per minute"},
		{at(14, 20, 59, 999), false, [3]int{3, 3, 3}, 1, "per minute"}, // under a second left
		{at(14, 21, 0), true, [3]int{1, 4, 4}, 0, ""},
		{at(14, 21, 1), true, [3]int{2, 5, 5}, 0, ""},
		{at(14, 21, 2), false, [3]int{2, 5, 5}, 38*60 + 58, "5 requests per hour"},
		{at(15, 0, 0), true, [3]int{1, 1, 6}, 0, ""},
		{at(15, 0, 1), true, [3]int{2, 2, 7}, 0, ""},
		{at(15, 0, 1), false, [3]int{2, 2, 7}, 9*3600 - 1, "7 requests per day"},
		{at(15, 0, 2), false, [3]int{2, 2, 7}, 9*3600 - 2, "per day"},
		{at(15, 0, 2).Add(9*time.Hour - 2*time.Second), true, [3]int{1, 1, 1}, 0, ""}, // at retry_after
	} {
		d := take(t, c, use("a", st.at), l)
		what := fmt.Sprintf("a request at %s", st.at.Format("15:04:05.000 Jan 2"))
		if d.Allowed != st.allowed || d.Count != st.count || d.Limit != l || d.Reset != resets(st.at) || !d.Now.Equal(st.at) {
			t.Fatalf("%s: %+v; want allowed=%v, counts %v, limits %v, resets %v, now its time", what, d, st.allowed, st.count, l, resets(st.at))
		}
		if st.allowed {
			if d.Err() != nil {
				t.Fatalf("%s: allowed with Err %v", what, d.Err())
			}
			continue
		}
		fe, ok := fault.As(d.Err())
		if !ok || fe.Code != fault.RateLimitExceeded || fe.Code.Status() != http.StatusTooManyRequests {
			t.Fatalf("%s: Err %v, want a 429 %s", what, d.Err(), fault.RateLimitExceeded)
		}
		if d.RetryAfter() != st.retry || fe.RetryAfter != st.retry {
			t.Errorf("%s: RetryAfter %d, the fault's %d; want %d", what, d.RetryAfter(), fe.RetryAfter, st.retry)
		}
		if namedWait(fe.Message) != st.retry || !strings.Contains(fe.Message, st.window) {
			t.Errorf("%s: message %q, want it to name %q and %d seconds", what, fe.Message, st.window, st.retry)
		}
	}
}
