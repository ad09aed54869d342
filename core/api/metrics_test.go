package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
)

// The API counts each request by the route pattern chi matched (a
// request refused before its operation by its interface's), its method
// (another word as other) and its status class, and each limit's
// decision by outcome and tier.
func TestMetrics(t *testing.T) {
	db := newTestDB(t)
	m := metrics.New(metrics.Options{Tiers: limits.TierNames()})
	as := &auth.Service{Keys: db, Accounts: db, Now: time.Now}
	cs := &content.Service{Store: db, Now: time.Now}
	s := wrap(t, db, New(Config{}, Deps{Store: db, Auth: as, Content: cs, Counter: limits.NewMemory(nil, testLog),
		Guard: limits.NewAuthGuard(1, time.Minute), Log: testLog, Metrics: m}), as, cs)
	get := func(method, path, key, secret string) int {
		r := httptest.NewRequest(method, path, nil)
		r.Header.Set("X-API-Key", key)
		r.Header.Set("X-API-Secret", secret)
		return s.serve(r).Code
	}
	for _, c := range []struct {
		method, path, key, secret string
		want                      int
	}{
		{"GET", "/api/v1/ai/budget-status", fuzzKey, fuzzSecret, 200},
		{"GET", "/api/v1/ai/content-requests/cr_nope", fuzzKey, fuzzSecret, 404},
		{"PROPFIND", "/openapi.json", "", "", 405},
		{"GET", "/api/v1/ai/budget-status", fuzzKey, "wrong", 401},
		{"GET", "/api/v1/ai/budget-status", fuzzKey, "wrong", 429}, // the address's one failure a minute is spent
	} {
		if got := get(c.method, c.path, c.key, c.secret); got != c.want {
			t.Fatalf("%s %s: %d, want %d", c.method, c.path, got, c.want)
		}
	}
	tier := s.account.Account.Tier
	fs := metricstest.Gather(t, m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"aivis_http_requests_total", []string{"route", "/api/v1/ai/budget-status", "method", "GET", "status", "2xx"}, 1},
		{"aivis_http_requests_total", []string{"route", "/api/v1/ai/content-requests/{id}", "method", "GET", "status", "4xx"}, 1},
		{"aivis_http_requests_total", []string{"route", "/api/v1/ai/*", "method", "GET", "status", "4xx"}, 2},
		{"aivis_http_requests_total", []string{"method", "other", "status", "4xx"}, 1},
		{"aivis_http_request_duration_seconds_count", []string{"route", "/api/v1/ai/budget-status", "method", "GET"}, 1},
		{"aivis_http_requests_in_flight", nil, 0},
		{"aivis_limit_decisions_total", []string{"outcome", "admitted", "tier", tier}, 2},
		{"aivis_limit_decisions_total", []string{"outcome", "refused_address", "tier", "none"}, 1},
		{"aivis_limit_counter_errors_total", nil, 0},
	} {
		if got, ok := fs.Find(c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (there: %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if n := fs.Sum("aivis_http_requests_total"); n != 5 {
		t.Errorf("requests counted: %v, want 5", n)
	}
}

// Without metrics the API counts nothing and adds no middleware.
func TestNoMetrics(t *testing.T) {
	s := newTestServer(t, time.Now, 10)
	if s.srv.httpMetrics != nil || s.srv.limits != nil {
		t.Fatal("metrics without Deps.Metrics")
	}
	if w := s.serve(httptest.NewRequest(http.MethodGet, "/openapi.json", nil)); w.Code != 200 {
		t.Fatalf("GET /openapi.json: %d", w.Code)
	}
}
