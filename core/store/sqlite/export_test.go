package sqlite

import (
	"database/sql"
	"io/fs"
	"testing/fstest"

	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/schema/schematest"
)

// CommitCounter reads the WAL index's commit counter as the cache sees it.
func CommitCounter(db *DB) (uint32, bool) { return db.signal.commits.counter() }

// ClaimQueries are the queries of a content request's claim, runnable as
// they stand (with their parameters bound to nulls).
var ClaimQueries = []string{`SELECT id FROM content_requests ` + claimExpired, claimAccount, claimClient,
	`SELECT id FROM content_requests ` + claimOldest}

// ReadingsQuery is the query of LatestReading and ListReadings.
var ReadingsQuery = readingsQuery

// LatestQueries are the queries of LatestReadings and LatestScans of
// ids domains, and LatestScan's.
var LatestQueries = []func(ids int) string{latestReadingsQuery, latestScansQuery, func(int) string { return latestScanQuery }}

// Queued is how many Update calls wait for the writer.
func Queued(db *DB) int {
	db.writer.mu.Lock()
	defer db.writer.mu.Unlock()
	return len(db.writer.queue)
}

// BeforeRedo sets what runs while a redo holds no transaction, until the
// test ends.
func BeforeRedo(t interface{ Cleanup(func()) }, f func()) {
	beforeRedo = f
	t.Cleanup(func() { beforeRedo = nil })
}

// PruneQueries are the retention's statements: deliveries, deleted
// webhooks, logged events.
var PruneQueries = []string{pruneDeliveries, pruneDeleted, pruneEvents}

// AfterCheckpoint sets what the checkpointer tells after each checkpoint,
// until the test ends.
func AfterCheckpoint(t interface{ Cleanup(func()) }, f func(frames, copied int)) {
	afterCheckpoint = f
	t.Cleanup(func() { afterCheckpoint = nil })
}

// NewerMigrations is the runner, on w, of this aivis's migrations and
// extra: a newer aivis's.
func NewerMigrations(w *sql.DB, path string, extra fstest.MapFS) (*schema.Runner, error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return migrationsIn(w, path, schematest.With(dir, extra))
}

// MigrationFiles are the engine's migrations.
func MigrationFiles() fs.FS {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err)
	}
	return dir
}
