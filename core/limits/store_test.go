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
