package sqlite

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store/storetest"
	"github.com/aivis/aivis/core/text"
)

// key is what a page cursor holds: a time in Unix nanoseconds and an id.
type key struct {
	nanos int64
	id    string
}

// FuzzPageCursor: decodeCursor reads back what pageCursor made of any
// time (in Unix nanoseconds) and id (text), and refuses everything else
// with ErrMalformed: another writing of the same time, an id that is not
// text.
func FuzzPageCursor(f *testing.F) {
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	at := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	for _, c := range []string{pageCursor(at, "cr_1"), pageCursor(at, "42"), pageCursor(time.Unix(0, -1), "é:x"), "", "!!!",
		raw("1748779200123456789:"), raw(":cr_1"), raw("99999999999999999999:cr_1"), pageCursor(at, "cr_1") + "A"} {
		f.Add(c, at.UnixNano(), "cr_1")
	}
	enc := func(k key) string { return pageCursor(time.Unix(0, k.nanos), k.id) }
	dec := func(s string) (key, error) {
		n, id, err := decodeCursor(s)
		return key{n, id}, err
	}
	f.Fuzz(func(t *testing.T, cursor string, nanos int64, id string) {
		storetest.CheckCursor(t, enc, dec, func(a, b key) bool { return a == b },
			func(k key) bool { return k.id != "" && text.Valid(k.id) }, key{nanos, id}, cursor)
	})
}
