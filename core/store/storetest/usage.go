package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// loadWindows is what LoadWindows lists from since, by account and kind.
func loadWindows(t *testing.T, s store.Store, since time.Time) map[string]store.Window {
	t.Helper()
	ws, err := s.LoadWindows(ctx, since)
	must(t, err, "LoadWindows")
	out := map[string]store.Window{}
	for _, w := range ws {
		k := w.AccountID + "/" + w.Window
		if _, ok := out[k]; ok {
			t.Fatalf("LoadWindows lists %s twice: one window is kept per account and kind", k)
		}
		out[k] = w
	}
	return out
}

// A window is kept per account and kind; a save replaces it only with a
// later start or, for the same start, a higher count; LoadWindows lists
// those that start at since or later.
func testSaveCountsNeverLowers(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	minute := t0.Truncate(time.Minute)
	day := t0.Truncate(24 * time.Hour)
	save := func(ws ...store.Window) { t.Helper(); must(t, s.SaveCounts(ctx, ws, nil), "SaveCounts") }
	save(store.Window{AccountID: "a", Window: "minute", Start: minute.In(elsewhere), Count: 5},
		store.Window{AccountID: "a", Window: "day", Start: day, Count: 50},
		store.Window{AccountID: "b", Window: "day", Start: day.Add(-24 * time.Hour), Count: 9})
	got := loadWindows(t, s, day)
	want := map[string]store.Window{
		"a/minute": {AccountID: "a", Window: "minute", Start: minute, Count: 5},
		"a/day":    {AccountID: "a", Window: "day", Start: day, Count: 50},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadWindows(since today) = %+v, want %+v (yesterday's left out, times in UTC)", got, want)
	}
	if got := loadWindows(t, s, time.Time{}); len(got) != 3 {
		t.Errorf("LoadWindows(since the zero time) lists %d windows, want every one (3)", len(got))
	}
	steps := []struct {
		save  store.Window
		start time.Time
		count int64
		why   string
	}{
		{store.Window{Start: minute, Count: 3}, minute, 5, "a lower count of the same window does not replace it"},
		{store.Window{Start: minute, Count: 8}, minute, 8, "a higher count of the same window replaces it"},
		{store.Window{Start: minute.Add(time.Minute), Count: 1}, minute.Add(time.Minute), 1, "a later window replaces it, even with a lower count"},
		{store.Window{Start: minute, Count: 100}, minute.Add(time.Minute), 1, "an earlier window never replaces it"},
	}
	for _, st := range steps {
		st.save.AccountID, st.save.Window = "a", "minute"
		save(st.save)
		if w := loadWindows(t, s, day)["a/minute"]; !w.Start.Equal(st.start) || w.Count != st.count {
			t.Errorf("%s: saved %+v, kept %+v", st.why, st.save, w)
		}
	}
	// One save holding a window more than once keeps the latest of them.
	next := minute.Add(2 * time.Minute)
	save(store.Window{AccountID: "a", Window: "minute", Start: next, Count: 4},
		store.Window{AccountID: "a", Window: "minute", Start: next, Count: 7},
		store.Window{AccountID: "a", Window: "minute", Start: minute.Add(time.Minute), Count: 90})
	if w := loadWindows(t, s, day)["a/minute"]; !w.Start.Equal(next) || w.Count != 7 {
		t.Errorf("one save holding the window three times kept %+v, want the latest start's highest count (7 at %v)", w, next)
	}
}

// Saves that race, in any order, keep the highest count of the latest
// window, and the per-key usage they add up to.
func testSaveCountsUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	newAccount(t, s, "acct_1", store.AccountStandard)
	must(t, s.CreateKey(ctx, newKey("key_1", "acct_1", "", t0)), "CreateKey")
	minute := t0.Truncate(time.Minute)
	hour := t0.Truncate(time.Hour)
	counts := rand.New(rand.NewPCG(1, 2)).Perm(concurrency)
	Together(concurrency, func(i int) {
		n := int64(counts[i] + 1)
		err := hs[i%2].SaveCounts(ctx, []store.Window{{AccountID: "acct_1", Window: "minute", Start: minute, Count: n}},
			[]store.KeyUsage{{KeyID: "key_1", AccountID: "acct_1", Hour: hour, Count: 1, LastUsed: t0.Add(time.Duration(n) * time.Second)}})
		if err != nil {
			t.Errorf("SaveCounts %d: %v", i, err)
		}
	})
	if w := loadWindows(t, s, minute)["acct_1/minute"]; w.Count != concurrency {
		t.Errorf("after %d saves that raced: the window counts %d, want the highest, %d", concurrency, w.Count, concurrency)
	}
	us, err := s.UsageSince(ctx, "acct_1", hour)
	must(t, err, "UsageSince")
	if len(us) != 1 || us[0].Count != concurrency {
		t.Errorf("after %d saves that raced, adding 1 each: usage %+v, want one hour counting %d", concurrency, us, concurrency)
	}
	if k, err := s.Key(ctx, "key_1"); err != nil || !k.LastUsedAt.Equal(t0.Add(concurrency*time.Second)) {
		t.Errorf("after saves that raced: LastUsedAt %v, %v; want the latest, %v", k.LastUsedAt, err, t0.Add(concurrency*time.Second))
	}
}

