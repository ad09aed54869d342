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

// stamp is a time every row has (a creation, a measurement), as its Unix
// nanoseconds; one the store cannot hold, the zero time included, is
// refused when the statement runs (outside, a time that reads as an error).
func stamp(t time.Time) any {
	if t.Before(minTime) || t.After(maxTime) {
		return outside(t)
	}
	return t.UnixNano()
}

// ns is a time that may be none: NULL for the zero time.
func ns(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return stamp(t)
}

// outside is a time the store cannot hold: binding it fails the statement.
type outside time.Time

func (o outside) Value() (driver.Value, error) {
	return nil, fmt.Errorf("sqlite: time %s is outside what the store keeps (%s to %s)",
		time.Time(o).UTC().Format(time.RFC3339Nano), minTime.UTC().Format(time.DateOnly), maxTime.UTC().Format(time.DateOnly))
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
