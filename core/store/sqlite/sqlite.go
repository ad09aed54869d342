// Package sqlite is the embedded storage engine: one SQLite file in WAL mode,
// one writer connection whose transactions take the write lock up front
// (BEGIN IMMEDIATE) and a pool of readers.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"

	sqlite3 "github.com/mattn/go-sqlite3"

	bus "github.com/aivis/aivis/core/bus/sqlite"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/internal/sqlitefile"
)

// DB is the SQLite implementation of store.Store.
type DB struct {
	w *sql.DB // one connection: every write is serialized here
	r *sql.DB // readers

	keyByHash   *sql.Stmt
	budget      *sql.Stmt
	signal      *signal
	writer      *writer
	checkpoints *checkpointer
	holders     *holders
	box         *secrets.Box                  // seals stored secrets; see SetSecrets
	metrics     atomic.Pointer[metrics.Store] // see SetMetrics
}

var _ store.Store = (*DB)(nil)

// SetMetrics gives the store what it counts in: the waits for the write
// lock and the events its commits publish.
func (db *DB) SetMetrics(m *metrics.Store) { db.metrics.Store(m) }

// driverName is go-sqlite3 with the settings its DSN cannot carry;
// writerDriver is the same for the writer connection, which leaves the
// WAL's checkpoints to the checkpointer.
const (
	driverName   = "sqlite3_aivis"
	writerDriver = "sqlite3_aivis_writer"
)

func init() {
	// Sorts and window functions use temporary b-trees; in memory they
	// cost a fraction of a temporary file each. fold is strings.ToLower,
	// which folds the letters of every script where SQLite's lower folds
	// ASCII only.
	connect := func(pragmas string) func(c *sqlite3.SQLiteConn) error {
		return func(c *sqlite3.SQLiteConn) error {
			if err := c.RegisterFunc("fold", strings.ToLower, true); err != nil {
				return err
			}
			_, err := c.Exec(pragmas, nil)
			return err
		}
	}
	sql.Register(driverName, textDriver{&sqlite3.SQLiteDriver{ConnectHook: connect("PRAGMA temp_store = MEMORY")}})
	sql.Register(writerDriver, textDriver{&sqlite3.SQLiteDriver{ConnectHook: connect("PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 0")}})
}

// textDriver is go-sqlite3 whose connections refuse a string argument that
// holds a NUL or bytes that are not UTF-8 before the statement runs
// (store's Text): SQLite would keep it, where PostgreSQL cannot.
type textDriver struct{ *sqlite3.SQLiteDriver }

func (d textDriver) Open(dsn string) (driver.Conn, error) {
	c, err := d.SQLiteDriver.Open(dsn)
	if err != nil {
		return nil, err
	}
	return textConn{c.(*sqlite3.SQLiteConn)}, nil
}

// textConn is a connection of textDriver: database/sql asks it of every
// argument of every statement, prepared or not.
type textConn struct{ *sqlite3.SQLiteConn }

func (textConn) CheckNamedValue(nv *driver.NamedValue) error {
	if s, ok := nv.Value.(string); ok && !text.Valid(s) {
		return store.ErrInvalidText
	}
	return driver.ErrSkip // converted as usual
}

// rawConn is the go-sqlite3 connection of a driver connection (conn.Raw).
func rawConn(dc any) (*sqlite3.SQLiteConn, error) {
	if c, ok := dc.(textConn); ok {
		return c.SQLiteConn, nil
	}
	return nil, fmt.Errorf("unexpected driver connection %T", dc)
}

// Open opens (creating if needed) the database file at path and applies any
// pending migrations.
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenWith(ctx, path, schema.Apply)
}