// Usage adds up per key and hour; UsageSince lists an account's hours from
// since on, oldest first (by key within an hour), with the key's client;
// a key's last use only moves forward.
func testUsageAddsUp(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	for _, k := range []store.Key{newKey("key_a", "acct_1", "", t0), newKey("key_b", "acct_1", "cli_1", t0), newKey("key_x", "acct_2", "", t0)} {
		must(t, s.CreateKey(ctx, k), "CreateKey")
	}
	hour := t0.Truncate(time.Hour)
	use := func(key, account, client string, h time.Time, n int64, last time.Time) store.KeyUsage {
		return store.KeyUsage{KeyID: key, AccountID: account, ClientID: client, Hour: h, Count: n, LastUsed: last}
	}
	must(t, s.SaveCounts(ctx, nil, []store.KeyUsage{use("key_a", "acct_1", "", hour, 3, t0), use("key_x", "acct_2", "", hour, 9, t0)}), "SaveCounts")
	must(t, s.SaveCounts(ctx, nil, []store.KeyUsage{use("key_a", "acct_1", "", hour, 4, t0.Add(-time.Hour)),
		use("key_b", "acct_1", "cli_1", hour.In(elsewhere), 2, t0), use("key_a", "acct_1", "", hour.Add(time.Hour), 1, t0.Add(time.Hour)),
		use("key_a", "acct_1", "", hour.Add(-2*time.Hour), 6, t0)}), "SaveCounts")

	got, err := s.UsageSince(ctx, "acct_1", hour)
	must(t, err, "UsageSince")
	want := []store.KeyUsage{
		{KeyID: "key_a", AccountID: "acct_1", Hour: hour, Count: 7},
		{KeyID: "key_b", AccountID: "acct_1", ClientID: "cli_1", Hour: hour, Count: 2},
		{KeyID: "key_a", AccountID: "acct_1", Hour: hour.Add(time.Hour), Count: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UsageSince (the account's, from since, oldest first; counts added up):\n got  %+v\n want %+v", got, want)
	}
	if k, err := s.Key(ctx, "key_a"); err != nil || !k.LastUsedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("LastUsedAt %v, %v; want the latest use, %v (an earlier one never moves it back)", k.LastUsedAt, err, t0.Add(time.Hour))
	}
	if us, err := s.UsageSince(ctx, "acct_none", time.Time{}); err != nil || len(us) != 0 {
		t.Errorf("UsageSince of an unknown account: %+v, %v", us, err)
	}
	for i := range 3 {
		must(t, s.SaveCounts(ctx, nil, []store.KeyUsage{use("key_a", "acct_1", "", hour, int64(i+1), t0)}), "SaveCounts")
	}
	if got, _ := s.UsageSince(ctx, "acct_1", hour); len(got) != 3 || got[0].Count != 7+6 {
		t.Errorf("after adding 6 more: %+v", got)
	}
	// One save holding a key's hour twice adds both.
	must(t, s.SaveCounts(ctx, nil, []store.KeyUsage{use("key_x", "acct_2", "", hour, 2, t0.Add(2*time.Hour)),
		use("key_x", "acct_2", "", hour, 3, t0.Add(time.Hour))}), "SaveCounts")
	if got, _ := s.UsageSince(ctx, "acct_2", hour); len(got) != 1 || got[0].Count != 9+2+3 {
		t.Errorf("after one save holding the hour twice (2 and 3): %+v, want %d", got, 9+2+3)
	}
	if k, err := s.Key(ctx, "key_x"); err != nil || !k.LastUsedAt.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("LastUsedAt %v, %v; want the save's latest use, %v", k.LastUsedAt, err, t0.Add(2*time.Hour))
	}
}

