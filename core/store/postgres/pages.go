package postgres

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
)

// where builds a query's conditions: each ? of a condition becomes the
// next $n, its argument appended.
type where struct {
	conds []string
	args  []any
}

func (w *where) and(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

// owner adds the condition of exactly one owner on a client_id that is
// NULL for the account's own (an index serves either form).
func (w *where) owner(column, clientID string) {
	if clientID == "" {
		w.and(column + " IS NULL")
	} else {
		w.and(column+" = ?", clientID)
	}
}

func (w *where) String() string { return strings.Join(w.conds, " AND ") }

// pageCursor is the opaque cursor after a row of a page ordered by a time
// and an id (the time exactly, whatever its year).
func pageCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + " " + id))
}

// decodeCursor reads back what pageCursor made (ErrMalformed for anything
// else: an id is text).
func decodeCursor(s string) (time.Time, string, error) {
	b, _ := base64.RawURLEncoding.DecodeString(s)
	ts, id, _ := strings.Cut(string(b), " ")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || id == "" || !text.Valid(id) || pageCursor(t, id) != s {
		return time.Time{}, "", store.ErrMalformed
	}
	return t.UTC(), id, nil
}

// listPage reads one page of rows newest first by a time column (with its
// _ns) and id, and the cursor of the next page ("" on the last). q selects
// the rows; w holds their conditions, to which the cursor's is added.
func listPage[T any](ctx context.Context, db *DB, what, q string, w where, timeCol, cursor string, limit int,
	scan func(scanner) (T, error), key func(T) (time.Time, string)) ([]T, string, error) {
	if limit <= 0 {
		limit = 20
	}
	if cursor != "" {
		at, id, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		t, n := bound(at)
		w.and(fmt.Sprintf("(%[1]s, %[1]s_ns, id) < (?, ?, ?)", timeCol), t, n, id)
	}
	q += ` WHERE ` + w.String() + fmt.Sprintf(` ORDER BY %[1]s DESC, %[1]s_ns DESC, id DESC LIMIT %d`, timeCol, limit+1)
	return queryPage(ctx, db.pool, what, q, w.args, limit, scan, func(v T) string { return pageCursor(key(v)) })
}

// queryPage runs q, whose LIMIT is one past limit, and returns at most
// limit rows and, when more follow, the cursor of the last one.
func queryPage[T any](ctx context.Context, q querier, what, sql string, args []any, limit int,
	scan func(scanner) (T, error), cursor func(T) string) ([]T, string, error) {
	out, err := collect(ctx, q, scan, sql, args...)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list %s: %w", what, err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, cursor(out[limit-1]), nil
}
