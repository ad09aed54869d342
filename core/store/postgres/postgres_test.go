package postgres_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/storetest"
	"github.com/aivis/aivis/internal/testsvc"
)

var ctx = context.Background()

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// box is a master key for one test.
func box(t testing.TB) *secrets.Box {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	b, err := secrets.New(key)
	must(t, err)
	return b
}

// open opens a handle on the database at url, closed when the test ends.
func open(t testing.TB, url string, b *secrets.Box) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(ctx, url, b)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestStore runs the suite every engine passes, each case on a fresh
// database, each handle read through the caches the server uses (validated
// by the engine's signal); second handles open the same database, as
// another instance or the CLI does.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func(*testing.T) store.Store) {
		url, key := testsvc.Postgres(t), box(t)
		reopen := func(t *testing.T) store.Store {
			db := open(t, url, key)
			return cache.Wrap(db, db.Signal())
		}
		return reopen(t), reopen
	})
}