// ListUsage pages the counts a filter selects (an account's own keys,
// one client's, all, one key's; the hours from From up to To), oldest hour
// first and by key within it, neither skipping nor repeating a row however
// small the pages; a cursor it did not make is ErrMalformed.
func testListUsage(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	newClient(t, s, "acct_1", "cli_2")
	hour := t0.Truncate(time.Hour)
	var saved []store.KeyUsage
	for i, k := range []struct{ id, account, client string }{{"key_a", "acct_1", ""}, {"key_b", "acct_1", "cli_1"},
		{"key_c", "acct_1", "cli_2"}, {"key_d", "acct_1", ""}, {"key_x", "acct_2", ""}} {
		must(t, s.CreateKey(ctx, newKey(k.id, k.account, k.client, t0)), "CreateKey")
		for h := range 3 {
			saved = append(saved, store.KeyUsage{KeyID: k.id, AccountID: k.account, ClientID: k.client,
				Hour: hour.Add(time.Duration(h-1) * time.Hour), Count: int64(10*i + h + 1), LastUsed: t0})
		}
	}
	must(t, s.SaveCounts(ctx, nil, saved), "SaveCounts")
	all := func(f store.UsageFilter, limit int) []store.KeyUsage {
		t.Helper()
		var out []store.KeyUsage
		f.Limit = limit
		for pages := 0; ; pages++ {
			if pages > len(saved) {
				t.Fatalf("ListUsage(%+v): more pages than rows", f)
			}
			us, next, err := s.ListUsage(ctx, f)
			must(t, err, "ListUsage(%+v)", f)
			if len(us) > limit {
				t.Fatalf("ListUsage(%+v): %d rows on a page of %d", f, len(us), limit)
			}
			out = append(out, us...)
			if next == "" {
				return out
			}
			f.Cursor = next
		}
	}
	want := func(f store.UsageFilter) []store.KeyUsage {
		var out []store.KeyUsage
		for _, u := range saved {
			if u.AccountID == f.AccountID && (f.AllClients || u.ClientID == f.ClientID) && (f.KeyID == "" || u.KeyID == f.KeyID) &&
				!u.Hour.Before(f.From) && (f.To.IsZero() || u.Hour.Before(f.To)) {
				u.LastUsed = time.Time{}
				out = append(out, u)
			}
		}
		slices.SortFunc(out, func(a, b store.KeyUsage) int {
			if c := a.Hour.Compare(b.Hour); c != 0 {
				return c
			}
			return strings.Compare(a.KeyID, b.KeyID)
		})
		return out
	}
	for _, f := range []store.UsageFilter{
		{AccountID: "acct_1", AllClients: true},
		{AccountID: "acct_1"},
		{AccountID: "acct_1", ClientID: "cli_2"},
		{AccountID: "acct_1", AllClients: true, KeyID: "key_b"},
		{AccountID: "acct_1", AllClients: true, From: hour, To: hour.Add(time.Hour)},
		{AccountID: "acct_1", AllClients: true, From: hour.Add(-time.Minute).In(elsewhere)},
		{AccountID: "acct_2", AllClients: true, To: hour},
		{AccountID: "acct_none", AllClients: true},
	} {
		w := want(f)
		for _, limit := range []int{1, 2, 5, 100} {
			if got := all(f, limit); !reflect.DeepEqual(got, w) {
				t.Errorf("ListUsage(%+v) in pages of %d:\n got  %+v\n want %+v", f, limit, got, w)
			}
		}
	}
	if us, _, err := s.ListUsage(ctx, store.UsageFilter{AccountID: "acct_1", AllClients: true}); err != nil || len(us) != 12 {
		t.Errorf("ListUsage with no limit: %d rows, %v; want 12, the default page being 20", len(us), err)
	}
	for _, c := range []string{"x", store.UsageCursor(hour, "key_a") + "=", store.DeliveryCursor("key_a")} {
		if _, _, err := s.ListUsage(ctx, store.UsageFilter{AccountID: "acct_1", Cursor: c}); !errors.Is(err, store.ErrMalformed) {
			t.Errorf("ListUsage with the cursor %q: %v, want ErrMalformed", c, err)
		}
	}
}

