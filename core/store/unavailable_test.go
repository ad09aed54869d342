package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/testsvc"
)

// sqlState is an error with an SQLSTATE, as a driver's server error is.
type sqlState string

func (s sqlState) Error() string    { return "ERROR: something (SQLSTATE " + string(s) + ")" }
func (s sqlState) SQLState() string { return string(s) }

// TestUnavailableRecognises: what says the store cannot be reached, and
// what does not, however it is wrapped.
func TestUnavailableRecognises(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{store.ErrUnavailable, true},
		{fmt.Errorf("postgres: account x: %w", store.ErrUnavailable), true},
		{sqlState("08006"), true}, // connection failure
		{sqlState("08001"), true}, // unable to establish a connection
		{sqlState("57P01"), true}, // terminated by an administrator
		{sqlState("57P02"), true}, // crash shutdown
		{sqlState("57P03"), true}, // starting up or shutting down
		{sqlState("53300"), true}, // too many connections
		{fmt.Errorf("failed to connect: %w", errors.Join(sqlState("57P03"))), true},
		{fmt.Errorf("postgres: x: %w", errors.New("conn closed")), true},
		{sqlState("40001"), false}, // serialization failure: retried, not unavailable
		{sqlState("23505"), false},
		{sqlState("22021"), false},
		{sqlState("57014"), false}, // a statement cancelled
		{store.ErrNotFound, false},
		{fmt.Errorf("postgres: x: %w", store.ErrConflict), false},
		{store.ErrInvalidText, false},
		{context.Canceled, false},
		{errors.New("something else"), false},
		{nil, false},
	} {
		if why, got := store.Unavailable(tc.err); got != tc.want || got == (why == "") {
			t.Errorf("Unavailable(%v) = %q, %v; want %v", tc.err, why, got, tc.want)
		}
	}
}

// TestUnavailablePostgres: what the PostgreSQL engine returns while its
// server cannot be reached is recognised, reads and write transactions
// alike, with a reason that names nothing of the server: connections cut
// (those the pool holds end in the middle, new ones are refused), those
// the server terminates (57P01, as at a shutdown), and a connection over
// the server's limit (53300). Once it answers, the same calls succeed.
func TestUnavailablePostgres(t *testing.T) {
	ctx := context.Background()
	server := testsvc.Postgres(t)
	relay := testsvc.NewRelay(t, server)
	box, _, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, relay.URL(), box)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, _ := url.Parse(relay.URL())
	secret := []string{u.Host, u.Port(), strings.TrimPrefix(u.Path, "/"), "127.0.0.1"}
	calls := map[string]func() error{
		"read": func() error { _, err := db.Account(ctx, "acct_nosuch"); return err },
		"update": func() error {
			return db.Update(ctx, func(tx store.Tx) error { _, err := tx.Webhook("acct_nosuch", "wh_nosuch"); return err })
		},
	}
	answered := func(when string) {
		t.Helper()
		for name, call := range calls {
			if err := call(); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s %s: %v, want not found", when, name, err)
			}
		}
	}
	down := func(when string, err error) {
		t.Helper()
		why, ok := store.Unavailable(err)
		if !ok {
			t.Fatalf("%s: %v is not recognised as unavailable", when, err)
		}
		for _, s := range secret {
			if strings.Contains(why, s) {
				t.Fatalf("%s: the reason %q names %q", when, why, s)
			}
		}
	}

	// Fill the pool, so that the cut ends connections in use.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { answered("before the cut") })
	}
	wg.Wait()
	relay.Cut()
	var mu sync.Mutex
	reasons := map[string]bool{}
	for range 8 {
		for name, call := range calls {
			wg.Go(func() {
				err := call()
				down("cut: "+name, err)
				why, _ := store.Unavailable(err)
				mu.Lock()
				reasons[why] = true
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if !reasons["connection refused"] {
		t.Errorf("no call was refused a connection while cut: %v", reasons)
	}
	t.Logf("reasons while cut: %v", reasons)
	relay.Mend(t)
	answered("mended")

	// The server ends the pool's connections, as when it shuts down.
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for range 4 {
		wg.Go(func() { answered("before the termination") })
	}
	wg.Wait()
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	// Each connection the pool held fails once, then it connects anew.
	terminated := 0
	for err := calls["read"](); !errors.Is(err, store.ErrNotFound); err = calls["read"]() {
		down("terminated", err)
		if terminated++; terminated > 4 {
			t.Fatalf("more failures than connections terminated: %v", err)
		}
	}
	if terminated == 0 {
		t.Fatal("no read failed after its connection was terminated")
	}
	answered("after the termination")

	// A role over its connection limit is refused with 53300.
	role := "aivistest_" + strings.ToLower(randid.String(12))
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN CONNECTION LIMIT 0"); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP ROLE "+role)
	limited, _ := url.Parse(server)
	limited.User = url.User(role)
	if other, err := postgres.Open(ctx, limited.String(), box); err == nil {
		other.Close()
		t.Fatal("a role with no connections left connected")
	} else {
		down("over the connection limit", err)
	}
}

// TestUnavailableSQLiteLocked: a write that waits for another process's
// write lock past the busy timeout fails as unavailable.
func TestUnavailableSQLiteLocked(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the busy timeout (10 s)")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "aivis.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx store.Tx) error { return tx.DeleteDomain("acct_nosuch", "dom_nosuch") })
	if _, ok := store.Unavailable(err); !ok {
		t.Fatalf("a write past the busy timeout: %v, not recognised as unavailable", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx store.Tx) error { return tx.DeleteDomain("acct_nosuch", "dom_nosuch") })
	if _, ok := store.Unavailable(err); ok {
		t.Fatalf("the write once the lock is released: %v", err)
	}
}
