package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/aivis/aivis/core/store"
)

// fresh caches the reads on the hot path of every request (a key with its
// account, an account's budget) for as long as the database is unchanged.
// "Unchanged" is SQLite's PRAGMA data_version on a dedicated connection,
// which moves whenever any other connection, in this process or another
// (the CLI), commits. So a key revoked or a tier changed anywhere is seen
// by the next request, and a cached read costs one cheap pragma instead of
// a query whose columns each cross cgo.
type fresh struct {
	mu      sync.Mutex // guards the connection and its statement
	conn    *sql.Conn
	stmt    driver.Stmt
	dest    []driver.Value
	cacheMu sync.Mutex
	version int64
	keys    map[string]store.Principal
	budgets map[budgetKey]budgetEntry
}

type budgetKey struct{ account, month string }

type budgetEntry struct {
	b      store.BudgetMonth
	active int
}

// maxEntries bounds each cache; past it the cache starts afresh.
const maxEntries = 50_000

func newFresh(ctx context.Context, db *sql.DB) (*fresh, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	f := &fresh{conn: conn, dest: make([]driver.Value, 1), version: -1}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		f.stmt, err = c.Prepare("PRAGMA data_version")
		return err
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite: data_version: %w", err)
	}
	return f, nil
}

func (f *fresh) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stmt != nil {
		f.stmt.Close()
	}
	f.conn.Close()
}

// current reads the data version and drops the caches if it moved. The
// version is read before any query whose result is cached under it, so a
// commit that lands in between only costs a miss.
func (f *fresh) current() (int64, error) {
	f.mu.Lock()
	rows, err := f.stmt.Query(nil)
	if err == nil {
		err = rows.Next(f.dest)
		rows.Close()
	}
	v, _ := f.dest[0].(int64)
	f.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("sqlite: data_version: %w", err)
	}
	f.cacheMu.Lock()
	if v != f.version {
		f.version = v
		f.keys = make(map[string]store.Principal)
		f.budgets = make(map[budgetKey]budgetEntry)
	}
	f.cacheMu.Unlock()
	return v, nil
}

func (f *fresh) principal(hash []byte) (store.Principal, bool) {
	f.cacheMu.Lock()
	p, ok := f.keys[string(hash)]
	f.cacheMu.Unlock()
	return p, ok
}

func (f *fresh) putPrincipal(v int64, hash []byte, p store.Principal) {
	f.cacheMu.Lock()
	if v == f.version {
		if len(f.keys) >= maxEntries {
			clear(f.keys)
		}
		f.keys[string(hash)] = p
	}
	f.cacheMu.Unlock()
}

func (f *fresh) budget(k budgetKey) (budgetEntry, bool) {
	f.cacheMu.Lock()
	e, ok := f.budgets[k]
	f.cacheMu.Unlock()
	return e, ok
}

func (f *fresh) putBudget(v int64, k budgetKey, e budgetEntry) {
	f.cacheMu.Lock()
	if v == f.version {
		if len(f.budgets) >= maxEntries {
			clear(f.budgets)
		}
		f.budgets[k] = e
	}
	f.cacheMu.Unlock()
}
