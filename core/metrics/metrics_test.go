package metrics_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
)

// Every metric aivis defines is documented, by name, in the operator's
// guide.
func TestEveryMetricDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	names := metrics.New(metrics.Options{}).Names()
	if len(names) < 30 {
		t.Fatalf("only %d metrics defined: %v", len(names), names)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "aivis_") {
			t.Errorf("%s: not aivis_", name)
		}
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s is not in docs/operations.md", name)
		}
	}
}

// A value outside its label's bounded set is counted as "other": a
// client's method, an outcome or tier the code does not know, an event
// kind outside the catalog.
func TestLabelsStayBounded(t *testing.T) {
	m := metrics.New(metrics.Options{Tiers: []string{"starter"}, EventKinds: []string{"ai_visibility_change"}})
	m.Limits.Decision("admitted", "acct_123")
	m.Limits.Decision("acct_123", "starter")
	m.Limits.Decision(metrics.RefusedAddress, "")
	m.Events.Published("https://tenant.example/", 2)
	m.Events.Published("ai_visibility_change", 1)
	m.Scans.Ended("tenant text")
	m.Content.State("tenant text")
	m.Delivery.Attempt(metrics.Webhook, "tenant text", time.Second)
	rctx := chi.NewRouteContext()
	rctx.RoutePatterns = []string{"/v1/*", "/webhooks/{id}"}
	m.HTTP.Start()
	m.HTTP.Done(rctx, "PROPFIND", 207, time.Millisecond)
	fs := metricstest.Gather(t, m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"aivis_limit_decisions_total", []string{"outcome", "admitted", "tier", "other"}, 1},
		{"aivis_limit_decisions_total", []string{"outcome", "other", "tier", "starter"}, 1},
		{"aivis_limit_decisions_total", []string{"outcome", "refused_address", "tier", "none"}, 1},
		{"aivis_events_published_total", []string{"kind", "other"}, 2},
		{"aivis_events_published_total", []string{"kind", "ai_visibility_change"}, 1},
		{"aivis_content_requests_total", []string{"state", "other"}, 1},
		{"aivis_http_requests_total", []string{"route", "/v1/webhooks/{id}", "method", "other", "status", "2xx"}, 1},
		{"aivis_http_request_duration_seconds_count", []string{"route", "/v1/webhooks/{id}", "method", "other"}, 1},
		{"aivis_http_requests_in_flight", nil, 0},
	} {
		if got := fs.Value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// What no set holds is not counted at all where the set is the code's.
	if n := fs.Sum("aivis_scans_total") + fs.Sum("aivis_delivery_attempts_total"); n != 0 {
		t.Errorf("an unknown scan status or attempt outcome counted: %v", n)
	}
}

// A route's series are resolved once: counting a request served by a
// route seen before allocates nothing.
func TestHTTPCountsWithoutAllocating(t *testing.T) {
	m := metrics.New(metrics.Options{})
	rctx := chi.NewRouteContext()
	rctx.RoutePatterns = []string{"/api/v1/ai/*", "/content-requests/{id}"}
	count := func() {
		m.HTTP.Start()
		m.HTTP.Done(rctx, "GET", 200, time.Millisecond)
	}
	count()
	if n := testing.AllocsPerRun(1000, count); n != 0 {
		t.Errorf("%v allocations a request", n)
	}
	if got := metricstest.Value(t, m, "aivis_http_requests_total", "route", "/api/v1/ai/content-requests/{id}", "status", "2xx"); got != 1001+1 {
		t.Errorf("requests counted: %v", got)
	}
}

func BenchmarkHTTP(b *testing.B) {
	m := metrics.New(metrics.Options{})
	rctx := chi.NewRouteContext()
	rctx.RoutePatterns = []string{"/v1/*", "/visibility"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			m.HTTP.Start()
			m.HTTP.Done(rctx, "POST", 201, time.Since(start))
		}
	})
}

