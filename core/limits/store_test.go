package limits_test

import (
	"context"
	"testing"
	"time"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/limits/countertest"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// TestStoreCounter runs the suite every counter passes on the store
// counter over a SQLite file; each handle opens the file anew, as another
// process does, and the suite races requests over two of them.
func TestStoreCounter(t *testing.T) {
	countertest.Run(t, func(t *testing.T) (store.Store, func(*testing.T, time.Time) limits.Counter) {
		db, path := openDB(t)
		return db, func(t *testing.T, _ time.Time) limits.Counter {
			h, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return limits.NewStoreCounter(h)
		}
	})
}

// TestStoreAdmit runs the cases of Admit and Screen on the store counter
// with the guards it is deployed with, in memory: one pair, as a process
// has, the guard's counts being its own.
func TestStoreAdmit(t *testing.T) {
	countertest.RunAdmit(t, func(t *testing.T) func(*testing.T, int) (limits.Counter, limits.Guard) {
		db, _ := openDB(t)
		var g limits.Guard
		return func(_ *testing.T, limit int) (limits.Counter, limits.Guard) {
			if g == nil {
				g = limits.MemoryGuards("auth", limit, time.Minute)
			}
			return limits.NewStoreCounter(db), g
		}
	})
}
