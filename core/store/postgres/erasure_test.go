package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/storetest"
	"github.com/aivis/aivis/internal/testsvc"
)

// TestErasure runs the erasure case on a fresh database whose tables it
// lists from information_schema, read on a connection of its own.
func TestErasure(t *testing.T) {
	storetest.RunErasure(t, func(t *testing.T) (store.Store, storetest.Catalog) {
		url := testsvc.Postgres(t)
		db := open(t, url, box(t))
		return cache.Wrap(db, db.Signal()), func(t *testing.T) map[string][]string {
			ctx := context.Background()
			c, err := pgx.Connect(ctx, url)
			must(t, err)
			defer c.Close(ctx)
			rows, err := c.Query(ctx, `SELECT table_name FROM information_schema.tables
				WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
			must(t, err)
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			must(t, err)
			out := make(map[string][]string, len(names))
			for _, n := range names {
				rows, err := c.Query(ctx, `SELECT * FROM "`+n+`"`)
				must(t, err)
				out[n] = []string{}
				for rows.Next() {
					vals, err := rows.Values()
					must(t, err)
					out[n] = append(out[n], storetest.RowText(vals))
				}
				must(t, rows.Err())
			}
			return out
		}
	})
}
