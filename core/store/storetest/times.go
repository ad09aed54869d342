package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// A carrier writes a record (the i-th of its kind) whose times are all at,
// and reads them back.
type carrier struct {
	name  string
	write func(s store.Store, at time.Time, i int) ([]time.Time, error)
}

// carriers are every record and every write that stores a time. The store
// they write in has the account acct_1 (agency), its client cli_1, the
// webhook wh_1 of example.com and the user usr_1.
var carriers = []carrier{
	{"Account.CreatedAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		id := fmt.Sprintf("acct_t%d", i)
		if err := s.CreateAccount(ctx, store.Account{ID: id, Name: "t", Tier: "starter", Type: store.AccountStandard, CreatedAt: at}); err != nil {
			return nil, err
		}
		a, err := s.Account(ctx, id)
		return []time.Time{a.CreatedAt}, err
	}},
	{"Client.CreatedAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		id := fmt.Sprintf("cli_t%d", i)
		if err := s.CreateClient(ctx, store.Client{ID: id, AccountID: "acct_1", Name: "t", CreatedAt: at}); err != nil {
			return nil, err
		}
		c, err := s.Client(ctx, "acct_1", id)
		return []time.Time{c.CreatedAt}, err
	}},
	{"Key.CreatedAt,ExpiresAt,RevokedAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		k := newKey(fmt.Sprintf("key_t%d", i), "acct_1", "", at)
		k.ExpiresAt, k.RevokedAt = at, at
		if err := s.CreateKey(ctx, k); err != nil {
			return nil, err
		}
		got, err := s.Key(ctx, k.ID)
		return []time.Time{got.CreatedAt, got.ExpiresAt, got.RevokedAt}, err
	}},
	{"RevokeKey", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		k := newKey(fmt.Sprintf("key_r%d", i), "acct_1", "", t0)
		if err := s.CreateKey(ctx, k); err != nil {
			return nil, err
		}
		if _, err := s.RevokeKey(ctx, k.ID, at); err != nil {
			return nil, err
		}
		got, err := s.Key(ctx, k.ID)
		return []time.Time{got.RevokedAt}, err
	}},
	{"SaveCounts: Window.Start, KeyUsage.Hour, Key.LastUsedAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		k := newKey(fmt.Sprintf("key_u%d", i), "acct_1", "", t0)
		if err := s.CreateKey(ctx, k); err != nil {
			return nil, err
		}
		acct := fmt.Sprintf("acct_w%d", i)
		err := s.SaveCounts(ctx, []store.Window{{AccountID: acct, Window: "minute", Start: at, Count: 1}},
			[]store.KeyUsage{{KeyID: k.ID, AccountID: acct, Hour: at, Count: 1, LastUsed: at}})
		if err != nil {
			return nil, err
		}
		var out []time.Time
		ws, err := s.LoadWindows(ctx, time.Time{})
		for _, w := range ws {
			if w.AccountID == acct {
				out = append(out, w.Start)
			}
		}
		us, err2 := s.UsageSince(ctx, acct, time.Time{})
		for _, u := range us {
			out = append(out, u.Hour)
		}
		got, err3 := s.Key(ctx, k.ID)
		return append(out, got.LastUsedAt), errors.Join(err, err2, err3)
	}},
	{"ContentRequest", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		c := contentRequest(fmt.Sprintf("cr_t%d", i), "acct_1", "", at)
		c.Status, c.StartedAt, c.EndedAt, c.LeaseUntil = "completed", at, at, at
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertContentRequest(c) }); err != nil {
			return nil, err
		}
		got, err := s.ContentRequest(ctx, "acct_1", c.ID)
		return []time.Time{got.CreatedAt, got.UpdatedAt, got.StartedAt, got.EndedAt, got.LeaseUntil}, err
	}},
	{"Idempotency.CreatedAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		rec := store.Idempotency{Scope: "acct_1/", Key: fmt.Sprintf("k%d", i), RequestHash: []byte{1}, Status: 200, Body: []byte("{}"), CreatedAt: at}
		var got store.Idempotency
		err := s.Update(ctx, func(tx store.Tx) (err error) {
			if err := tx.PutIdempotency(rec); err != nil {
				return err
			}
			got, err = tx.Idempotency(rec.Scope, rec.Key, time.Time{})
			return err
		})
		return []time.Time{got.CreatedAt}, err
	}},
	{"Reading.MeasuredAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		r := newReading("acct_1", "", fmt.Sprintf("t%d.example", i), 50, at)
		if _, err := s.AddReading(ctx, r); err != nil {
			return nil, err
		}
		got, err := s.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: r.Domain})
		return []time.Time{got.MeasuredAt}, err
	}},
	{"MonitoredDomain", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		d := newDomain(fmt.Sprintf("dom_t%d", i), "acct_1", "", fmt.Sprintf("t%d.example", i), at)
		d.NextScanAt, d.LastScanAt = at, at
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) }); err != nil {
			return nil, err
		}
		got, err := s.MonitoredDomain(ctx, "acct_1", d.ID)
		return []time.Time{got.CreatedAt, got.UpdatedAt, got.NextScanAt, got.LastScanAt}, err
	}},
	{"Scan", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		sc := newScan(fmt.Sprintf("scan_t%d", i), "acct_1", "", fmt.Sprintf("dom_s%d", i), at)
		sc.Status, sc.LeaseUntil, sc.StartedAt, sc.FinishedAt = store.ScanCompleted, at, at, at
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(sc) }); err != nil {
			return nil, err
		}
		got, err := s.Scan(ctx, "acct_1", sc.ID)
		return []time.Time{got.CreatedAt, got.LeaseUntil, got.StartedAt, got.FinishedAt}, err
	}},
	{"Webhook", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		w := newWebhook(fmt.Sprintf("wh_t%d", i), "acct_1", "", "example.com", at)
		w.DisabledAt, w.PrevSecret, w.PrevSecretEnd, w.FailingSince, w.LastSuccessAt = at, secret2, at, at, at
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(w) }); err != nil {
			return nil, err
		}
		got, err := s.Webhook(ctx, "acct_1", w.ID)
		return []time.Time{got.CreatedAt, got.UpdatedAt, got.DisabledAt, got.PrevSecretEnd, got.FailingSince, got.LastSuccessAt}, err
	}},
	{"DeleteWebhook", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		w := newWebhook(fmt.Sprintf("wh_d%d", i), "acct_1", "", "example.com", t0)
		err := s.Update(ctx, func(tx store.Tx) error {
			if err := tx.InsertWebhook(w); err != nil {
				return err
			}
			return tx.DeleteWebhook("acct_1", w.ID, "gone", at)
		})
		if err != nil {
			return nil, err
		}
		got, err := s.Webhook(ctx, "acct_1", w.ID)
		return []time.Time{got.DeletedAt, got.DisabledAt}, err
	}},
	{"Delivery and AddAttempt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		d := newDelivery("wh_1", "acct_1", fmt.Sprintf("dlv_t%04d", i), fmt.Sprintf("evt_t%04d", i), at)
		d.Status, d.LastAttemptAt = store.DeliveryFailed, at
		err := s.Update(ctx, func(tx store.Tx) error {
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
			return tx.AddAttempt(store.Attempt{DeliveryID: d.ID, N: 1, At: at, StatusCode: 500})
		})
		if err != nil {
			return nil, err
		}
		got, as, err := s.Delivery(ctx, "wh_1", d.ID)
		out := []time.Time{got.CreatedAt, got.UpdatedAt, got.NextAttemptAt, got.LastAttemptAt}
		for _, a := range as {
			out = append(out, a.At)
		}
		return out, err
	}},
	{"RecordOutcome", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		d := newDelivery("wh_1", "acct_1", fmt.Sprintf("dlv_o%04d", i), fmt.Sprintf("evt_o%04d", i), t0)
		err := s.Update(ctx, func(tx store.Tx) error {
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
			return tx.RecordOutcome(d.ID, "", store.DeliveryOutcome{Attempt: store.Attempt{DeliveryID: d.ID, N: 1, At: at, StatusCode: 503},
				Status: store.DeliveryPending, Step: 1, Next: at})
		})
		if err != nil {
			return nil, err
		}
		got, as, err := s.Delivery(ctx, "wh_1", d.ID)
		out := []time.Time{got.UpdatedAt, got.NextAttemptAt, got.LastAttemptAt}
		for _, a := range as {
			out = append(out, a.At)
		}
		return out, err
	}},
	{"LoggedEvent.CreatedAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		e := store.LoggedEvent{ID: fmt.Sprintf("evt_l%04d", i), AccountID: "acct_1", Event: "ai_visibility_change", Domain: "example.com",
			Payload: []byte("{}"), CreatedAt: at}
		if err := s.Update(ctx, func(tx store.Tx) error { return tx.LogEvents(e) }); err != nil {
			return nil, err
		}
		es, _, err := s.RecentEvents(ctx, store.EventFilter{AccountID: "acct_1", Limit: 1000})
		var out []time.Time
		for _, got := range es {
			if got.ID == e.ID {
				out = append(out, got.CreatedAt)
			}
		}
		return out, err
	}},
	{"Session", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		sess := store.Session{TokenHash: []byte(fmt.Sprintf("session-%d", i)), UserID: "usr_1", CSRF: "c", CreatedAt: at, ExpiresAt: at}
		if err := s.CreateSession(ctx, sess); err != nil {
			return nil, err
		}
		got, _, err := s.SessionByHash(ctx, sess.TokenHash, time.Time{})
		return []time.Time{got.CreatedAt, got.ExpiresAt}, err
	}},
	{"Invitation", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		inv := store.Invitation{TokenHash: []byte(fmt.Sprintf("invitation-%d", i)), AccountID: "acct_1", Email: "i@example.com",
			Role: store.RoleViewer, CreatedAt: at, ExpiresAt: at}
		if err := s.CreateInvitation(ctx, inv); err != nil {
			return nil, err
		}
		got, err := s.Invitation(ctx, inv.TokenHash, time.Time{})
		return []time.Time{got.CreatedAt, got.ExpiresAt}, err
	}},
	{"SetPassword", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		if err := s.SetPassword(ctx, "usr_1", "$argon2id$x", at, nil); err != nil {
			return nil, err
		}
		u, err := s.User(ctx, "usr_1")
		return []time.Time{u.PasswordAt}, err
	}},
	{"PluginRecord.RegisteredAt", func(s store.Store, at time.Time, i int) ([]time.Time, error) {
		p := store.PluginRecord{Name: fmt.Sprintf("plugin%d", i), Path: "/p", SHA256: []byte{1}, Kind: "k", Version: "1", DisplayName: "P", RegisteredAt: at}
		if err := s.PutPlugin(ctx, p); err != nil {
			return nil, err
		}
		ps, err := s.ListPlugins(ctx)
		var out []time.Time
		for _, got := range ps {
			if got.Name == p.Name {
				out = append(out, got.RegisteredAt)
			}
		}
		return out, err
	}},
}