// starts are the starts of the minute, hour and day that hold at.
func starts(at time.Time) [3]time.Time {
	day := at.UTC().Truncate(24 * time.Hour)
	return [3]time.Time{at.Truncate(time.Minute).UTC(), at.Truncate(time.Hour).UTC(), day}
}

// take counts one request of an account's key (of a client, or none) at
// at, stopping the test on an error.
func take(t *testing.T, s store.Store, account, key, client string, at time.Time, limits [3]int64) (bool, store.WindowCounts) {
	t.Helper()
	ok, w, err := s.TakeWindows(ctx, store.WindowTake{AccountID: account, Starts: starts(at), Limits: limits,
		Usage: store.KeyUsage{KeyID: key, ClientID: client, Hour: at.Truncate(time.Hour), LastUsed: at}})
	must(t, err, "TakeWindows(%s at %v)", account, at)
	return ok, w
}

// TakeWindows counts a request in every window and its key's usage, or,
// when one window is full, nothing anywhere; a window of an earlier start
// holds none and one of a later start is never moved back; PeekWindows
// finds what a take would, counting nothing; and the windows are those
// LoadWindows lists.
func testTakeWindows(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	must(t, s.CreateKey(ctx, newKey("key_a", "acct_1", "cli_1", t0)), "CreateKey")
	must(t, s.CreateKey(ctx, newKey("key_x", "acct_2", "", t0)), "CreateKey")
	limits := [3]int64{2, 3, 100}
	at := t0.In(elsewhere)
	steps := []struct {
		at      time.Time
		counted bool
		counts  [3]int64
		why     string
	}{
		{at, true, [3]int64{1, 1, 1}, "the first request"},
		{at.Add(time.Second), true, [3]int64{2, 2, 2}, "the second"},
		{at.Add(2 * time.Second), false, [3]int64{2, 2, 2}, "the minute is full: the hour and the day count nothing either"},
		{at.Add(3 * time.Second), false, [3]int64{2, 2, 2}, "and again"},
		{at.Add(time.Minute), true, [3]int64{1, 3, 3}, "the next minute holds none; the hour and the day only the two counted"},
		{at.Add(time.Minute + time.Second), false, [3]int64{1, 3, 3}, "the hour is full: the minute counts nothing"},
	}
	for _, st := range steps {
		ok, w := take(t, s, "acct_1", "key_a", "cli_1", st.at, limits)
		if ok != st.counted || w.Counts != st.counts || w.Starts != starts(st.at) {
			t.Fatalf("%s: TakeWindows at %v = %v, %+v; want %v, counts %v from %v", st.why, st.at, ok, w, st.counted, st.counts, starts(st.at))
		}
	}
	ws := loadWindows(t, s, time.Time{})
	for i, kind := range store.WindowKinds {
		if w := ws["acct_1/"+kind]; w.Count != steps[5].counts[i] || !w.Start.Equal(starts(at.Add(time.Minute))[i]) {
			t.Errorf("LoadWindows lists acct_1's %s window as %+v, want the one TakeWindows counted", kind, w)
		}
	}
	us, err := s.UsageSince(ctx, "acct_1", time.Time{})
	must(t, err, "UsageSince")
	if want := []store.KeyUsage{{KeyID: "key_a", AccountID: "acct_1", ClientID: "cli_1", Hour: starts(at)[1], Count: 3}}; !reflect.DeepEqual(us, want) {
		t.Errorf("usage after 3 counted takes and 3 refused: %+v, want %+v", us, want)
	}
	if k, err := s.Key(ctx, "key_a"); err != nil || !k.LastUsedAt.Equal(at.Add(time.Minute)) {
		t.Errorf("LastUsedAt %v, %v; want the last counted take, %v (refused ones are no use)", k.LastUsedAt, err, at.Add(time.Minute))
	}

	peek := func(account string, at time.Time) store.WindowCounts {
		t.Helper()
		w, err := s.PeekWindows(ctx, account, starts(at))
		must(t, err, "PeekWindows(%s at %v)", account, at)
		return w
	}
	for range 2 {
		if w := peek("acct_1", at.Add(time.Minute)); w.Counts != [3]int64{1, 3, 3} || w.Starts != starts(at.Add(time.Minute)) {
			t.Errorf("PeekWindows in the minute of the last take: %+v, want its counts [1 3 3]", w)
		}
	}
	if w := peek("acct_1", at.Add(time.Hour)); w.Counts != [3]int64{0, 0, 3} || w.Starts != starts(at.Add(time.Hour)) {
		t.Errorf("PeekWindows in the next hour: %+v, want [0 0 3] from the next hour's starts", w)
	}
	if w := peek("acct_none", at); w.Counts != [3]int64{} || w.Starts != starts(at) {
		t.Errorf("PeekWindows of an account with no windows: %+v, want none at the starts given", w)
	}

	// A request stamped before a boundary but counted after it counts in
	// the newer window and leaves its start; one without a key counts no
	// usage.
	big := [3]int64{100, 100, 100}
	next := t0.Truncate(time.Hour).Add(time.Hour)
	take(t, s, "acct_2", "key_x", "", next, big)
	ok, w := take(t, s, "acct_2", "", "", next.Add(-time.Millisecond), big)
	if !ok || w.Counts != [3]int64{2, 2, 2} || w.Starts != starts(next) {
		t.Fatalf("a late take: %v, %+v; want counted in the newer windows (starts %v), [2 2 2]", ok, w, starts(next))
	}
	if w := peek("acct_2", next.Add(-time.Millisecond)); w.Counts != [3]int64{2, 2, 2} || w.Starts != starts(next) {
		t.Errorf("a late peek: %+v, want the newer windows", w)
	}
	if us, _ := s.UsageSince(ctx, "acct_2", time.Time{}); len(us) != 1 || us[0].Count != 1 {
		t.Errorf("usage of acct_2 after a take with key_x and one with no key: %+v, want 1", us)
	}
}

