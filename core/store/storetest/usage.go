package storetest

import (
	"math/rand/v2"
	"reflect"
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
	together(concurrency, func(i int) {
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
}
