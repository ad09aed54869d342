package api

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/internal/syncbuf"
	"github.com/aivis/aivis/internal/testsvc"
)

// TestRedisUnreachableFailsClosed: with the counter and the guards on a
// Redis server that goes away, every authenticated request, on both
// interfaces, and every attempt at credentials, right or wrong, API or
// dashboard, is answered 503 RATE_LIMIT_UNAVAILABLE with Retry-After and
// the same retry_after, never served uncounted; the outage is logged once.
// When the server is back, requests are served and counted again.
func TestRedisUnreachableFailsClosed(t *testing.T) {
	redisURL, prefix := testsvc.Redis(t)
	relay := testsvc.NewRelay(t, redisURL)
	rdb, err := limits.NewRedisClient(relay.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	var logs syncbuf.Buffer
	counter := limits.NewRedis(rdb, prefix, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	a := newTLSAppOn(t, func() time.Time { return fuzzBase }, 5, nil, counter, counter.Guard)
	bs := "/api/v1/ai/budget-status"
	valid := keyAndSecret(fuzzKey, fuzzSecret)
	remaining := func() string {
		t.Helper()
		ans := a.call(t, http.MethodGet, bs, valid, "")
		if ans.status != http.StatusOK {
			t.Fatalf("budget-status with Redis up: %d %s", ans.status, ans.err.Message)
		}
		return ans.header.Get("X-RateLimit-Remaining")
	}
	if got := remaining(); got != "299" {
		t.Fatalf("X-RateLimit-Remaining %s after the first request, want 299 of the minute's 300", got)
	}

	relay.Cut()
	for _, req := range []struct {
		what, path string
		header     map[string]string
	}{
		{"valid credentials", bs, valid},
		{"a valid bearer key", "/v1/visibility?domain=example.com", bearerKey(fuzzKey)},
		{"a wrong secret", bs, keyAndSecret(fuzzKey, "wrong")},
		{"a revoked key", bs, keyAndSecret(fuzzRevokedKey, fuzzRevokedSecret)},
		{"valid credentials again", bs, valid},
	} {
		ans := a.call(t, http.MethodGet, req.path, req.header, "")
		if ans.status != http.StatusServiceUnavailable || ans.err.Code != string(fault.RateLimitUnavailable) {
			t.Fatalf("%s with Redis gone: %d %s %q; want 503 %s", req.what, ans.status, ans.err.Code, ans.err.Message, fault.RateLimitUnavailable)
		}
		if ans.err.RetryAfter == nil || *ans.err.RetryAfter != limits.UnavailableRetry || ans.header.Get("Retry-After") != "5" ||
			!strings.HasSuffix(ans.err.Message, "; retry after 5 seconds") {
			t.Errorf("%s: retry_after %v, Retry-After %q, message %q; want the wait of %d seconds in all three",
				req.what, ans.err.RetryAfter, ans.header.Get("Retry-After"), ans.err.Message, limits.UnavailableRetry)
		}
		if strings.Contains(ans.err.Message, "127.0.0.1") || strings.Contains(ans.err.Message, "dial") {
			t.Errorf("%s: the message %q tells how Redis is reached", req.what, ans.err.Message)
		}
	}
	if st := a.signIn(t, "owner@example.com", "any password"); st != http.StatusServiceUnavailable {
		t.Errorf("a dashboard sign-in with Redis gone: %d, want 503", st)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "503 RATE_LIMIT_UNAVAILABLE") {
		t.Errorf("the outage logged %d times, want once:\n%s", n, logs.String())
	}

	relay.Mend(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ans := a.call(t, http.MethodGet, bs, valid, "")
		if ans.status == http.StatusOK {
			break
		}
		if ans.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("once Redis is back: %d %s", ans.status, ans.err.Message)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Counted: the first request, the one just served and this one; none
	// of those refused.
	if got := remaining(); got != "297" {
		t.Errorf("X-RateLimit-Remaining %s, want 297", got)
	}
	if !strings.Contains(logs.String(), "answers again") {
		t.Errorf("the recovery is not logged:\n%s", logs.String())
	}
}
