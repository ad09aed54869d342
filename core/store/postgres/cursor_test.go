package postgres

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store/storetest"
	"github.com/aivis/aivis/core/text"
)

// key is what a page cursor holds: a time and an id.
type key struct {
	at time.Time
	id string
}

// FuzzPageCursor: decodeCursor reads back what pageCursor made of any
// time the store keeps (the years 1 to 9999, to the nanosecond) and id
// (text), in UTC, and refuses everything else with ErrMalformed: another
// writing of the same time (an offset, trailing zeros), an id that is
// not text.
func FuzzPageCursor(f *testing.F) {
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	at := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	for _, c := range []string{pageCursor(at, "cr_1"), pageCursor(at, "42"), pageCursor(minTime, "a b"), pageCursor(endTime.Add(-1), "é"),
		"", "!!!", raw("2025-06-01T12:00:00Z"), raw("2025-06-01T12:00:00Z "), raw("2025-06-01T12:00:00z cr_1"),
		raw("10000-01-01T00:00:00Z cr_1"), pageCursor(at, "cr_1") + "A"} {
		f.Add(c, at.Unix(), int64(at.Nanosecond()), "cr_1")
	}
	enc := func(k key) string { return pageCursor(k.at, k.id) }
	dec := func(s string) (key, error) {
		t, id, err := decodeCursor(s)
		return key{t, id}, err
	}
	same := func(a, b key) bool { return a.at.Equal(b.at) && a.at.Location() == time.UTC && a.id == b.id }
	kept := func(k key) bool {
		return !k.at.Before(minTime) && k.at.Before(endTime) && k.id != "" && text.Valid(k.id)
	}
	f.Fuzz(func(t *testing.T, cursor string, sec, nsec int64, id string) {
		lo, hi := minTime.Unix(), endTime.Unix()
		at := time.Unix(lo+(sec%(hi-lo)+(hi-lo))%(hi-lo), (nsec%1e9+1e9)%1e9)
		storetest.CheckCursor(t, enc, dec, same, kept, key{at, id}, cursor)
	})
}
