// Package pgtest gives a test a database of its own on a PostgreSQL
// server: AIVIS_TEST_POSTGRES_URL's (a URL of a database on it whose user
// may create databases), or by default the local one on 127.0.0.1:5432 as
// user postgres. It stands in until internal/testsvc, which also starts a
// private server where none runs, gives the same.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL makes an empty database for the test, dropped when it ends, and
// returns its URL.
func URL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	server := os.Getenv("AIVIS_TEST_POSTGRES_URL")
	if server == "" {
		server = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("PostgreSQL for the tests (AIVIS_TEST_POSTGRES_URL): %v", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	name := "aivis_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("create a test database: %v", err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, server)
		if err == nil {
			_, err = admin.Exec(ctx, `DROP DATABASE `+name+` WITH (FORCE)`)
			admin.Close(ctx)
		}
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("AIVIS_TEST_POSTGRES_URL: %v", err)
	}
	u.Path = "/" + name
	return fmt.Sprint(u)
}
