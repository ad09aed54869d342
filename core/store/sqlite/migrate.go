package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/internal/lockfile"
)

//go:embed migrations/*.sql
var migrations embed.FS

// legacyTable is where aivis kept the applied versions before goose ran
// SQLite's migrations. It stays, in step with goose's table (legacySync),
// for the previous aivis, which reads it.
const legacyTable = "schema_migrations"

// Migrations is the runner of the migrations of the database file at
// path, on w (its writer connection, which the runner does not close).
func Migrations(w *sql.DB, path string) (*schema.Runner, error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return migrationsIn(w, path, dir)
}

// migrationsIn is the runner of the migrations in files.
func migrationsIn(w *sql.DB, path string, files fs.FS) (*schema.Runner, error) {
	return schema.New(w, schema.Engine{
		Dialect:     goose.DialectSQLite3,
		Files:       files,
		Locker:      fileLock{path: path + "-migrations.lock"},
		TableExists: tableExists,
	})
}

// OpenMigrations opens the database file at path for its migrations
// alone: the migrate command's. close closes it.
func OpenMigrations(ctx context.Context, path string) (r *schema.Runner, close func() error, err error) {
	w, err := openWriter(path)
	if err != nil {
		return nil, nil, err
	}
	if err := carryLegacy(ctx, w); err != nil {
		w.Close()
		return nil, nil, err
	}
	if r, err = Migrations(w, path); err != nil {
		w.Close()
		return nil, nil, err
	}
	return r, func() error { return errors.Join(legacySync(context.WithoutCancel(ctx), w), w.Close()) }, nil
}

// migrate carries the earlier bookkeeping over (carryLegacy), then does
// with the schema what policy allows.
func migrate(ctx context.Context, w *sql.DB, path string, policy schema.Policy) error {
	if err := carryLegacy(ctx, w); err != nil {
		return err
	}
	r, err := Migrations(w, path)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if err := r.Prepare(ctx, policy); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return legacySync(ctx, w)
}

// carryLegacy copies the versions of schema_migrations, the table of
// aivis's own runner before goose, into goose's table, once: when goose's
// table is not there yet. The first statement on a new file is retried
// while SQLite answers SQLITE_BUSY: several processes may open the same
// new file at once, and turning it to WAL on the first connection takes a
// lock for which SQLite does not always wait. It runs in a transaction
// begun IMMEDIATE, which waits for the write lock instead of upgrading a
// stale snapshot.
func carryLegacy(ctx context.Context, w *sql.DB) error {
	var err error
	for attempt, wait := 1, 10*time.Millisecond; ; attempt, wait = attempt+1, min(2*wait, 500*time.Millisecond) {
		err = inTx(ctx, w, func(tx *sql.Tx) error {
			var goose, legacy int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE name = ?), count(*) FILTER (WHERE name = ?)
				FROM sqlite_master WHERE type = 'table'`, schema.Table, legacyTable).Scan(&goose, &legacy); err != nil {
				return err
			}
			if goose > 0 || legacy == 0 {
				return nil
			}
			st, err := database.NewStore(database.DialectSQLite3, schema.Table)
			if err != nil {
				return err
			}
			if err := st.CreateVersionTable(ctx, tx); err != nil {
				return err
			}
			// goose orders its table by id: version 0 first, then the
			// versions in the order they were applied, which was theirs.
			_, err = tx.ExecContext(ctx, `INSERT INTO `+schema.Table+` (version_id, is_applied, tstamp)
				SELECT 0, 1, datetime('now')
				UNION ALL
				SELECT * FROM (SELECT version, 1, datetime(applied_at, 'unixepoch') FROM `+legacyTable+` ORDER BY version)`)
			return err
		})
		var se sqlite3.Error
		if err == nil || !errors.As(err, &se) || se.Code != sqlite3.ErrBusy || attempt == 20 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("sqlite: migrations table: %w", err)
	}
	return nil
}

// legacySync keeps schema_migrations in step with goose's table: the
// versions applied in it, the ones undone out of it. An earlier aivis,
// whose runner applies each of its files it does not find there, then
// opens a database this one made or migrated (expand/contract: the
// previous version runs on the new schema), and does not take an undone
// migration for applied.
func legacySync(ctx context.Context, w *sql.DB) error {
	if ok, err := tableExists(ctx, w, schema.Table); err != nil || !ok {
		return err
	}
	_, err := w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+legacyTable+` (
			version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT;
		DELETE FROM `+legacyTable+` WHERE version NOT IN (SELECT version_id FROM `+schema.Table+` WHERE is_applied);
		INSERT OR IGNORE INTO `+legacyTable+` (version, applied_at)
			SELECT version_id, coalesce(unixepoch(tstamp), unixepoch()) FROM `+schema.Table+` WHERE version_id > 0 AND is_applied`)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", legacyTable, err)
	}
	return nil
}

func tableExists(ctx context.Context, db *sql.DB, table string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
	return n > 0, err
}

// fileLock is goose's lock.SessionLocker on a lock file beside the
// database: SQLite has no lock a connection holds across transactions, and
// goose runs each migration in one of its own.
type fileLock struct{ path string }

// lockFiles are the lock files this process holds, by path. A flock is
// its open file's: a second open of the path, in this process too, waits.
var lockFiles sync.Map

func (l fileLock) SessionLock(ctx context.Context, _ *sql.Conn) error {
	f, err := lockfile.Open(l.path)
	if err != nil {
		return err
	}
	if err := lockfile.Wait(ctx, f); err != nil {
		f.Close()
		return err
	}
	lockFiles.Store(l.path, f)
	return nil
}

func (l fileLock) SessionUnlock(context.Context, *sql.Conn) error {
	if f, ok := lockFiles.LoadAndDelete(l.path); ok {
		return f.(interface{ Close() error }).Close()
	}
	return nil
}
