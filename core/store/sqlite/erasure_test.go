package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/storetest"
)

// TestErasure runs the erasure case on a file whose tables it lists from
// sqlite_master, read on a connection of its own.
func TestErasure(t *testing.T) {
	storetest.RunErasure(t, func(t *testing.T) (store.Store, storetest.Catalog) {
		dir := t.TempDir()
		box, _, err := secrets.Load(filepath.Join(dir, secrets.KeyFile), true)
		must(t, err)
		path := filepath.Join(dir, "aivis.db")
		db := open(t, path)
		db.SetSecrets(box)
		return cache.Wrap(db, db.Signal()), func(t *testing.T) map[string][]string {
			c, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
			must(t, err)
			defer c.Close()
			return catalog(t, c, `SELECT name FROM sqlite_master WHERE type = 'table'`)
		}
	})
}

// catalog reads every row of every table the query lists.
func catalog(t *testing.T, c *sql.DB, tables string) map[string][]string {
	t.Helper()
	var names []string
	rows, err := c.Query(tables)
	must(t, err)
	for rows.Next() {
		var n string
		must(t, rows.Scan(&n))
		names = append(names, n)
	}
	must(t, rows.Err())
	rows.Close()
	out := make(map[string][]string, len(names))
	for _, n := range names {
		rows, err := c.Query(`SELECT * FROM "` + n + `"`)
		must(t, err)
		cols, err := rows.Columns()
		must(t, err)
		out[n] = []string{}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			must(t, rows.Scan(ptrs...))
			out[n] = append(out[n], storetest.RowText(vals))
		}
		must(t, rows.Err())
		rows.Close()
	}
	return out
}
