// Package randid makes random identifiers and credentials from crypto/rand.
package randid

import (
	"crypto/rand"
	"strings"
	"time"
)

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// String returns n characters of [A-Za-z0-9], uniformly drawn.
func String(n int) string {
	out := make([]byte, n)
	buf := make([]byte, n+n/4+8)
	for i := 0; i < n; {
		rand.Read(buf) // never fails (crypto/rand since Go 1.24)
		for _, b := range buf {
			// 248 = 4*62: rejecting larger bytes keeps the draw uniform.
			if b < 248 && i < n {
				out[i] = alphabet[b%62]
				i++
			}
		}
	}
	return string(out)
}

// New returns prefix + "_" + 20 random characters (119 bits).
func New(prefix string) string { return prefix + "_" + String(20) }

// sortable is base 62 in byte order, so that encoded times sort as they
// compare.
const sortable = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Sorted returns prefix + "_" + 20 characters that sort by creation time:
// 9 for the microseconds since the Unix epoch (good until the year 2398),
// then 11 random ones (65 bits). Records keyed by such ids are appended to
// their indexes instead of scattered over them, which keeps a batch of
// inserts on few pages. Only for records whose creation time is no secret.
func Sorted(prefix string, t time.Time) string {
	var b [20]byte
	putTime(b[:9], t)
	copy(b[9:], String(11))
	return prefix + "_" + string(b[:])
}

// SortedFloor returns what every id Sorted makes at t or later sorts at or
// above, and every id it makes before t sorts below: the bound of a range
// of time.
func SortedFloor(prefix string, t time.Time) string {
	var b [9]byte
	putTime(b[:], t)
	return prefix + "_" + string(b[:])
}

// SortedTime is the time, to the microsecond, of an id Sorted made;
// false for a string it did not make.
func SortedTime(id string) (time.Time, bool) {
	_, rest, ok := strings.Cut(id, "_")
	if !ok || len(rest) != 20 {
		return time.Time{}, false
	}
	var us int64
	for _, c := range []byte(rest[:9]) {
		d := strings.IndexByte(sortable, c)
		if d < 0 {
			return time.Time{}, false
		}
		us = us*62 + int64(d)
	}
	return time.UnixMicro(us), true
}

// putTime writes the microseconds since the Unix epoch in 9 characters.
func putTime(b []byte, t time.Time) {
	us := uint64(max(t.UnixMicro(), 0))
	for i := 8; i >= 0; i-- {
		b[i] = sortable[us%62]
		us /= 62
	}
}
