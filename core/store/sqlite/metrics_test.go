package sqlite_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
	"github.com/aivis/aivis/core/store"
)

// The events of the calls that share a group's transaction are counted
// once it commits, those of a call that fails in it not at all; each
// transaction's wait for the write lock is observed.
func TestMetrics(t *testing.T) {
	db, _ := newDB(t)
	m := metrics.New(metrics.Options{EventKinds: events.Kinds})
	db.SetMetrics(m.Store)
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
	publish := func(tx store.Tx) error {
		ev, err := events.New(events.VisibilityChange, time.Now(), "acct_1", "", "example.com", map[string]int{})
		if err != nil {
			return err
		}
		return events.Publish(ctx, tx, ev)
	}
	before := metricstest.Value(t, m, "aivis_sqlite_write_lock_wait_seconds_count")
	refused := errors.New("refused")
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := db.Update(ctx, func(tx store.Tx) error {
				if err := tx.AddToBudgetMonth("acct_1", "2026-01", 0, 1); err != nil {
					return err
				}
				if err := publish(tx); err != nil || i%4 != 0 {
					return err
				}
				return refused // after writing: undone, its event too
			})
			if (err != nil) != (i%4 == 0) {
				t.Errorf("call %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got, want := metricstest.Value(t, m, "aivis_events_published_total", "kind", events.VisibilityChange), float64(n-n/4); got != want {
		t.Errorf("events published: %v, want %v (those of the calls that committed)", got, want)
	}
	if got := metricstest.Value(t, m, "aivis_sqlite_write_lock_wait_seconds_count"); got <= before {
		t.Errorf("waits for the write lock observed: %v, before %v", got, before)
	}
}
