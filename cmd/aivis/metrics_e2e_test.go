package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/metrics/metricstest"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/internal/buildinfo"
	"github.com/aivis/aivis/internal/testsvc"
)

// scrape reads the server's /metrics on its admin listener.
func (s *server) scrape(t *testing.T) metricstest.Families {
	t.Helper()
	return metricstest.Scrape(t, &http.Client{Timeout: 10 * time.Second}, s.AdminURL+"/metrics")
}

// delta is what a series moved by from before to after.
func delta(before, after metricstest.Families, name string, labels ...string) float64 {
	return after.Value(name, labels...) - before.Value(name, labels...)
}

// published counts the events in the bus's table, by kind.
func (s *server) published(t *testing.T) map[string]float64 {
	t.Helper()
	rows, err := s.db(t).Query(`SELECT json_extract(metadata, '$.event'), count(*) FROM bus_messages GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var kind string
		var n float64
		if err := rows.Scan(&kind, &n); err != nil {
			t.Fatal(err)
		}
		out[kind] = n
	}
	return out
}

// apiRequests adds up the requests an interface's operations served (their
// route patterns; not the interface's own, /v1/* and /api/v1/ai/*, which
// requests refused before their operation carry).
func apiRequests(fs metricstest.Families) float64 {
	var n float64
	for _, f := range fs {
		if f.GetName() != "aivis_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if r := l.GetValue(); l.GetName() == "route" && (strings.HasPrefix(r, "/v1/") || strings.HasPrefix(r, "/api/v1/ai/")) &&
					!strings.HasSuffix(r, "/*") {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestMetricsEndToEnd: what aivis serve does moves its metrics by as much:
// readings (HTTP, the limits' admissions, events), deliveries to a webhook
// that takes them, to one that fails and then is gone (disabled), and to a
// connection through its connector, a connection's test, a scan against
// the fake engine and a content request; every label of every series is
// of a bounded set and names nothing of a tenant.
func TestMetricsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../examples/partner-connector", "partner-connector"))
	engine := probefake.New()
	defer engine.Close()
	engine.Answer("fake-model", "The best options are Acme (https://acme.invalid/skates) and Globex.", "I recommend Globex.")
	a := newAccount(t, dir, "enterprise", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--config", scanConfig(t, dir, engine), "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")

	ok, failing, chat := newHookReceiver(t), newHookReceiver(t), newChatReceiver(t)
	var hooks [2]client.Webhook
	for i, w := range []struct {
		rc     *hookReceiver
		domain string
	}{{ok, "example.com"}, {failing, "gone.example"}} {
		r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
			body: jsonBody(client.CreateWebhook{Domain: w.domain, Events: []string{"ai_visibility_change"}, URL: w.rc.URL})})
		if r.Status != 201 {
			t.Fatalf("webhook: %d %s", r.Status, r.Body)
		}
		r.decode(t, &hooks[i])
	}
	r := s.do(t, req{method: "POST", path: "/v1/connections", header: bearer(k), body: connectionBody(t, client.CreateConnection{
		Connector: "partner-chat", Events: []string{"ai_visibility_change"}, Domains: []string{"example.com", "gone.example"},
		Settings: json.RawMessage(`{"webhook_url":"` + chat.URL + `"}`)})})
	var conn client.Connection
	r.decode(t, &conn)
	if r.Status != 201 {
		t.Fatalf("connection: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: bearer(k), body: jsonBody(client.CreateDomain{Domain: "acme.invalid",
		Brands: []string{"Acme"}, Competitors: []string{"Globex"}, Prompts: []string{"Which rocket skates should I buy?"}})}); r.Status != 201 {
		t.Fatalf("domain: %d %s", r.Status, r.Body)
	}
	// A new domain's first scan is due at once: done before the figures.
	waitFor(t, "the domain's first scan", func() bool {
		return s.count(t, `SELECT count(*) FROM scans WHERE domain = 'acme.invalid' AND status = 'completed'`) == 1
	})

	before, published, asked := s.scrape(t), s.published(t), engine.Requests()
	// A reading delivered to the webhook and the connection.
	first := recordEvent(t, s, k, `{"domain":"example.com","visibility_score":40,"sentiment":"positive"}`)
	waitFor(t, "the first reading delivered", func() bool { return ok.got(first) && chat.text(first) != "" })
	// One the failing webhook answers 503 (retried), then 410 (disabled);
	// the connection takes it.
	failing.mu.Lock()
	failing.status = http.StatusServiceUnavailable
	failing.mu.Unlock()
	second := recordEvent(t, s, k, `{"domain":"gone.example","visibility_score":30,"sentiment":"neutral"}`)
	attempts := `SELECT coalesce(sum(attempts), 0) FROM webhook_deliveries WHERE webhook_id = '` + hooks[1].ID + `' AND event = 'ai_visibility_change'`
	waitFor(t, "the second reading delivered to the connection", func() bool { return chat.text(second) != "" })
	waitFor(t, "the second reading tried at the webhook", func() bool { return s.count(t, attempts) == 1 })
	failing.mu.Lock()
	failing.status = http.StatusGone
	failing.mu.Unlock()
	waitFor(t, "the failing webhook disabled", func() bool {
		return s.count(t, `SELECT count(*) FROM webhooks WHERE id = '`+hooks[1].ID+`' AND enabled = 0`) == 1
	})
	// A connection's test, a scan and a content request.
	var tested client.ConnectionTestResult
	s.do(t, req{method: "POST", path: "/v1/connections/" + conn.ID + "/test", header: bearer(k)}).decode(t, &tested)
	if tested.Result != "delivered" {
		t.Fatalf("connection test: %+v", tested)
	}
	var sc client.Scan
	s.do(t, req{method: "POST", path: "/v1/visibility/scans", header: bearer(k), body: `{"domain":"acme.invalid"}`}).decode(t, &sc)
	waitFor(t, "the scan completed", func() bool {
		return s.count(t, `SELECT count(*) FROM scans WHERE id = '`+sc.ID+`' AND status = 'completed'`) == 1
	})
	cr, r := create(t, s, keyed(k), jsonBody(client.CreateContentRequest{Domain: "acme.example", Budget: client.Dollars(2), Type: client.TypeAnalyze,
		Content: "# Widgets\n\nA widget is a small device that automates one chore at home."}))
	if r.Status != 201 {
		t.Fatalf("content request: %d %s", r.Status, r.Body)
	}
	waitFor(t, "the content request completed", func() bool {
		return s.count(t, `SELECT count(*) FROM content_requests WHERE id = '`+cr.ID+`' AND status = 'completed'`) == 1
	})
	cr = getCR(t, s, k, cr.ID)
	var st client.VisibilityStatus
	s.do(t, req{method: "GET", path: "/v1/visibility?domain=acme.invalid", header: bearer(k)}).decode(t, &st)
	var breakdown struct {
		Overall struct {
			CostUSD float64 `json:"cost_usd"`
		} `json:"overall"`
	}
	if st.LastScan == nil || json.Unmarshal(st.LastScan.Breakdown, &breakdown) != nil || breakdown.Overall.CostUSD <= 0 {
		t.Fatalf("the scan's cost: %+v", st.LastScan)
	}
	s.eventsHandled(t)
	var after metricstest.Families
	deadline := time.Now().Add(15 * time.Second)
	for after = s.scrape(t); after.Value("aivis_bus_consumer_lag", "group", "webhooks") != 0; after = s.scrape(t) {
		if time.Now().After(deadline) {
			t.Fatalf("the fan-out's lag: %v after every event was handled", after.Value("aivis_bus_consumer_lag", "group", "webhooks"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	moved := func(want float64, name string, labels ...string) {
		t.Helper()
		if got := delta(before, after, name, labels...); math.Abs(got-want) > 1e-6 {
			t.Errorf("%s%v moved by %v, want %v", name, labels, got, want)
		}
	}
	is := func(want float64, name string, labels ...string) {
		t.Helper()
		if got, found := after.Find(name, labels...); !found || got != want {
			t.Errorf("%s%v = %v (there: %v), want %v", name, labels, got, found, want)
		}
	}
	// HTTP, by route pattern; every request an operation served admitted.
	moved(2, "aivis_http_requests_total", "route", "/v1/visibility", "method", "POST", "status", "2xx")
	moved(2, "aivis_http_request_duration_seconds_count", "route", "/v1/visibility", "method", "POST")
	moved(1, "aivis_http_requests_total", "route", "/api/v1/ai/content-requests", "method", "POST", "status", "2xx")
	moved(1, "aivis_http_requests_total", "route", "/v1/connections/{id}/test", "method", "POST", "status", "2xx")
	moved(apiRequests(after)-apiRequests(before), "aivis_limit_decisions_total", "outcome", "admitted", "tier", "enterprise")
	is(0, "aivis_http_requests_in_flight")
	// Events, as committed to the bus's table.
	for kind, n := range s.published(t) {
		moved(n-published[kind], "aivis_events_published_total", "kind", kind)
	}
	// Deliveries: a delivery and a retry, then the disabling, at the
	// webhooks; two deliveries through the connector.
	moved(1, "aivis_delivery_attempts_total", "target", "webhook", "outcome", "delivered")
	moved(1, "aivis_delivery_attempts_total", "target", "webhook", "outcome", "retry")
	moved(1, "aivis_delivery_attempts_total", "target", "webhook", "outcome", "disabled")
	moved(0, "aivis_delivery_attempts_total", "target", "webhook", "outcome", "failed")
	moved(2, "aivis_delivery_attempts_total", "target", "connector", "outcome", "delivered")
	moved(1, "aivis_delivery_targets_disabled_total", "target", "webhook")
	moved(1, "aivis_delivery_latency_seconds_count", "target", "webhook")
	moved(2, "aivis_delivery_latency_seconds_count", "target", "connector")
	for _, target := range []string{"webhook", "connector"} {
		is(0, "aivis_deliveries_pending", "target", target)
		is(0, "aivis_deliveries_oldest_due_seconds", "target", target)
	}
	// The scan and its engine, the content request.
	moved(1, "aivis_scans_total", "status", "completed")
	moved(float64(engine.Requests()-asked), "aivis_engine_calls_total", "engine", "Fake", "kind", "openai-chat", "outcome", "ok")
	moved(float64(engine.Requests()-asked), "aivis_engine_call_duration_seconds_count", "engine", "Fake", "kind", "openai-chat")
	moved(breakdown.Overall.CostUSD, "aivis_engine_spend_usd_total", "engine", "Fake")
	for _, state := range []string{"queued", "processing", "completed"} {
		moved(1, "aivis_content_requests_total", "state", state)
	}
	moved(2, "aivis_content_budget_reserved_usd_total")
	moved(float64(cr.Spent)/1e6, "aivis_content_budget_spent_usd_total")
	// The connector: two deliveries and a test, up, never restarted.
	moved(2, "aivis_connector_calls_total", "connector", "partner-chat", "call", "deliver", "outcome", "ok")
	moved(1, "aivis_connector_calls_total", "connector", "partner-chat", "call", "test", "outcome", "ok")
	moved(2, "aivis_connector_call_duration_seconds_count", "connector", "partner-chat", "call", "deliver")
	is(1, "aivis_connector_up", "connector", "partner-chat")
	is(0, "aivis_connector_restarts_total", "connector", "partner-chat")
	// The process: ready, its store's writes, its build.
	is(1, "aivis_ready")
	is(1, "aivis_ready_part", "part", "store")
	is(1, "aivis_ready_part", "part", "bus")
	if n := delta(before, after, "aivis_sqlite_write_lock_wait_seconds_count"); n <= 0 {
		t.Errorf("no transaction's wait for the write lock observed")
	}
	bi := buildinfo.Get()
	is(1, "aivis_build_info", "version", bi.Version, "go_version", bi.GoVersion)
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, found := after.Find(name); !found {
			t.Errorf("no %s", name)
		}
	}

	tenant := []string{a.ID, k.ID, hooks[0].ID, hooks[1].ID, conn.ID, sc.ID, cr.ID, first, second, "example.com", "gone.example",
		"acme.invalid", "acme.example", ok.URL, chat.URL, engine.URL()}
	boundedLabels(t, after, tenant)
}

// TestMetricsOfTheLimits: the limits' decisions by outcome and tier (a
// window full, the active requests, the month's budget, the address out
// of failed authentications) on a server that queues content requests.
func TestMetricsOfTheLimits(t *testing.T) {
	dir := t.TempDir()
	starter, pro := newAccount(t, dir, "starter", false), newAccount(t, dir, "professional", false)
	ks, kp := newKey(t, dir, starter.ID), newKey(t, dir, pro.ID)
	s := start(t, dir, queueOnly...)
	awayFromMinuteEnd(20 * time.Second)
	before := s.scrape(t)
	// The starter tier's five active requests, then a refusal.
	for i := range 6 {
		_, r := create(t, s, keyed(ks), `{"domain":"example.com","budget":1}`)
		if want := map[bool]int{true: 201, false: 429}[i < 5]; r.Status != want {
			t.Fatalf("starter's request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	// The professional tier's month: $25,000 committed, then a refusal.
	for i := range 6 {
		_, r := create(t, s, keyed(kp), map[bool]string{true: `{"domain":"example.com","budget":5000}`, false: `{"domain":"example.com","budget":0.01}`}[i < 5])
		if want := map[bool]int{true: 201, false: 402}[i < 5]; r.Status != want {
			t.Fatalf("professional's request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	// The starter's minute window (60): 6 requests made, 54 more, then 429.
	for i := range 55 {
		r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(ks)})
		if want := map[bool]int{true: 200, false: 429}[i < 54]; r.Status != want {
			t.Fatalf("starter's budget-status %d: %d %s", i+7, r.Status, r.Body)
		}
	}
	// Failed authentications until the address is refused.
	bad := map[string]string{"X-API-Key": ks.Key, "X-API-Secret": "wrong"}
	for i := 0; ; i++ {
		r := s.do(t, req{method: "GET", path: "/api/v1/ai/budget-status", header: bad})
		if r.Status == 429 {
			break
		}
		if r.Status != 401 || i > 100 {
			t.Fatalf("failed authentication %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	after := s.scrape(t)
	for _, c := range []struct {
		outcome, tier string
		want          float64
	}{{"admitted", "starter", 5 + 1 + 54}, {"refused_active", "starter", 1}, {"refused_window", "starter", 1},
		{"admitted", "professional", 6}, {"refused_budget", "professional", 1}, {"refused_address", "none", 1}} {
		if got := delta(before, after, "aivis_limit_decisions_total", "outcome", c.outcome, "tier", c.tier); got != c.want {
			t.Errorf("decisions %s of %s: %v, want %v", c.outcome, c.tier, got, c.want)
		}
	}
	moved := delta(before, after, "aivis_http_requests_total", "route", "/api/v1/ai/*", "method", "GET", "status", "4xx")
	if moved < 2 {
		t.Errorf("requests refused before their operation (the window's, the failures'): %v under /api/v1/ai/*", moved)
	}
	boundedLabels(t, after, []string{starter.ID, pro.ID, ks.ID, kp.ID, ks.Key, "example.com"})
}

// TestMetricsOfACluster: an instance on PostgreSQL, NATS and Redis counts
// the events its transactions commit, reports its pools, the fan-out's lag
// and the Redis round trips, and counts the requests it refuses with 503
// while Redis is away, when readiness says the counter does not answer.
func TestMetricsOfACluster(t *testing.T) {
	c := newCluster(t)
	redis := testsvc.NewRelay(t, c.RedisURL)
	t.Setenv("AIVIS_REDIS_URL", redis.URL())
	a := newAccount(t, c.dir, "enterprise", false)
	k := newKey(t, c.dir, a.ID)
	s := start(t, t.TempDir(), "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")
	before := s.scrape(t)
	rc := newHookReceiver(t)
	if r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: jsonBody(client.CreateWebhook{Domain: "example.com", Events: []string{"ai_visibility_change"}, URL: rc.URL})}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	id := recordEvent(t, s, k, `{"domain":"example.com","visibility_score":40,"sentiment":"positive"}`)
	mid := s.scrape(t)
	if n := delta(before, mid, "aivis_events_published_total", "kind", events.VisibilityChange); n != 1 {
		t.Errorf("ai_visibility_change events published: %v, want 1", n)
	}
	if n := delta(before, mid, "aivis_redis_round_trip_seconds_count"); n < 2 {
		t.Errorf("Redis round trips observed: %v, want one a request at least", n)
	}
	for _, pool := range []string{"store", "forwarder"} {
		if n := mid.Value("aivis_postgres_pool_max_connections", "pool", pool); n <= 0 {
			t.Errorf("the %s pool's most connections: %v", pool, n)
		}
		if n := mid.Value("aivis_postgres_pool_acquires_total", "pool", pool); n <= 0 {
			t.Errorf("the %s pool's acquires: %v", pool, n)
		}
	}
	if _, found := mid.Find("aivis_bus_consumer_lag", "group", "webhooks"); !found {
		t.Error("no lag of the fan-out on NATS")
	}
	if _, found := mid.Find("aivis_store_transaction_retries_total"); !found {
		t.Error("no transaction retries counted")
	}
	redis.Cut()
	r := s.do(t, req{method: "GET", path: "/v1/webhooks", header: bearer(k)})
	if r.Status != 503 || r.errorCode(t) != "RATE_LIMIT_UNAVAILABLE" {
		t.Fatalf("with Redis away: %d %s", r.Status, r.Body)
	}
	away := s.scrape(t)
	if n := delta(mid, away, "aivis_limit_counter_errors_total"); n != 1 {
		t.Errorf("counter errors: %v, want 1", n)
	}
	if v := away.Value("aivis_ready_part", "part", "counter"); v != 0 || away.Value("aivis_ready") != 0 {
		t.Errorf("with Redis away: aivis_ready_part{counter} %v, aivis_ready %v; want 0, 0", v, away.Value("aivis_ready"))
	}
	redis.Mend(t)
	waitFor(t, "the counter ready again", func() bool { return s.scrape(t).Value("aivis_ready_part", "part", "counter") == 1 })
	waitFor(t, "the reading delivered", func() bool { return rc.got(id) })
	boundedLabels(t, s.scrape(t), []string{a.ID, k.ID, id, "example.com", rc.URL, c.Name})
}

// The bounded sets of the labels aivis's metrics carry. Route patterns are
// checked against their shape, tenant text against what the test made.
var (
	routeShape = regexp.MustCompile(`^(/([a-z0-9._-]+|\{[a-z_]+\}|\*)?)+$|^none$|^other$`)
	bounded    = map[string][]string{
		"method":    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"},
		"status":    {"1xx", "2xx", "3xx", "4xx", "5xx", "other", "completed", "failed", "retried"},
		"outcome":   {"admitted", "refused_window", "refused_active", "refused_budget", "refused_address", "delivered", "retry", "failed", "disabled", "ok", "error", "rate_limited", "refused_key", "provider_error", "timeout", "bad_request", "other"},
		"tier":      {"starter", "professional", "enterprise", "none", "other"},
		"kind":      append(slices.Clone(events.Kinds), "openai-chat", "openai-responses", "perplexity", "anthropic", "gemini", "other"),
		"target":    {"webhook", "connector"},
		"state":     {"queued", "processing", "completed", "failed", "cancelled", "idle", "in_use", "constructing", "other"},
		"call":      {"deliver", "test", "validate", "other"},
		"connector": {"partner-chat", "other"},
		"engine":    {"Fake", "other"},
		"group":     {"webhooks"},
		"pool":      {"store", "bus", "forwarder"},
		"part":      {"store", "bus", "counter"},
	}
)

// boundedLabels checks that every label of every series aivis serves is
// of its bounded set, and that none holds any of tenant's texts.
func boundedLabels(t *testing.T, fs metricstest.Families, tenant []string) {
	t.Helper()
	bi := buildinfo.Get()
	for _, f := range fs {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				name, value := l.GetName(), l.GetValue()
				for _, x := range tenant {
					if x != "" && strings.Contains(value, x) {
						t.Errorf("%s{%s=%q} holds a tenant's %q", f.GetName(), name, value, x)
					}
				}
				if strings.Contains(value, "://") {
					t.Errorf("%s{%s=%q} holds a URL", f.GetName(), name, value)
				}
				if !strings.HasPrefix(f.GetName(), "aivis_") {
					continue // Go's and the process's: their own fixed sets
				}
				switch {
				case name == "route":
					if !routeShape.MatchString(value) {
						t.Errorf("%s{route=%q}: not a route pattern", f.GetName(), value)
					}
				case f.GetName() == "aivis_build_info":
					if want := map[string]string{"version": bi.Version, "commit": bi.Commit, "go_version": bi.GoVersion}[name]; value != want {
						t.Errorf("aivis_build_info{%s=%q}, want %q", name, value, want)
					}
				case bounded[name] == nil:
					t.Errorf("%s{%s=%q}: a label of no known set", f.GetName(), name, value)
				case !slices.Contains(bounded[name], value):
					t.Errorf("%s{%s=%q}: not one of %s", f.GetName(), name, value, fmt.Sprint(bounded[name]))
				}
			}
		}
	}
}
