// Package retryafter reads the Retry-After header: the one reading shared
// by the webhook sender, the AI engine client and the connectors.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Retry-After value given in seconds (fractions tolerated)
// or as an HTTP date; 0 when absent, unreadable or in the past.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return max(time.Duration(s*float64(time.Second)), 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// Header reads the Retry-After of a response's header.
func Header(h http.Header, now time.Time) time.Duration { return Parse(h.Get("Retry-After"), now) }