// Of concurrent takes on two handles against room for k, exactly k
// count (all of them when there is room for more), each count from 1 to
// k given once, and the key's usage counts them.
func testTakeWindowsUnderConcurrency(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	for i, room := range []int64{concurrency * 5 / 8, concurrency + 8} {
		account, key := fmt.Sprintf("acct_%d", i), fmt.Sprintf("key_%d", i)
		newAccount(t, s, account, store.AccountStandard)
		must(t, s.CreateKey(ctx, newKey(key, account, "", t0)), "CreateKey")
		limits := [3]int64{room, 1000, 1000}
		var mu sync.Mutex
		given := map[int64]int{}
		var refused []int64
		Together(concurrency, func(i int) {
			ok, w, err := hs[i%2].TakeWindows(ctx, store.WindowTake{AccountID: account, Starts: starts(t0), Limits: limits,
				Usage: store.KeyUsage{KeyID: key, Hour: t0.Truncate(time.Hour), LastUsed: t0}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("TakeWindows %d: %v", i, err)
			case ok:
				given[w.Counts[0]]++
			default:
				refused = append(refused, w.Counts[0])
			}
		})
		want := min(room, concurrency)
		if int64(len(given)) != want || len(refused) != concurrency-int(want) {
			t.Errorf("room for %d: %d takes counted (%d counts given), %d refused; want exactly %d counted", room, concurrency-len(refused), len(given), len(refused), want)
		}
		for n := int64(1); n <= want; n++ {
			if given[n] != 1 {
				t.Errorf("room for %d: the count %d was given to %d takes, want 1", room, n, given[n])
			}
		}
		for _, n := range refused {
			if n != room {
				t.Errorf("room for %d: a refused take found %d, want the window full", room, n)
			}
		}
		if w, err := s.PeekWindows(ctx, account, starts(t0)); err != nil || w.Counts != [3]int64{want, want, want} {
			t.Errorf("room for %d: PeekWindows %+v, %v; want %d in every window", room, w, err, want)
		}
		if us, err := s.UsageSince(ctx, account, time.Time{}); err != nil || len(us) != 1 || us[0].Count != want {
			t.Errorf("room for %d: usage %+v, %v; want %d", room, us, err, want)
		}
	}
}
