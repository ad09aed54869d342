package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/storetest"
)

var ctx = context.Background()

// freshDB makes an empty database on the PostgreSQL server of
// AIVIS_TEST_POSTGRES_URL (default: the local one, as user postgres) for
// one test, and drops it when the test ends; it returns its URL.
func freshDB(t testing.TB) string {
	t.Helper()
	server := os.Getenv("AIVIS_TEST_POSTGRES_URL")
	if server == "" {
		server = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	cfg, err := pgx.ParseConfig(server)
	must(t, err)
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("PostgreSQL for the tests (AIVIS_TEST_POSTGRES_URL): %v", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	name := "aivis_test_" + hex.EncodeToString(b)
	_, err = admin.Exec(ctx, `CREATE DATABASE `+name)
	must(t, err)
	t.Cleanup(func() {
		admin, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			_, err = admin.Exec(ctx, `DROP DATABASE `+name+` WITH (FORCE)`)
			admin.Close(ctx)
		}
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	c := cfg.Copy()
	c.Database = name
	return "postgres://" + c.User + "@" + c.Host + ":" + itoa(c.Port) + "/" + name + "?sslmode=disable"
}

func itoa(n uint16) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

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
		url, key := freshDB(t), box(t)
		reopen := func(t *testing.T) store.Store {
			db := open(t, url, key)
			return cache.Wrap(db, db.Signal())
		}
		return reopen(t), reopen
	})
}