// timesStore makes the store the carriers write in.
func timesStore(t *testing.T, newStore Constructor) store.Store {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountAgency)
	newClient(t, s, "acct_1", "cli_1")
	update(t, s, "InsertWebhook", func(tx store.Tx) error { return tx.InsertWebhook(newWebhook("wh_1", "acct_1", "", "example.com", t0)) })
	newUser(t, s, "usr_1", "acct_1", "owner@example.com", store.RoleOwner)
	return s
}

// Every time from store.MinTime up to store.MaxTime comes back the same
// instant to the nanosecond, in UTC, whatever zone it was given in: the
// range's ends, and a time of a zone of no whole hour.
func testTimeRange(t *testing.T, newStore Constructor) {
	s := timesStore(t, newStore)
	i := 0
	for _, at := range []time.Time{store.MinTime, store.MaxTime.Add(-time.Nanosecond), t0.In(elsewhere), store.MinTime.In(elsewhere)} {
		for _, c := range carriers {
			i++
			got, err := c.write(s, at, i)
			if err != nil {
				t.Errorf("%s at %s, within the range every engine keeps: %v", c.name, at.Format(time.RFC3339Nano), err)
				continue
			}
			if len(got) == 0 {
				t.Errorf("%s at %s: the record was not found again", c.name, at.Format(time.RFC3339Nano))
			}
			for j, g := range got {
				if !g.Equal(at) || g.Location() != time.UTC {
					t.Errorf("%s, time %d: wrote %s, read %s (%s); want the same instant in UTC",
						c.name, j, at.Format(time.RFC3339Nano), g.Format(time.RFC3339Nano), g.Location())
				}
			}
		}
	}
}

