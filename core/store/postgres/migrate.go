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
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the session advisory lock held while migrations run,
// so that of several instances opening one database at once, one applies
// them and the others find them applied: hash("aivis migrations").
const migrationLock int64 = 0x61697669736d6967

// migrate applies the pending migrations (goose, its versions in
// goose_db_version), each in a transaction of its own, under the lock.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, dir, goose.WithSessionLocker(sessionLock{}))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
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
