package retryafter

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"": 0, "soon": 0, "-3": 0, "120": 2 * time.Minute, " 7 ": 7 * time.Second, "0.01": 10 * time.Millisecond,
		"NaN": 0, "1e-400": 0, "1e10": math.MaxInt64, "+Inf": math.MaxInt64, "1e400": math.MaxInt64,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got := Parse(v, now); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}
