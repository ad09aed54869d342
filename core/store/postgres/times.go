package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Times are stored in two columns: a timestamptz, which PostgreSQL keeps to
// the microsecond, and the nanoseconds past that microsecond (0 to 999) in
// a smallint named after it with _ns. pgx writes a timestamptz rounded down
// to its microsecond (before 1970 too), and reads add the nanoseconds back,
// so that every time from 0001-01-01 up to 10000-01-01 comes back exactly,
// in UTC; one outside that range is refused (the statement that writes it
// fails), never stored as another time. Queries compare and order the two
// columns as one value, (t, t_ns). A time a query compares with (since,
// now, a cut) may be any: outside the range it is -infinity or infinity,
// which compares the same.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	endTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// stamp is the timestamptz of a time a row must have.
type stamp time.Time

// TimestamptzValue refuses a time outside the range.
func (s stamp) TimestamptzValue() (pgtype.Timestamptz, error) {
	t := time.Time(s)
	if t.Before(minTime) || !t.Before(endTime) {
		return pgtype.Timestamptz{}, fmt.Errorf("postgres: time %s is outside what the store keeps (%s up to %s)",
			t.UTC().Format(time.RFC3339Nano), minTime.Format(time.DateOnly), endTime.Format(time.DateOnly))
	}
	return pgtype.Timestamptz{Time: t, Valid: true}, nil
}

// ts and ns are a time's two columns; tsz and nsz those of a time that may
// be none (NULL for the zero time).
func ts(t time.Time) any { return stamp(t) }

func ns(t time.Time) int16 { return int16(t.Nanosecond() % 1000) }

func tsz(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return stamp(t)
}

func nsz(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ns(t)
}

// bound is a time a query compares with, as its two columns: outside the
// range, -infinity or infinity.
func bound(t time.Time) (pgtype.Timestamptz, int16) {
	switch {
	case t.Before(minTime):
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, 0
	case !t.Before(endTime):
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, 0
	}
	return pgtype.Timestamptz{Time: t, Valid: true}, ns(t)
}

// tcol reads a time from its two columns: Scan(..., &c.t, &c.ns, ...).
type tcol struct {
	t  pgtype.Timestamptz
	ns pgtype.Int2
}

// time is the time read, in UTC; the zero time for NULL.
func (c *tcol) time() time.Time {
	if !c.t.Valid || c.t.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return c.t.Time.UTC().Add(time.Duration(c.ns.Int16))
}
