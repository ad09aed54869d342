package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/aivis/aivis/core/store/schema"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the session advisory lock held while migrations run,
// so that of several instances opening one database at once, one applies
// them and the others find them applied: hash("aivis migrations").
const migrationLock int64 = 0x61697669736d6967

// newRunner is the runner of the migrations (goose, its versions in
// goose_db_version), each in a transaction of its own, under the lock, on
// db (which the runner does not close).
func newRunner(db *sql.DB) (*schema.Runner, error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return runnerIn(db, dir)
}

// runnerIn is the runner of the migrations in files.
func runnerIn(db *sql.DB, files fs.FS) (*schema.Runner, error) {
	return schema.New(db, schema.Engine{
		Dialect: goose.DialectPostgres,
		Files:   files,
		Locker:  sessionLock{},
		TableExists: func(ctx context.Context, db *sql.DB, table string) (bool, error) {
			var ok bool
			err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok)
			return ok, err
		},
	})
}

// OpenMigrations connects to the database at url for its migrations
// alone: the migrate command's. close closes the connection.
func OpenMigrations(ctx context.Context, url string) (r *schema.Runner, close func() error, err error) {
	pool, err := connect(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	if r, err = newRunner(db); err != nil {
		db.Close()
		pool.Close()
		return nil, nil, err
	}
	return r, func() error { err := db.Close(); pool.Close(); return err }, nil
}

// migrate does with the schema what policy allows (schema.Runner.Prepare).
func migrate(ctx context.Context, pool *pgxpool.Pool, policy schema.Policy) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	r, err := newRunner(db)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := r.Prepare(ctx, policy); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// sessionLock is goose's lock.SessionLocker on a blocking advisory lock:
// an instance waits for another's migrations as long as they take (and its
// context allows), where goose's own locker polls every few seconds.
type sessionLock struct{}

func (sessionLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock)
	return err
}

func (sessionLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, migrationLock)
	return err
}
