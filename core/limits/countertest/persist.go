package countertest

import (
	"reflect"
	"testing"
	"time"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store"
)

// Every allowed request with a key is one use of that key in its UTC
// hour, under its account and client, and moves the key's last use; a
// refused one is none, and one without a key counts in the windows only.
// All of it is in the store once the handle's Run has ended.
func testKeyUsage(t *testing.T, newCounter Constructor) {
	b := newBacking(t, newCounter)
	newAccount(t, b.st, "acct_agency", "cli_1")
	c := b.open(t, t0)
	stop := run(t, c)
	hour1 := time.Date(2025, 6, 10, 14, 0, 0, 0, time.UTC)
	at := func(h, m, s int) time.Time {
		return hour1.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	}
	own := func(at time.Time) limits.Use {
		return limits.Use{AccountID: "acct_agency", KeyID: "key_acct_agency", ClientID: "cli_1", At: at}
	}
	l := [3]int{4, big, big}
	for i, u := range []limits.Use{
		own(at(0, 1, 0)), own(at(0, 1, 1)), own(at(0, 1, 2)), own(at(0, 1, 3)),
		// The minute is full: these two are refused and count nowhere.
		own(at(0, 1, 4)), own(at(0, 1, 5)),
		own(at(0, 59, 59)), own(at(1, 0, 0)), own(at(1, 30, 0)),
		// No key: counted in the windows, no one's use.
		{AccountID: "acct_agency", At: at(2, 0, 0)},
	} {
		if d := take(t, c, u, l); d.Allowed != (i < 4 || i > 5) {
			t.Fatalf("request %d: allowed=%v", i, d.Allowed)
		}
	}
	stop()
	got, err := b.st.UsageSince(ctx, "acct_agency", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.KeyUsage{
		{KeyID: "key_acct_agency", AccountID: "acct_agency", ClientID: "cli_1", Hour: hour1, Count: 5},
		{KeyID: "key_acct_agency", AccountID: "acct_agency", ClientID: "cli_1", Hour: hour1.Add(time.Hour), Count: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("usage once Run has ended (the allowed requests, by key and hour):\n got  %+v\n want %+v", got, want)
	}
	if k, err := b.st.Key(ctx, "key_acct_agency"); err != nil || !k.LastUsedAt.Equal(at(1, 30, 0)) {
		t.Errorf("the key's last use %v, %v; want the last allowed request, %v", k.LastUsedAt, err, at(1, 30, 0))
	}
}

// A handle opened on the backing after another's Run has ended (a
// restarted server) counts on from the other's counts, in the windows
// still current; its own refusals do not lower them for the next.
func testCountsOutliveTheHandle(t *testing.T, newCounter Constructor) {
	l := [3]int{100, 1000, 10000}
	for _, tc := range []struct {
		name    string
		restart time.Time
		want    [3]int // counts of one more request after the restart
	}{
		{"same minute", t0.Add(10 * time.Second), [3]int{8, 8, 8}},
		{"next minute", t0.Add(40 * time.Second), [3]int{1, 8, 8}},
		{"next hour", t0.Add(time.Hour), [3]int{1, 1, 8}},
		{"next day", t0.Add(24 * time.Hour), [3]int{1, 1, 1}},
		{"two days later", t0.Add(48 * time.Hour), [3]int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBacking(t, newCounter, "a", "b")
			old := b.open(t, t0)
			stop := run(t, old)
			for range 7 {
				take(t, old, use("a", t0), l)
			}
			take(t, old, use("b", t0), l)
			stop()
			c := b.open(t, tc.restart)
			if d := take(t, c, use("a", tc.restart), l); d.Count != tc.want {
				t.Fatalf("after reopening: counts %v, want %v", d.Count, tc.want)
			}
			// b made one request before: 2 where a's window survived (8), else 1.
			var wantB [3]int
			for w := range 3 {
				wantB[w] = 1
				if tc.want[w] == 8 {
					wantB[w] = 2
				}
			}
			if d := take(t, c, use("b", tc.restart), l); d.Count != wantB {
				t.Fatalf("account b after reopening: counts %v, want %v", d.Count, wantB)
			}
		})
	}

	// The limit used up: refused by the next handle, and by the one after
	// it, the refusals and a Run between lowering nothing.
	b := newBacking(t, newCounter, "a")
	l = [3]int{5, 100, 100}
	first := b.open(t, t0)
	stop := run(t, first)
	for range 5 {
		take(t, first, use("a", t0), l)
	}
	stop()
	for i := 1; i <= 2; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		c := b.open(t, at)
		stop := run(t, c)
		if d := take(t, c, use("a", at), l); d.Allowed || d.Count[limits.Minute] != 5 {
			t.Fatalf("handle %d after the first: %+v, want refused, the minute's 5 kept", i+1, d)
		}
		stop()
	}
}