// A time outside the range (the zero time included, which a record that
// must have a time may not have) is kept exactly or refused with an error:
// never stored as another time.
func testTimesOutsideTheRange(t *testing.T, newStore Constructor) {
	s := timesStore(t, newStore)
	i := 1000
	for _, at := range []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1600, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(1677, 9, 21, 0, 12, 43, 145224191, time.UTC), // one nanosecond before an int64 of nanoseconds ends
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		store.MinTime.Add(-time.Nanosecond),
		store.MaxTime,
		time.Date(2262, 4, 11, 23, 47, 16, 854775808, time.UTC), // one nanosecond after
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	} {
		for _, c := range carriers {
			i++
			got, err := c.write(s, at, i)
			if err != nil {
				continue // refused: as the contract allows
			}
			for j, g := range got {
				if !g.Equal(at) {
					t.Errorf("%s, time %d: wrote %s, read %s: a time outside the range was neither kept nor refused",
						c.name, j, at.Format(time.RFC3339Nano), g.Format(time.RFC3339Nano))
				}
			}
		}
	}
}

// A time a method compares with (since, before, now, a cut) may lie
// outside the range: it compares as it would with any stored time.
func testBoundsOutsideTheRange(t *testing.T, newStore Constructor) {
	s := timesStore(t, newStore)
	past, future := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	w := newWebhook("wh_1", "acct_1", "", "example.com", t0)
	r := addReading(t, s, newReading("acct_1", "", "example.com", 40, t0))
	must(t, s.SaveCounts(ctx, []store.Window{{AccountID: "acct_1", Window: "day", Start: t0, Count: 1}},
		[]store.KeyUsage{{KeyID: "key_1", AccountID: "acct_1", Hour: t0.Truncate(time.Hour), Count: 1, LastUsed: t0}}), "SaveCounts")
	update(t, s, "writes", func(tx store.Tx) error {
		if err := tx.PutIdempotency(store.Idempotency{Scope: "s", Key: "k", RequestHash: []byte{1}, Status: 200, Body: []byte("{}"), CreatedAt: t0}); err != nil {
			return err
		}
		if _, err := tx.InsertDelivery(newDelivery(w.ID, "acct_1", store.NewDeliveryID(t0), "evt_1", t0)); err != nil {
			return err
		}
		d := newDomain("dom_1", "acct_1", "", "example.com", t0)
		d.NextScanAt = t0
		if err := tx.InsertDomain(d); err != nil {
			return err
		}
		if err := tx.InsertWebhook(newWebhook("wh_2", "acct_1", "", "example.com", t0)); err != nil {
			return err
		}
		if err := tx.DeleteWebhook("acct_1", "wh_2", "deleted", t0); err != nil {
			return err
		}
		ev, err := events.New(events.VisibilityChange, t0, "acct_1", "", "example.com", map[string]int{})
		if err != nil {
			return err
		}
		return tx.LogEvents(store.LoggedEvent{ID: ev.ID, AccountID: "acct_1", Event: ev.Event, Domain: "example.com", Payload: []byte("{}"), CreatedAt: t0})
	})
	newSession(t, s, "sess", "usr_1", t0.Add(time.Hour))
	inv := store.Invitation{TokenHash: []byte("inv"), AccountID: "acct_1", Email: "x@example.com", Role: store.RoleViewer, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateInvitation(ctx, inv), "CreateInvitation")

	bounds := map[string]func(time.Time) (bool, error){}
	for _, tc := range []struct {
		name string
		at   time.Time
		want bool // found, or something done
		do   func(at time.Time) (bool, error)
	}{
		{"LatestReading as of", past, false, func(at time.Time) (bool, error) {
			got, err := s.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: "example.com", AtOrBefore: at})
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return got.ID == r.ID, err
		}},
		{"LoadWindows since", past, true, func(at time.Time) (bool, error) { ws, err := s.LoadWindows(ctx, at); return len(ws) == 1, err }},
		{"UsageSince", past, true, func(at time.Time) (bool, error) { us, err := s.UsageSince(ctx, "acct_1", at); return len(us) == 1, err }},
		{"Idempotency not before", past, true, func(at time.Time) (bool, error) {
			err := s.Update(ctx, func(tx store.Tx) error { _, err := tx.Idempotency("s", "k", at); return err })
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		}},
		{"NextDue after", past, true, func(at time.Time) (bool, error) { next, err := s.NextDue(ctx, at); return next.Equal(t0), err }},
		{"SessionByHash at", past, true, func(at time.Time) (bool, error) {
			_, _, err := s.SessionByHash(ctx, []byte("sess"), at)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		}},
		{"ListInvitations at", past, true, func(at time.Time) (bool, error) {
			is, err := s.ListInvitations(ctx, "acct_1", at)
			return len(is) == 1, err
		}},
		{"DueDomains at", past, false, func(at time.Time) (bool, error) {
			var ds []store.DueDomain
			err := s.Update(ctx, func(tx store.Tx) (err error) { ds, err = tx.DueDomains(at, 10); return err })
			return len(ds) > 0, err
		}},
		{"PruneDeliveries before", past, false, func(at time.Time) (bool, error) { n, err := s.PruneDeliveries(ctx, at, 10); return n > 0, err }},
		{"PruneEvents before", past, false, func(at time.Time) (bool, error) { n, err := s.PruneEvents(ctx, at, 10); return n > 0, err }},
		{"PruneDeleted before", past, false, func(at time.Time) (bool, error) { n, err := s.PruneDeleted(ctx, at, 10); return n > 0, err }},
		{"DeleteIdempotencyBefore", past, false, func(at time.Time) (bool, error) { n, err := s.DeleteIdempotencyBefore(ctx, at); return n > 0, err }},

		{"LatestReading as of", future, true, nil},
		{"LoadWindows since", future, false, nil},
		{"UsageSince", future, false, nil},
		{"Idempotency not before", future, false, nil},
		{"NextDue after", future, false, nil},
		{"SessionByHash at", future, false, nil},
		{"ListInvitations at", future, false, nil},
		{"DueDomains at", future, true, nil},
		// Last: each forgets what it finds.
		{"PruneDeliveries before", future, true, nil},
		{"PruneEvents before", future, true, nil},
		{"PruneDeleted before", future, true, nil},
		{"DeleteIdempotencyBefore", future, true, nil},
	} {
		do := tc.do
		if do == nil {
			do = bounds[tc.name]
		}
		bounds[tc.name] = do
		got, err := do(tc.at)
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %v, %v; want %v", tc.name, tc.at.Format(time.DateOnly), got, err, tc.want)
		}
	}
}
