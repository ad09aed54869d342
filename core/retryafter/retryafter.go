// Package retryafter reads the Retry-After header: the one reading shared
// by the webhook sender, the AI engine client and the connectors.
package retryafter

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Retry-After value given in seconds (fractions tolerated)
// or as an HTTP date; 0 when absent, unreadable or in the past; the
// longest Duration for more seconds than it holds.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch d := s * float64(time.Second); {
		case !(d > 0): // none, negative, NaN
			return 0
		case d >= math.MaxInt64:
			return math.MaxInt64
		default:
			return time.Duration(d)
		}
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// Header reads the Retry-After of a response's header.
func Header(h http.Header, now time.Time) time.Duration { return Parse(h.Get("Retry-After"), now) }
