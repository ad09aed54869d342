package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"github.com/aivis/aivis/core/store/cache"
)

// signal is the SQLite engine's cache.Signal. cache_epoch holds a counter
// per topic, moved by triggers on the tables each topic covers (n: keys,
// accounts and clients; budgets: the budget ledger, and the inserts,
// deletes and state changes of content requests, which the content engine
// makes at each step, so that those leave the key cache warm; webhooks:
// what the fan-out matches). Any connection's commit, in this process or
// another (the CLI, another server), moves them. Reading them costs one
// small statement, which is run only after a commit: the WAL index's
// commit counter, shared by every process and mapped here, says when.
type signal struct {
	mu      sync.Mutex // guards what follows
	conn    *sql.Conn
	stmt    driver.Stmt
	dest    []driver.Value
	commits *commits // nil where the -shm file cannot be mapped
	seen    uint32   // the commit counter before the last reading
	valid   bool     // seen and version are set
	version cache.Versions
}

func newSignal(ctx context.Context, db *sql.DB, path string) (*signal, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s := &signal{conn: conn, dest: make([]driver.Value, 3)}
	err = conn.Raw(func(dc any) error {
		c, err := rawConn(dc)
		if err != nil {
			return err
		}
		s.stmt, err = c.Prepare("SELECT n, budgets, webhooks FROM cache_epoch")
		return err
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite: cache epoch: %w", err)
	}
	// The -shm file exists once a connection has read the database in WAL mode.
	if _, err := s.Versions(ctx); err != nil {
		s.close() // commits is not open yet
		return nil, err
	}
	s.commits = watchCommits(path)
	return s, nil
}

// Versions reads cache_epoch, unless no commit was made since it last did.
func (s *signal) Versions(ctx context.Context) (cache.Versions, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, watched := s.commits.counter()
	if watched && s.valid && n == s.seen {
		return s.version, nil
	}
	rows, err := s.stmt.Query(nil)
	if err == nil {
		err = rows.Next(s.dest)
		rows.Close()
	}
	if err != nil {
		return cache.Versions{}, fmt.Errorf("sqlite: cache epoch: %w", err)
	}
	var v cache.Versions
	v.Keys, _ = s.dest[0].(int64)
	v.Budgets, _ = s.dest[1].(int64)
	v.Targets, _ = s.dest[2].(int64)
	s.seen, s.valid, s.version = n, watched, v
	return v, nil
}

// close closes the connection and hands back the commit watcher, which the
// caller closes after every other connection (see commits).
func (s *signal) close() *commits {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.commits
	s.commits = nil
	if s.stmt != nil {
		s.stmt.Close()
	}
	s.conn.Close()
	return c
}

// Signal is what tells the caches in front of this database (core/store/
// cache) that a commit may have changed what they hold.
func (db *DB) Signal() cache.Signal { return db.signal }
