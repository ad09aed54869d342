package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/internal/testsvc"
)

// Transactions that conflict are run again, and counted each time; the
// events a transaction publishes are counted once, when it commits,
// however many times it ran, and not at all when it fails.
func TestMetrics(t *testing.T) {
	db := open(t, testsvc.Postgres(t), box(t))
	m := metrics.New(metrics.Options{EventKinds: events.Kinds})
	db.SetMetrics(m.Store)
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: time.Now()}))
	publish := func(tx store.Tx) error {
		ev, err := events.New(events.VisibilityChange, time.Now(), "acct_1", "", "example.com", map[string]int{})
		if err != nil {
			return err
		}
		return events.Publish(ctx, tx, ev)
	}
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// A read and a write of one row: concurrent runs conflict.
			must(t, db.Update(ctx, func(tx store.Tx) error {
				if _, err := tx.BudgetMonth("acct_1", "2026-01"); err != nil {
					return err
				}
				if err := tx.AddToBudgetMonth("acct_1", "2026-01", 0, 1); err != nil {
					return err
				}
				return publish(tx)
			}))
		})
	}
	wg.Wait()
	refused := errors.New("refused")
	if err := db.Update(ctx, func(tx store.Tx) error {
		if err := publish(tx); err != nil {
			return err
		}
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("a failing Update: %v", err)
	}
	b, _, err := db.Budget(ctx, "acct_1", "2026-01")
	must(t, err)
	if b.Reserved != n {
		t.Fatalf("reserved %d, want %d", b.Reserved, n)
	}
	if got := metricstest.Value(t, m, "aivis_events_published_total", "kind", events.VisibilityChange); got != n {
		t.Errorf("events published: %v, want %d (one a commit)", got, n)
	}
	if got := metricstest.Value(t, m, "aivis_store_transaction_retries_total"); got < 1 {
		t.Errorf("transactions run again: %v; %d concurrent read-writes of a row conflict", got, n)
	}
}
