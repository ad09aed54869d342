package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// columns gathers rows as one array a column, for a statement that reads
// them with unnest: one statement, and one round trip, writes them all,
// and its text is the same for any number of rows (one prepared statement).
// Each row begins with row(), then gives its values in the columns' order.
type columns struct {
	cols []any // a slice a column
	i    int   // the next column of the row
	err  error // the first time out of the store's range
}

// put appends v to the row's next column.
func put[T any](c *columns, v T) {
	if c.i == len(c.cols) {
		c.cols = append(c.cols, []T(nil))
	}
	c.cols[c.i] = append(c.cols[c.i].([]T), v)
	c.i++
}

func (c *columns) row() { c.i = 0 }

func (c *columns) text(vs ...string) {
	for _, v := range vs {
		put(c, v)
	}
}

// nullText is NULL for "".
func (c *columns) nullText(s string) { put(c, pgtype.Text{String: s, Valid: s != ""}) }

func (c *columns) bytes(b []byte) {
	if b == nil {
		b = []byte{} // NULL in an array
	}
	put(c, b)
}

func (c *columns) int(n int) { put(c, int32(n)) }

func (c *columns) int64(n int64) { put(c, n) }

// nullInt is NULL for 0.
func (c *columns) nullInt(n int) { put(c, pgtype.Int4{Int32: int32(n), Valid: n != 0}) }

// time is a time's two columns (times.go), refused outside the range.
func (c *columns) time(t time.Time) {
	v, err := stamp(t).TimestamptzValue()
	if err != nil && c.err == nil {
		c.err = err
	}
	put(c, v)
	put(c, pgtype.Int2{Int16: ns(t), Valid: true})
}

// nullTime is the two columns of a time that may be none (NULL for the
// zero time).
func (c *columns) nullTime(t time.Time) {
	if t.IsZero() {
		put(c, pgtype.Timestamptz{})
		put(c, pgtype.Int2{})
		return
	}
	c.time(t)
}

// params are the statement's parameters of the columns, typed as arrays of
// types, one a column.
func (c *columns) params(types ...string) string {
	if len(types) != len(c.cols) {
		panic(fmt.Sprintf("postgres: %d column types for %d columns", len(types), len(c.cols)))
	}
	p := make([]string, len(types))
	for i, t := range types {
		p[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	return strings.Join(p, ", ")
}

func (c *columns) args() []any { return c.cols }
