package sqlite_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// The writer remembers each domain's newest reading instead of querying it
// for every recorded reading; what it remembers must be what the table
// says, whatever rolled back and whoever else wrote.
func TestLatestReadingInTransactionsStaysTrue(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	reading := func(score int, at time.Time) store.Reading {
		return store.Reading{AccountID: "acct_1", Domain: "a.example", VisibilityScore: score, Sentiment: "neutral",
			Source: "api", MeasuredAt: at}
	}
	latest := func(db *sqlite.DB) (store.Reading, error) {
		var r store.Reading
		err := db.Update(ctx, func(tx store.Tx) (err error) {
			r, err = tx.LatestReading(store.ReadingFilter{AccountID: "acct_1", Domain: "a.example"})
			return err
		})
		return r, err
	}
	if _, err := latest(db); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no reading yet: %v, want ErrNotFound", err)
	}
	if _, err := db.AddReading(ctx, reading(10, t0)); err != nil {
		t.Fatal(err)
	}
	if r, err := latest(db); err != nil || r.VisibilityScore != 10 {
		t.Fatalf("after the first reading: %+v, %v", r, err)
	}

	// A call that wrote a newer reading and then failed leaves no trace.
	errBoom := errors.New("boom")
	err := db.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.InsertReading(reading(20, t0.Add(time.Minute))); err != nil {
			return err
		}
		if r, err := tx.LatestReading(store.ReadingFilter{AccountID: "acct_1", Domain: "a.example"}); err != nil || r.VisibilityScore != 20 {
			t.Errorf("inside the call that wrote it: %+v, %v", r, err)
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	if r, err := latest(db); err != nil || r.VisibilityScore != 10 {
		t.Fatalf("after a failed call: %+v, %v; want 10", r, err)
	}

	// The same in a group: calls queued together see each other's readings
	// in order, and not those of a call that failed.
	held, release := make(chan struct{}), make(chan struct{})
	go db.Update(ctx, func(tx store.Tx) error { close(held); <-release; return nil })
	<-held
	var wg sync.WaitGroup
	wg.Go(func() {
		db.Update(ctx, func(tx store.Tx) error {
			if _, err := tx.InsertReading(reading(30, t0.Add(2*time.Minute))); err != nil {
				return err
			}
			return errBoom
		})
	})
	wg.Go(func() {
		if _, err := db.AddReading(ctx, reading(40, t0.Add(3*time.Minute))); err != nil {
			t.Error(err)
		}
	})
	// An older measurement does not become the latest.
	wg.Go(func() {
		if _, err := db.AddReading(ctx, reading(5, t0.Add(-time.Hour))); err != nil {
			t.Error(err)
		}
	})
	time.Sleep(50 * time.Millisecond) // let them queue
	close(release)
	wg.Wait()
	if r, err := latest(db); err != nil || r.VisibilityScore != 40 {
		t.Fatalf("after a group: %+v, %v; want 40", r, err)
	}

	// Another handle on the file (as another process would be) commits a
	// newer reading: this handle's next transaction sees it.
	other := open(t, path)
	if _, err := other.AddReading(ctx, reading(50, t0.Add(4*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if r, err := latest(db); err != nil || r.VisibilityScore != 50 {
		t.Fatalf("after another handle's commit: %+v, %v; want 50", r, err)
	}
	// And the other way round, on the other handle's cache.
	if _, err := db.AddReading(ctx, reading(60, t0.Add(5*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if r, err := latest(other); err != nil || r.VisibilityScore != 60 {
		t.Fatalf("the other handle after this one's commit: %+v, %v; want 60", r, err)
	}
	// Each answer agrees with the table.
	var score int
	must(t, raw(t, path).QueryRow(`SELECT visibility_score FROM visibility_readings WHERE domain = 'a.example'
		ORDER BY measured_at DESC, id DESC LIMIT 1`).Scan(&score))
	if score != 60 {
		t.Fatalf("table's latest = %d, want 60", score)
	}
}

// The fan-out's match of an event's webhooks is cached; every change of a
// webhook that matching or delivering reads is seen by the next match,
// from this handle or another, while the dispatcher's health writes leave
// the cache warm.
func TestMatchWebhooksSeesEveryChange(t *testing.T) {
	db, path, box, w := webhookDB(t)
	srv := cached(db)
	match := func() []store.Webhook {
		t.Helper()
		ws, err := srv.MatchWebhooks(ctx, "acct_1", "", "example.com")
		must(t, err)
		return ws
	}
	if ws := match(); len(ws) != 1 || ws[0].URL != w.URL || ws[0].Secret != w.Secret {
		t.Fatalf("match: %+v", ws)
	}
	update := func(fn func(w *store.Webhook), health bool) {
		t.Helper()
		must(t, db.Update(ctx, func(tx store.Tx) error {
			cur, err := tx.Webhook("acct_1", "wh_1")
			if err != nil {
				return err
			}
			fn(&cur)
			if health {
				return tx.UpdateWebhookHealth(cur)
			}
			return tx.UpdateWebhook(cur)
		}))
	}
	update(func(w *store.Webhook) { w.URL = "https://example.com/v2" }, false)
	if ws := match(); len(ws) != 1 || ws[0].URL != "https://example.com/v2" {
		t.Fatalf("after a new URL: %+v", ws)
	}
	const next = "whsec_C2FtcGxlc2VjcmV0MTIzNDU2Nzg5MDEyMzQ1Njc4"
	update(func(w *store.Webhook) { w.PrevSecret, w.Secret = w.Secret, next }, false)
	if ws := match(); ws[0].Secret != next || ws[0].PrevSecret != w.Secret {
		t.Fatalf("after a rotation: %+v", ws)
	}
	update(func(w *store.Webhook) { w.Enabled, w.DisabledReason = false, "410" }, false)
	if ws := match(); ws[0].Enabled {
		t.Fatalf("after disabling: %+v", ws)
	}

	// A health write changes only failures and times, and not the epoch.
	epoch := func() (n int64) {
		must(t, raw(t, path).QueryRow(`SELECT webhooks FROM cache_epoch`).Scan(&n))
		return n
	}
	before := epoch()
	changed, err := db.Webhook(ctx, "acct_1", "wh_1")
	must(t, err)
	update(func(w *store.Webhook) {
		w.Failures, w.URL, w.UpdatedAt = 3, "https://ignored.example/", changed.UpdatedAt.Add(time.Hour)
	}, true)
	if after := epoch(); after != before {
		t.Errorf("a health write moved the epoch from %d to %d", before, after)
	}
	// updated_at is when its settings last changed, which a user's edit
	// checks against: a delivery's outcome does not refuse the edit.
	cur, err := db.Webhook(ctx, "acct_1", "wh_1")
	if err != nil || cur.Failures != 3 || cur.URL != "https://example.com/v2" || !cur.UpdatedAt.Equal(changed.UpdatedAt) {
		t.Fatalf("after a health write: %+v %v (updated_at was %v)", cur, err, changed.UpdatedAt)
	}

	// Another handle (another process) adds a webhook of the domain, then
	// deletes the first.
	other := open(t, path)
	other.SetSecrets(box)
	w2 := w
	w2.ID = "wh_2"
	must(t, other.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(w2) }))
	if ws := match(); len(ws) != 2 {
		t.Fatalf("after another handle's insert: %d webhooks", len(ws))
	}
	must(t, other.Update(ctx, func(tx store.Tx) error { return tx.DeleteWebhook("acct_1", "wh_1", "deleted by the account", t0) }))
	if ws := match(); len(ws) != 1 || ws[0].ID != "wh_2" {
		t.Fatalf("after another handle's delete: %+v", ws)
	}
}