// The figures read at a scrape: what each watcher reads, once however
// often it is registered; a read that fails leaves its figures out; two
// pools side by side.
func TestWatchers(t *testing.T) {
	m := metrics.New(metrics.Options{})
	fail := false
	m.WatchDeliveries(func(context.Context) ([2]metrics.Backlog, error) {
		if fail {
			return [2]metrics.Backlog{}, errors.New("the store is away")
		}
		return [2]metrics.Backlog{{Pending: 3, OldestDue: 90 * time.Second}, {Pending: 1}}, nil
	})
	m.WatchDeliveries(func(context.Context) ([2]metrics.Backlog, error) { return [2]metrics.Backlog{}, nil }) // not again
	m.WatchBusLag("webhooks", func(context.Context) (int64, error) { return 7, nil })
	m.WatchPool("store", func() metrics.PoolStats { return metrics.PoolStats{Max: 8, Idle: 2, InUse: 1, Acquires: 40} })
	m.WatchPool("bus", func() metrics.PoolStats { return metrics.PoolStats{Max: 4} })
	m.WatchConnectors(func() []metrics.ConnectorState {
		return []metrics.ConnectorState{{Name: "slack", Up: true, Restarts: 2}, {Name: "hubspot"}}
	})
	m.WatchReadiness([]string{"store", "bus", "counter"}, func(context.Context) (bool, []string) { return false, []string{"counter"} })
	fs := metricstest.Gather(t, m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"aivis_deliveries_pending", []string{"target", "webhook"}, 3},
		{"aivis_deliveries_pending", []string{"target", "connector"}, 1},
		{"aivis_deliveries_oldest_due_seconds", []string{"target", "webhook"}, 90},
		{"aivis_bus_consumer_lag", []string{"group", "webhooks"}, 7},
		{"aivis_postgres_pool_max_connections", []string{"pool", "store"}, 8},
		{"aivis_postgres_pool_max_connections", []string{"pool", "bus"}, 4},
		{"aivis_postgres_pool_connections", []string{"pool", "store", "state", "in_use"}, 1},
		{"aivis_postgres_pool_acquires_total", []string{"pool", "store"}, 40},
		{"aivis_connector_up", []string{"connector", "slack"}, 1},
		{"aivis_connector_up", []string{"connector", "hubspot"}, 0},
		{"aivis_connector_restarts_total", []string{"connector", "slack"}, 2},
		{"aivis_ready", nil, 0},
		{"aivis_ready_part", []string{"part", "store"}, 1},
		{"aivis_ready_part", []string{"part", "counter"}, 0},
	} {
		if got, ok := fs.Find(c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (there: %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	fail = true
	if _, ok := metricstest.Gather(t, m).Find("aivis_deliveries_pending"); ok {
		t.Error("the backlog reported while the store does not answer")
	}
}

// A zero Metrics, and each nil piece, counts nothing and does not fail.
func TestZeroCountsNothing(t *testing.T) {
	m := new(metrics.Metrics)
	if m.On() || (*metrics.Metrics)(nil).On() {
		t.Fatal("a zero Metrics is on")
	}
	m.WatchPool("store", func() metrics.PoolStats { t.Error("read"); return metrics.PoolStats{} })
	m.WatchBusLag("webhooks", func(context.Context) (int64, error) { t.Error("read"); return 0, nil })
	m.HTTP.Start()
	m.HTTP.Done(nil, "GET", 200, 0)
	m.Limits.Decision(metrics.Admitted, "starter")
	m.Limits.CounterError()
	m.Events.Published("ai_visibility_change", 1)
	m.Delivery.Attempt(metrics.Connector, metrics.Delivered, time.Second)
	m.Engines.Call("Fake", "openai-chat", metrics.EngineOK, time.Second, 1)
	m.Scans.Ended(metrics.ScanCompleted)
	m.Content.State("queued")
	m.Content.Reserved(1)
	m.Content.Spent(1)
	m.Connectors.Call("slack", metrics.CallDeliver, time.Second, nil)
	m.Store.Retry()
	m.Store.LockWait(time.Second)
	m.Store.Published([]string{"ai_visibility_change"})
	m.Redis.RoundTrip(time.Second)
}

// Names lists aivis's metrics alone, those read at a scrape included
// before anything registered them.
func TestNames(t *testing.T) {
	names := metrics.New(metrics.Options{}).Names()
	for _, want := range []string{"aivis_build_info", "aivis_http_requests_total", "aivis_deliveries_pending", "aivis_ready"} {
		if !slices.Contains(names, want) {
			t.Errorf("Names lacks %s", want)
		}
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") }) {
		t.Errorf("Names holds Go's or the process's: %v", names)
	}
}
