package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"time"
)

// Times are stored as Unix nanoseconds in an INTEGER, which holds
// 1677-09-21 to 2262-04-11. time.Time.UnixNano is undefined outside that
// range (it wraps around into another time), so a time to store is
// refused there with an error instead: the store's contract asks every
// engine to keep 1970 to 2200 exactly, and to keep or refuse, never
// change, any other time.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos is a time to store; its value is its Unix nanoseconds.
type nanos time.Time

func (n nanos) Value() (driver.Value, error) {
	t := time.Time(n)
	if t.Before(minTime) || t.After(maxTime) {
		return nil, fmt.Errorf("sqlite: time %s is outside what the store keeps (%s to %s)",
			t.UTC().Format(time.RFC3339Nano), minTime.UTC().Format(time.DateOnly), maxTime.UTC().Format(time.DateOnly))
	}
	return t.UnixNano(), nil
}

// stamp is a time every row has (a creation, a measurement): the zero
// time is refused like any other it cannot hold.
func stamp(t time.Time) any { return nanos(t) }

// ns is a time that may be none: NULL for the zero time.
func ns(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return nanos(t)
}

// bound is a time a query compares with (since, before, now): any time,
// clamped to the stored range, where it compares the same.
func bound(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

func fromNS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64).UTC()
}
