package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/internal/testsvc"
)

// TestOpeningWaitsForAFreeConnection: a server at a connections' limit
// (here a role's, CONNECTION LIMIT 1, its one connection held: 53300, as
// a server's max_connections answers) refuses a new connection for now;
// opening waits until one is free, then reaches the server. A refusal of
// another kind (a wrong password, an unknown database) is not waited out.
func TestOpeningWaitsForAFreeConnection(t *testing.T) {
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	admin, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer admin.Close(ctx)
	role := "aivis_limited_" + strings.ToLower(randid.New("r")[2:12])
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN CONNECTION LIMIT 1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	u, _ := url.Parse(dsn)
	u.User = url.User(role)
	held, err := pgx.Connect(ctx, u.String())
	must(t, err)

	pool, err := pgxpool.New(ctx, u.String())
	must(t, err)
	defer pool.Close()
	refused := make(chan struct{}, 1)
	reached := make(chan error, 1)
	go func() {
		reached <- postgres.Reach(ctx, pool, func() {
			select {
			case refused <- struct{}{}:
			default:
			}
		})
	}()
	select {
	case <-refused: // the fence: the server refused it for now
	case err := <-reached:
		t.Fatalf("reached a server at its limit: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no refusal within 10 s")
	}
	held.Close(ctx)
	select {
	case err := <-reached:
		if err != nil {
			t.Fatalf("once a connection was free: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not reach the server within 10 s of a free connection")
	}

	// Another refusal is not waited out.
	pool.Close()
	unknown, _ := url.Parse(dsn)
	unknown.Path = "/no_such_database_here"
	other, err := pgxpool.New(ctx, unknown.String())
	must(t, err)
	defer other.Close()
	if err := postgres.Reach(ctx, other, func() { t.Error("an unknown database waited out") }); err == nil {
		t.Error("reached an unknown database")
	}
}
