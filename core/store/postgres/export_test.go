package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/schema/schematest"
)

// OpenBeating opens a handle whose holder beats every beat and takes
// another unseen for timeout for dead.
func OpenBeating(ctx context.Context, url string, box *secrets.Box, beat, timeout time.Duration) (*DB, error) {
	return open(ctx, url, box, holderTimes{beat: beat, timeout: timeout}, schema.Apply)
}

// Crash stops db as a process that dies does: its holder beats no more and
// is not forgotten.
func Crash(db *DB) {
	db.holders.once.Do(func() {
		close(db.holders.quit)
		<-db.holders.done
	})
	db.pool.Close()
}

// Fold folds the cache versions' bumps, as each beat does.
func Fold(ctx context.Context, db *DB) error { return db.signal.fold(ctx) }

// ClaimQueries are the claims' queries by name, with the index each is to
// use, runnable as they stand with the arguments of ClaimArgs.
var ClaimQueries = []struct{ Name, Query, Index string }{
	{"deliveries due", claimDue, "webhook_deliveries_due"},
	{"deliveries of a webhook", claimWebhook, "webhook_deliveries_due_by_webhook"},
	{"next due", nextDue, "webhook_deliveries_due"},
	{"queued scan", fmt.Sprintf(claimScan, claimQueuedScan), "scans_queued"},
	{"expired scan", fmt.Sprintf(claimScan, claimExpiredScan), "scans_expiry"},
	{"expired content request", claimExpired, "content_requests_expiry"},
	{"queued content request", claimQueued, "content_requests_queued"},
}

// ClaimArgs are arguments for each of ClaimQueries, at now.
func ClaimArgs(name string, now time.Time) []any {
	at, n := bound(now)
	switch name {
	case "deliveries due":
		return []any{at, n, "lease", ts(now), ns(now), 10, 2, []string{}}
	case "deliveries of a webhook":
		return []any{at, n, "lease", ts(now), ns(now), "wh_1", 10}
	case "next due", "expired content request":
		return []any{at, n}
	case "queued scan":
		return []any{"proc", ts(now), ns(now), ts(now), ns(now)}
	case "expired scan":
		return []any{"proc", ts(now), ns(now), ts(now), ns(now), at, n}
	}
	return nil
}

// NewerMigrations is the runner, on db, of this aivis's migrations and
// extra: a newer aivis's.
func NewerMigrations(db *sql.DB, extra fstest.MapFS) (*schema.Runner, error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return runnerIn(db, schematest.With(dir, extra))
}

// MigrationFiles are the engine's migrations.
func MigrationFiles() fs.FS {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err)
	}
	return dir
}

// Reach is reach, told of each refusal it waits out on refusals.
func Reach(ctx context.Context, pool *pgxpool.Pool, refusals func()) error {
	refused = refusals
	defer func() { refused = nil }()
	return reach(ctx, pool)
}

// ExecIn runs a statement in an Update's transaction.
func ExecIn(tx store.Tx, sql string) error {
	t := tx.(*txn)
	_, err := t.tx.Exec(t.ctx, sql)
	return err
}
