package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/aivis/aivis/internal/sqlitefile"
)

// writerDriver is go-sqlite3 for the bus's writer connection, which leaves
// the WAL's checkpoints to whoever runs them for the file (the store's
// checkpointer): SQLite's automatic checkpoint would run inside an offset
// write, fsync included, and hold up the subscription that waits for it.
const writerDriver = "sqlite3_aivis_bus_writer"

func init() {
	sql.Register(writerDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA wal_autocheckpoint = 0", nil)
		return err
	}})
}

// OpenDB opens the database file at path for the bus, on connections of
// its own: a writer pool of one connection whose transactions begin
// IMMEDIATE (a lease, an offset or a retention batch: short writes that
// wait for the file's other writers up to a 10 s busy timeout), and a pool
// of read-only connections, for NewSubscriber. The file is in WAL mode, so
// reading never waits for a writer. The schema is not created: the
// publisher's side does that (InitializeSchema) where it writes the
// messages. Close both pools after the subscribers.
func OpenDB(ctx context.Context, path string) (write, read *sql.DB, err error) {
	q := sqlitefile.Params()
	// The subscriptions run the same few statements over and over.
	q.Set("_stmt_cache_size", "32")
	q.Set("_txlock", "immediate")
	write, err = sql.Open(writerDriver, sqlitefile.DSN(path, q))
	if err != nil {
		return nil, nil, fmt.Errorf("bus: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	q.Set("_txlock", "deferred")
	q.Set("_query_only", "true")
	q.Set("_cache_size", "-512")
	read, err = sql.Open("sqlite3", sqlitefile.DSN(path, q))
	if err != nil {
		write.Close()
		return nil, nil, fmt.Errorf("bus: open readers of %s: %w", path, err)
	}
	// A subscription reads from one goroutine, the newest rows of an
	// index: two connections with a small page cache each.
	read.SetMaxOpenConns(2)
	read.SetMaxIdleConns(2)
	read.SetConnMaxIdleTime(0)
	if err := write.PingContext(ctx); err != nil {
		read.Close()
		write.Close()
		return nil, nil, fmt.Errorf("bus: open %s: %w", path, err)
	}
	return write, read, nil
}
