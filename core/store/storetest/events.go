package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

func loggedIDs(es []store.LoggedEvent) []string {
	return idsOf(es, func(e store.LoggedEvent) string { return e.ID })
}

// The event log keeps each event once (a repeat, even with another body,
// changes nothing) with every field; RecentEvents lists an owner's newest
// first (ties by id, highest first): the account's own, one client's, or
// with AllClients all of them, of one kind or every kind, at most Limit,
// never another account's.
func testEventLog(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	kinds := []string{"ai_visibility_change", "content_completed"}
	owners := []string{"", "cli_1"}
	var all []store.LoggedEvent
	update(t, s, "LogEvent", func(tx store.Tx) error {
		for i := range 24 {
			e := store.LoggedEvent{ID: eventID(t0, (i*7)%24), AccountID: "acct_1", ClientID: owners[i%2], Event: kinds[(i/2)%2],
				Domain: fmt.Sprintf("d%d.example", i%3), Payload: []byte(fmt.Sprintf(`{"n":%d,"é":"\u0000"}`, i)),
				CreatedAt: t0.Add(time.Duration(i/3) * time.Second).In(elsewhere)}
			if err := tx.LogEvents(e); err != nil {
				return err
			}
			e.CreatedAt = e.CreatedAt.UTC()
			all = append(all, e)
		}
		return tx.LogEvents(store.LoggedEvent{ID: eventID(t0, 99), AccountID: "acct_2", Event: kinds[0], Domain: "d0.example",
			Payload: []byte(`{}`), CreatedAt: t0.Add(time.Hour)})
	})
	// Logged again, as a redelivered message would be: nothing changes.
	update(t, s, "LogEvent", func(tx store.Tx) error {
		again := all[0]
		again.Payload, again.CreatedAt, again.Event = []byte(`{"again":true}`), t0.Add(time.Hour), kinds[1]
		return tx.LogEvents(again)
	})
	slices.SortFunc(all, func(a, b store.LoggedEvent) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return 1
		}
		return -1
	})
	for _, f := range []store.EventFilter{
		{AllClients: true, Limit: 100},
		{Limit: 100},
		{ClientID: "cli_1", Limit: 100},
		{AllClients: true, Event: kinds[1], Limit: 100},
		{ClientID: "cli_1", Event: kinds[0], Limit: 100},
		{AllClients: true, Limit: 5},
		{Event: "webhook_disabled", Limit: 100},
	} {
		var want []store.LoggedEvent
		for _, e := range all {
			if (f.AllClients || e.ClientID == f.ClientID) && (f.Event == "" || e.Event == f.Event) && len(want) < f.Limit {
				want = append(want, e)
			}
		}
		f.AccountID = "acct_1"
		got, next, err := s.RecentEvents(ctx, f)
		if more := len(want) == f.Limit && slices.ContainsFunc(all[slices.IndexFunc(all, func(e store.LoggedEvent) bool { return e.ID == want[len(want)-1].ID })+1:], func(e store.LoggedEvent) bool {
			return (f.AllClients || e.ClientID == f.ClientID) && (f.Event == "" || e.Event == f.Event)
		}); more != (next != "") {
			t.Errorf("RecentEvents %+v: next %q, want one: %v", f, next, more)
		}
		// Paged by 2 from its cursors, it lists the same, each once.
		var paged []store.LoggedEvent
		for p, c := f, ""; len(paged) < len(want); {
			p.Limit, p.Cursor = min(2, f.Limit-len(paged)), c
			page, n, err := s.RecentEvents(ctx, p)
			if err != nil || len(page) == 0 {
				t.Errorf("RecentEvents %+v by 2: %v after %v", f, err, loggedIDs(paged))
				break
			}
			paged, c = append(paged, page...), n
		}
		if !slices.Equal(loggedIDs(paged), loggedIDs(want)) {
			t.Errorf("RecentEvents %+v by 2:\n got  %v\n want %v", f, loggedIDs(paged), loggedIDs(want))
		}
		if err != nil || len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Errorf("RecentEvents %+v:\n got  %v, %v\n want %v", f, loggedIDs(got), err, loggedIDs(want))
			if len(got) == len(want) {
				for i := range got {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Errorf("event %s:\n got  %+v\n want %+v", want[i].ID, got[i], want[i])
					}
				}
			}
		}
	}
}

// PruneEvents forgets, oldest first and at most its limit a call, exactly
// the events logged before its cut.
func testPruneEvents(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	var ids []string
	update(t, s, "LogEvent", func(tx store.Tx) error {
		for i := range 30 {
			at := t0.Add(time.Duration(i) * time.Minute)
			ev, err := events.New(events.VisibilityChange, at, "acct_1", "", "example.com", map[string]int{"n": i})
			if err != nil {
				return err
			}
			ids = append(ids, ev.ID)
			if err := tx.LogEvents(store.LoggedEvent{ID: ev.ID, AccountID: "acct_1", Event: ev.Event, Domain: "example.com",
				Payload: []byte(`{}`), CreatedAt: ev.Timestamp}); err != nil {
				return err
			}
		}
		return nil
	})
	left := func() []string {
		es, _, err := s.RecentEvents(ctx, store.EventFilter{AccountID: "acct_1", Limit: 100})
		must(t, err, "RecentEvents")
		got := loggedIDs(es)
		slices.Reverse(got)
		return got
	}
	var batches []int
	for n := 5; n == 5 && len(batches) < 10; {
		var err error
		n, err = s.PruneEvents(ctx, t0.Add(12*time.Minute), 5)
		must(t, err, "PruneEvents")
		batches = append(batches, n)
		if len(batches) == 1 && !slices.Equal(left(), ids[5:]) {
			t.Errorf("after the first batch, left %v; want all but the 5 oldest", left())
		}
	}
	if got := left(); !slices.Equal(batches, []int{5, 5, 2}) || !slices.Equal(got, ids[12:]) {
		t.Errorf("PruneEvents went in batches of %v and kept %v; want [5 5 2], and the events from the cut on kept", batches, got)
	}
}