// OpenWith opens the database file at path, doing with its schema what
// policy allows (schema.Runner.Prepare): a schema newer than the binary is
// always refused.
func OpenWith(ctx context.Context, path string, policy schema.Policy) (*DB, error) {
	q := writerParams()
	w, err := openWriter(path)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, w, path, policy); err != nil {
		w.Close()
		return nil, err
	}
	// The outbox: Tx.Publish writes events to the bus's table.
	if err := bus.InitializeSchema(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: event bus schema: %w", err)
	}
	q.Set("_txlock", "deferred")
	q.Set("_query_only", "true")
	// A reader's page cache lasts until the next commit of any connection
	// (SQLite empties it when a read transaction finds the WAL changed);
	// a server in use commits every second (the request counts) or more
	// often. SQLite's default of 2 MB a connection held pages that were
	// seldom read again and kept the C heap that large for each reader;
	// 512 KiB keep the indexes' upper pages. The checkpointer, which
	// copies pages without caching them, gets the same.
	q.Set("_cache_size", "-512")
	r, err := sql.Open(driverName, sqlitefile.DSN(path, q))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	q.Set("_query_only", "false")
	db := &DB{w: w, r: r}
	db.writer = newWriter(db)
	if db.checkpoints, err = startCheckpointer(sqlitefile.DSN(path, q)); err != nil {
		db.Close()
		return nil, err
	}
	db.keyByHash, err = r.PrepareContext(ctx, principalQuery)
	if err == nil {
		db.budget, err = r.PrepareContext(ctx, budgetQuery)
	}
	if err == nil {
		db.signal, err = newSignal(ctx, r, path)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: prepare: %w", err)
	}
	if db.holders, err = claimHolder(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: holders: %w", err)
	}
	go db.holders.run(db)
	return db, nil
}

// writerParams are the writer connection's settings.
func writerParams() url.Values {
	q := sqlitefile.Params()
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	// Statements are prepared once per connection and kept: preparing
	// costs more than running most of them.
	q.Set("_stmt_cache_size", "256")
	return q
}

// openWriter opens the writer connection of the file at path.
func openWriter(path string) (*sql.DB, error) {
	w, err := sql.Open(writerDriver, sqlitefile.DSN(path, writerParams()))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	return w, nil
}

// Ping reads the file, as every request's reads do.
func (db *DB) Ping(ctx context.Context) error {
	var v int
	return db.r.QueryRowContext(ctx, `SELECT 1 FROM `+schema.Table+` LIMIT 1`).Scan(&v)
}

// Close closes both pools.
func (db *DB) Close() error {
	var c *commits
	if db.holders != nil {
		db.holders.stop()
	}
	db.writer.stop()
	if db.checkpoints != nil {
		db.checkpoints.stop()
	}
	if db.signal != nil {
		c = db.signal.close()
	}
	for _, st := range []*sql.Stmt{db.keyByHash, db.budget} {
		if st != nil {
			st.Close()
		}
	}
	err := errors.Join(db.r.Close(), db.w.Close())
	c.close()
	return err
}

func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Pools are the writer (one connection) and the readers, for tests and
// diagnostics that read the file as the store does. The event bus opens
// connections of its own (bus.OpenDB).
func (db *DB) Pools() (write, read *sql.DB) { return db.w, db.r }

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// anyBytes is a string that may hold any bytes (PostgreSQL's bytea): a
// request's content, an endpoint's answer. textConn passes it over, and
// database/sql binds it as the string it is.
type anyBytes string

// nullAnyBytes is s as anyBytes, NULL when empty.
func nullAnyBytes(s string) any {
	if s == "" {
		return nil
	}
	return anyBytes(s)
}

// listJSON is a list as the JSON text SQLite keeps it, refusing an element
// that is not text (store's Text), which JSON would escape (a NUL) or
// replace (bytes that are not UTF-8).
func listJSON(l []string) (string, error) {
	for _, s := range l {
		if !text.Valid(s) {
			return "", store.ErrInvalidText
		}
	}
	b, err := json.Marshal(nonNil(l))
	return string(b), err
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

func conflict(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrConstraint {
		return fmt.Errorf("%w: %v", store.ErrConflict, err)
	}
	return err
}
