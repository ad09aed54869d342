package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	bus "github.com/aivis/aivis/core/bus/sqlite"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/core/visibility"
	"github.com/aivis/aivis/webhook"
)

var ctx = context.Background()

var quiet = testLogger()

func testLogger() *slog.Logger {
	if os.Getenv("AIVIS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// env is a store with one account, an engine running on the real SQLite
// bus, and the webhook service, all on a temporary database file.
type env struct {
	db       *sqlite.DB
	dbPath   string
	keyPath  string
	engine   *delivery.Engine
	svc      *delivery.Service
	readings *visibility.Recorder
	p        auth.Principal
	stop     func()
}

// fastSchedule makes retries come in milliseconds for the test's length.
func fastSchedule(t *testing.T) {
	old := delivery.Schedule
	delivery.Schedule = []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond}
	t.Cleanup(func() { delivery.Schedule = old })
}

func newEnv(t *testing.T, opt delivery.Options) *env {
	t.Helper()
	return newEnvOn(t, opt, nil)
}

// newEnvOn is newEnv with the engine on what wrap makes of the store (nil:
// the store itself).
func newEnvOn(t *testing.T, opt delivery.Options, wrap func(*sqlite.DB) delivery.Store) *env {
	t.Helper()
	return openEnv(t, opt, wrap, nil)
}

// beside is another process on e's database and master key: an engine
// of its own, as another instance runs.
func (e *env) beside(t *testing.T, opt delivery.Options) *env {
	t.Helper()
	return openEnv(t, opt, nil, e)
}

func openEnv(t *testing.T, opt delivery.Options, wrap func(*sqlite.DB) delivery.Store, of *env) *env {
	t.Helper()
	dbPath, keyPath := filepath.Join(t.TempDir(), "aivis.db"), filepath.Join(t.TempDir(), secrets.KeyFile)
	if of != nil {
		dbPath, keyPath = of.dbPath, of.keyPath
	}
	db, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	box, _, err := secrets.Load(keyPath, of == nil)
	if err != nil {
		t.Fatal(err)
	}
	db.SetSecrets(box)
	a := store.Account{ID: "acct_1", Name: "Acme", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: time.Now()}
	if of == nil {
		if err := db.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	w, r := db.Pools()
	sub, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: "webhooks", PollInterval: 20 * time.Millisecond,
		MaxInFlight: delivery.FanoutInFlight, BatchSize: delivery.FanoutBatch},
		watermill.NewSlogLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	policy := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	if opt.Timeout == 0 {
		opt.Timeout = 2 * time.Second
	}
	hc := policy.Client(opt.Timeout)
	e := &env{db: db, dbPath: dbPath, keyPath: keyPath, p: auth.Principal{Principal: store.Principal{Key: store.Key{ID: "key_1", AccountID: a.ID}, Account: a}}}
	var st delivery.Store = db
	if wrap != nil {
		st = wrap(db)
	}
	e.engine = delivery.New(st, sub, hc, quiet, opt)
	e.svc = &delivery.Service{Store: db, Client: hc, AllowHTTP: true, Wake: e.engine.Wake, VerifyTimeout: 2 * time.Second,
		CheckURL: func(raw string, allowHTTP bool) error { _, err := policy.CheckURL(raw, allowHTTP); return err }}
	e.readings = &visibility.Recorder{Store: db, Now: time.Now}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.engine.Run(runCtx) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("engine: %v", err)
			}
			sub.Close()
			db.Close()
		})
	}
	t.Cleanup(e.stop)
	return e
}

// receiver records verified deliveries; answer decides each response.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   string
	got      []webhook.Event
	ids      []string
	bad      int
	answer   func(n int, ev webhook.Event) int
	requests atomic.Int64
}

func newReceiver(t *testing.T, answer func(n int, ev webhook.Event) int) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(rc.requests.Add(1))
		body, _ := io.ReadAll(r.Body)
		var ev webhook.Event
		json.Unmarshal(body, &ev)
		rc.mu.Lock()
		secret := rc.secret
		rc.mu.Unlock()
		if secret != "" {
			v, err := webhook.NewVerifier(secret)
			if err != nil || v.Verify(r.Header, body) != nil || r.Header.Get("webhook-id") != ev.ID {
				rc.mu.Lock()
				rc.bad++
				rc.mu.Unlock()
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		code := http.StatusOK
		if rc.answer != nil {
			code = rc.answer(n, ev)
		}
		if code >= 200 && code < 300 && ev.Event != events.WebhookTest {
			rc.mu.Lock()
			rc.got = append(rc.got, ev)
			rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
			rc.mu.Unlock()
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) events() []webhook.Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// create sets up a webhook on the receiver through the service, which
// sends the test payload first.
func (e *env) create(t *testing.T, rc *receiver, in client.CreateWebhook) store.Webhook {
	t.Helper()
	if in.URL == "" {
		in.URL = rc.URL + "/hook"
	}
	if in.Domain == "" {
		in.Domain = "example.com"
	}
	w, err := e.svc.Create(ctx, e.p, in)
	if err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	rc.mu.Lock()
	rc.secret = w.Secret
	rc.mu.Unlock()
	return w
}

func (e *env) reading(t *testing.T, domain string, score int) *events.Event {
	t.Helper()
	_, ev, err := e.readings.Record(ctx, e.p, client.RecordReading{Domain: domain, VisibilityScore: &score, Sentiment: "positive"})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func deliveries(t *testing.T, e *env, webhookID string) []store.Delivery {
	t.Helper()
	ds, _, err := e.db.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: webhookID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestDeliversSignedEvents(t *testing.T) {
	e := newEnv(t, delivery.Options{})
	rc := newReceiver(t, nil)
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	first := e.reading(t, "example.com", 40)
	second := e.reading(t, "example.com", 55)
	if e.reading(t, "example.com", 55) != nil {
		t.Error("an unchanged reading emitted an event")
	}
	other := e.reading(t, "other.example", 10) // another domain: not this webhook's
	eventually(t, "two events delivered", func() bool { return len(rc.events()) == 2 })
	got := rc.events() // deliveries run concurrently: in any order
	if got[0].ID == second.ID {
		got[0], got[1] = got[1], got[0]
	}
	if got[0].ID != first.ID || got[1].ID != second.ID {
		t.Fatalf("delivered %s, %s; want %s, %s", got[0].ID, got[1].ID, first.ID, second.ID)
	}
	var data events.VisibilityChangeData
	if err := json.Unmarshal(got[1].Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.VisibilityScore != 55 || data.PreviousVisibilityScore == nil || *data.PreviousVisibilityScore != 40 ||
		data.ScoreChange == nil || *data.ScoreChange != 15 || data.Domain != "example.com" {
		t.Errorf("data %+v", data)
	}
	if rc.bad != 0 {
		t.Errorf("%d deliveries failed verification", rc.bad)
	}
	// The fan-out logs an event in the transaction of its deliveries:
	// once the other domain's is logged, its deliveries are all listed.
	eventually(t, "the other domain's event handled", func() bool {
		evs, _, err := e.db.RecentEvents(ctx, store.EventFilter{AccountID: "acct_1", Event: events.VisibilityChange, Limit: 10})
		return err == nil && slices.ContainsFunc(evs, func(l store.LoggedEvent) bool { return l.ID == other.ID })
	})
	eventually(t, "deliveries recorded as succeeded", func() bool {
		n := 0
		for _, d := range deliveries(t, e, w.ID) {
			if d.Status == store.DeliverySucceeded && d.Attempts == 1 {
				n++
			}
		}
		return n == 3 // the setup test and the two changes
	})
	if ds := deliveries(t, e, w.ID); len(ds) != 3 {
		t.Errorf("%d deliveries, want 3: the other domain's event was given one", len(ds))
	}
	// Run returns once every attempt has ended: nothing can arrive after.
	e.stop()
	if n, r := len(rc.events()), rc.requests.Load(); n != 2 || r != 3 {
		t.Errorf("%d deliveries in %d requests, want 2 in 3 (and the setup test)", n, r)
	}
}

func TestMinScoreChange(t *testing.T) {
	w := store.Webhook{Enabled: true, Events: []string{events.VisibilityChange}, MinScoreChange: 5}
	for _, tc := range []struct {
		change int
		want   bool
	}{{-1, true}, {0, false}, {4, false}, {5, true}, {30, true}} {
		ev := events.Event{Body: events.Body{Event: events.VisibilityChange}, ScoreChange: tc.change}
		if got := delivery.Wants(w, ev); got != tc.want {
			t.Errorf("change %d: wants %v, want %v", tc.change, got, tc.want)
		}
	}
	if delivery.Wants(w, events.Event{Body: events.Body{Event: events.ContentOptimized}}) {
		t.Error("a kind the webhook did not subscribe to")
	}
}

// A citation_change reaches a webhook when the engine's citation rate
// moved at least its minimum, in percentage points; 0 takes every one.
func TestMinCitationChangeWants(t *testing.T) {
	for _, tc := range []struct {
		min    int
		change float64
		want   bool
	}{{10, 9.99, false}, {10, 10, true}, {10, 33.33, true}, {0, 0.01, true}, {100, 99.99, false}, {100, 100, true}} {
		w := store.Webhook{Enabled: true, Events: []string{events.CitationChange}, MinScoreChange: 50, MinCitationChange: tc.min}
		ev := events.Event{Body: events.Body{Event: events.CitationChange}, ScoreChange: -1, CitationChange: tc.change}
		if got := delivery.Wants(w, ev); got != tc.want {
			t.Errorf("minimum %d, change %v: wants %v, want %v", tc.min, tc.change, got, tc.want)
		}
	}
}

// A crawler_errors reaches a webhook or connection when its error hits
// reach the minimum; 0 and 1 take every one.
func TestMinCrawlerErrorsWants(t *testing.T) {
	for _, tc := range []struct {
		min    int
		errors int64
		want   bool
	}{{1, 1, true}, {0, 1, true}, {5, 4, false}, {5, 5, true}, {1000000, 999999, false}, {1000000, 1000000, true}} {
		for _, w := range []store.Webhook{
			{Enabled: true, Domain: "example.com", Events: []string{events.CrawlerErrors}, MinCrawlerErrors: tc.min},
			{Enabled: true, Events: []string{events.CrawlerErrors}, MinCrawlerErrors: tc.min, Connection: store.Connection{Connector: "slack"}},
		} {
			ev := events.Event{Body: events.Body{Event: events.CrawlerErrors}, Domain: "example.com", ScoreChange: -1, CrawlerErrors: tc.errors}
			if got := delivery.Wants(w, ev); got != tc.want {
				t.Errorf("connection %v, minimum %d, %d errors: wants %v, want %v", w.IsConnection(), tc.min, tc.errors, got, tc.want)
			}
		}
	}
}

// TestMinCitationChangeAtReceivers: two webhooks of a domain with minimums
// of 10 (the default) and 30 points hear of the citation changes past
// their minimums and of nothing else; a later event that both hear fences
// the ones they must not.
func TestMinCitationChangeAtReceivers(t *testing.T) {
	e := newEnv(t, delivery.Options{})
	byDefault, strict := newReceiver(t, nil), newReceiver(t, nil)
	kinds := []string{events.CitationChange, events.ScanCompleted}
	wd := e.create(t, byDefault, client.CreateWebhook{Events: kinds})
	ws := e.create(t, strict, client.CreateWebhook{Events: kinds, MinCitationChange: ptr(30)})
	if wd.MinCitationChange != 10 || ws.MinCitationChange != 30 {
		t.Fatalf("minimums %d, %d", wd.MinCitationChange, ws.MinCitationChange)
	}
	if _, err := e.svc.Update(ctx, e.p, ws.ID, client.UpdateWebhook{MinCitationChange: ptr(101)}); !isField(err, "min_citation_change") {
		t.Errorf("min_citation_change 101: %v", err)
	}
	if up, err := e.svc.Update(ctx, e.p, ws.ID, client.UpdateWebhook{MinScoreChange: ptr(3)}); err != nil || up.MinCitationChange != 30 {
		t.Fatalf("another field patched: %+v %v", up, err)
	}
	publish := func(kind string, data any, change float64) string {
		t.Helper()
		ev, err := events.New(kind, time.Now(), "acct_1", "", "example.com", data)
		if err != nil {
			t.Fatal(err)
		}
		ev.CitationChange = change
		if err := e.db.Update(ctx, func(tx store.Tx) error { return events.Publish(ctx, tx, ev) }); err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	change := func(engine string, points float64) string {
		return publish(events.CitationChange, events.CitationChangeData{Domain: "example.com", Engine: engine, CitationChange: points}, max(points, -points))
	}
	small, down, large := change("A", 9.99), change("B", -12.5), change("C", 30)
	// Published after the changes: once a webhook has it, the fan-out has
	// handled them all for it.
	fence := publish(events.ScanCompleted, events.ScanCompletedData{Domain: "example.com"}, 0)
	ids := func(rc *receiver) []string {
		var out []string
		for _, ev := range rc.events() {
			out = append(out, ev.ID)
		}
		slices.Sort(out)
		return out
	}
	want := map[*receiver][]string{byDefault: {down, large, fence}, strict: {large, fence}}
	for rc, w := range want {
		slices.Sort(w)
		eventually(t, "the wanted events and the fence delivered", func() bool { return slices.Contains(ids(rc), fence) && len(ids(rc)) >= len(w) })
	}
	for _, w := range []store.Webhook{wd, ws} {
		for _, d := range deliveries(t, e, w.ID) {
			if d.EventID == small || (w.ID == ws.ID && d.EventID == down) {
				t.Errorf("webhook %s (minimum %d) was given event %s", w.ID, w.MinCitationChange, d.EventID)
			}
		}
	}
	// Run returns once every attempt has ended: nothing can arrive after.
	e.stop()
	for rc, w := range want {
		if got := ids(rc); !slices.Equal(got, w) {
			t.Errorf("received %v, want %v", got, w)
		}
	}
}

func TestRetriesUntilSuccessWithTheSameID(t *testing.T) {
	fastSchedule(t)
	e := newEnv(t, delivery.Options{})
	var ids sync.Map
	rc := newReceiver(t, func(n int, ev webhook.Event) int {
		if ev.Event == events.WebhookTest {
			return 200
		}
		c, _ := ids.LoadOrStore(ev.ID, new(atomic.Int64))
		if c.(*atomic.Int64).Add(1) < 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	ev := e.reading(t, "example.com", 70)
	eventually(t, "delivered on the third attempt", func() bool { return len(rc.events()) == 1 })
	var d store.Delivery
	for _, x := range deliveries(t, e, w.ID) {
		if x.EventID == ev.ID {
			d = x
		}
	}
	eventually(t, "recorded", func() bool {
		d, _, _ = e.db.Delivery(ctx, w.ID, d.ID)
		return d.Status == store.DeliverySucceeded
	})
	_, attempts, err := e.db.Delivery(ctx, w.ID, d.ID)
	if err != nil || len(attempts) != 3 || attempts[0].StatusCode != 500 || attempts[2].StatusCode != 200 {
		t.Fatalf("attempts %+v, %v", attempts, err)
	}
	if attempts[1].At.Sub(attempts[0].At) < 15*time.Millisecond {
		t.Errorf("second attempt %v after the first; the schedule says 20 ms ±10%%", attempts[1].At.Sub(attempts[0].At))
	}
}

func TestGivesUpAfterTheSchedule(t *testing.T) {
	fastSchedule(t)
	e := newEnv(t, delivery.Options{})
	rc := newReceiver(t, func(n int, ev webhook.Event) int {
		if ev.Event == events.WebhookTest {
			return 200
		}
		return http.StatusFound // a redirect is a failure
	})
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	ev := e.reading(t, "example.com", 70)
	eventually(t, "failed after every attempt", func() bool {
		for _, d := range deliveries(t, e, w.ID) {
			if d.EventID == ev.ID && d.Status == store.DeliveryFailed {
				return d.Attempts == len(delivery.Schedule)
			}
		}
		return false
	})
	// Replay schedules it again, and it succeeds once the endpoint does.
	rc.answer = nil
	n, err := e.svc.Replay(ctx, e.p, w.ID, time.Now().Add(-time.Hour), time.Time{})
	if err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	eventually(t, "replayed", func() bool { return len(rc.events()) == 1 && rc.events()[0].ID == ev.ID })
}

func TestGoneDisablesTheWebhook(t *testing.T) {
	e := newEnv(t, delivery.Options{})
	gone := newReceiver(t, func(n int, ev webhook.Event) int {
		if ev.Event == events.WebhookTest {
			return 200
		}
		return http.StatusGone
	})
	watcher := newReceiver(t, nil)
	w := e.create(t, gone, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	e.create(t, watcher, client.CreateWebhook{Events: []string{events.WebhookDisabled}})
	e.reading(t, "example.com", 70)
	eventually(t, "webhook_disabled delivered to the other webhook", func() bool { return len(watcher.events()) == 1 })
	var data events.WebhookDisabledData
	json.Unmarshal(watcher.events()[0].Data, &data)
	if data.WebhookID != w.ID || data.Reason == "" {
		t.Errorf("webhook_disabled data %+v", data)
	}
	got, err := e.db.Webhook(ctx, "acct_1", w.ID)
	if err != nil || got.Enabled || got.DisabledReason == "" {
		t.Fatalf("after 410: %+v, %v", got, err)
	}
	// An event while disabled is kept as a failed delivery, not attempted;
	// after enabling, a replay sends it.
	before := gone.requests.Load()
	held := e.reading(t, "example.com", 80)
	eventually(t, "the held event recorded", func() bool {
		for _, d := range deliveries(t, e, w.ID) {
			if d.EventID == held.ID {
				return d.Status == store.DeliveryFailed && d.Attempts == 0
			}
		}
		return false
	})
	if gone.requests.Load() != before {
		t.Fatal("a disabled webhook was sent a delivery")
	}
	gone.answer = nil
	tr := true
	if _, err := e.svc.Update(ctx, e.p, w.ID, client.UpdateWebhook{Enabled: &tr}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Replay(ctx, e.p, w.ID, time.Now().Add(-time.Minute), time.Time{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the held event delivered after enabling and replay", func() bool {
		evs := gone.events()
		return slices.ContainsFunc(evs, func(ev webhook.Event) bool { return ev.ID == held.ID })
	})
}

func TestDisabledAfterFiveDaysOfFailures(t *testing.T) {
	fastSchedule(t)
	e := newEnv(t, delivery.Options{})
	rc := newReceiver(t, func(n int, ev webhook.Event) int {
		if ev.Event == events.WebhookTest {
			return 200
		}
		return http.StatusServiceUnavailable
	})
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	// Failing for more than 5 days with 8 failures: the ninth failure is
	// not enough (the anti-flap guard wants 10), the tenth disables it.
	if err := e.db.Update(ctx, func(tx store.Tx) error {
		w.FailingSince, w.Failures = time.Now().Add(-delivery.DisableAfter-time.Minute), delivery.DisableMinFailures-2
		return tx.UpdateWebhook(w)
	}); err != nil {
		t.Fatal(err)
	}
	ev := e.reading(t, "example.com", 10)
	eventually(t, "disabled", func() bool {
		got, _ := e.db.Webhook(ctx, "acct_1", w.ID)
		return !got.Enabled
	})
	got, _ := e.db.Webhook(ctx, "acct_1", w.ID)
	if got.Failures != delivery.DisableMinFailures || got.DisabledReason == "" {
		t.Errorf("disabled with %d failures (%q), want %d", got.Failures, got.DisabledReason, delivery.DisableMinFailures)
	}
	for _, d := range deliveries(t, e, w.ID) {
		if d.EventID == ev.ID && d.Attempts != 2 {
			t.Errorf("disabled after %d attempts of the delivery, want 2", d.Attempts)
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	e := newEnv(t, delivery.Options{})
	var first atomic.Bool
	rc := newReceiver(t, nil)
	rc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev webhook.Event
		json.Unmarshal(body, &ev)
		if ev.Event != events.WebhookTest && !first.Swap(true) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	ev := e.reading(t, "example.com", 10)
	eventually(t, "throttled attempt recorded", func() bool {
		for _, d := range deliveries(t, e, w.ID) {
			if d.EventID == ev.ID && d.Attempts == 1 {
				if d.Status != store.DeliveryPending || d.NextAttemptAt.Sub(d.LastAttemptAt) < 2*time.Second {
					t.Fatalf("after 429 with Retry-After 2: %+v", d)
				}
				return true
			}
		}
		return false
	})
}

func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	e := newEnv(t, delivery.Options{Timeout: 5 * time.Second, PerEndpoint: 2})
	release := make(chan struct{})
	slow := newReceiver(t, nil)
	slow.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev webhook.Event
		json.Unmarshal(body, &ev)
		if ev.Event != events.WebhookTest {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	fast := newReceiver(t, nil)
	e.create(t, slow, client.CreateWebhook{Domain: "slow.example", Events: []string{events.VisibilityChange}})
	e.create(t, fast, client.CreateWebhook{Domain: "fast.example", Events: []string{events.VisibilityChange}})
	for i := range 20 {
		e.reading(t, "slow.example", i)
	}
	start := time.Now()
	for i := range 20 {
		e.reading(t, "fast.example", i)
	}
	eventually(t, "the healthy endpoint got all 20", func() bool { return len(fast.events()) == 20 })
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the healthy endpoint took %v behind a hanging one", took)
	}
	close(release)
}

func TestRotationSignsWithBothSecrets(t *testing.T) {
	e := newEnv(t, delivery.Options{})
	var sigs []string
	var mu sync.Mutex
	rc := newReceiver(t, nil)
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	old := w.Secret
	rotated, err := e.svc.Rotate(ctx, e.p, w.ID, time.Hour)
	if err != nil || rotated.Secret == old || rotated.PrevSecret != old {
		t.Fatalf("rotate: %+v, %v", rotated, err)
	}
	inner := rc.Config.Handler
	rc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sigs = append(sigs, r.Header.Get("webhook-signature"))
		mu.Unlock()
		inner.ServeHTTP(w, r)
	})
	// The receiver still knows only the old secret: it verifies.
	e.reading(t, "example.com", 33)
	eventually(t, "delivered under the old secret", func() bool { return len(rc.events()) == 1 })
	rc.mu.Lock()
	rc.secret = rotated.Secret // and under the new one
	rc.mu.Unlock()
	e.reading(t, "example.com", 34)
	eventually(t, "delivered under the new secret", func() bool { return len(rc.events()) == 2 })
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sigs {
		if n := len(splitFields(s)); n != 2 {
			t.Errorf("signature header %q carries %d signatures, want 2 during the grace period", s, n)
		}
	}
}

func splitFields(s string) []string {
	var out []string
	start := -1
	for i, c := range s + " " {
		if c == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
			}
			start = -1
		} else if start < 0 {
			start = i
		}
	}
	return out
}

func TestRestartResumesPendingDeliveries(t *testing.T) {
	fastSchedule(t)
	dir := t.TempDir()
	_ = dir
	e := newEnv(t, delivery.Options{})
	var up atomic.Bool
	rc := newReceiver(t, func(n int, ev webhook.Event) int {
		if ev.Event == events.WebhookTest || up.Load() {
			return 200
		}
		return 503
	})
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	for i := range 5 {
		e.reading(t, "example.com", i)
	}
	eventually(t, "five deliveries failing", func() bool {
		n := 0
		for _, d := range deliveries(t, e, w.ID) {
			if d.Event == events.VisibilityChange && d.Attempts >= 1 {
				n++
			}
		}
		return n == 5
	})
	up.Store(true)
	eventually(t, "all five delivered", func() bool { return len(rc.events()) == 5 })
	ids := map[string]bool{}
	for _, ev := range rc.events() {
		ids[ev.ID] = true
	}
	if len(ids) != 5 {
		t.Errorf("%d distinct events delivered, want 5", len(ids))
	}
}

func TestCreateRefusesBadSetups(t *testing.T) {
	e := newEnv(t, delivery.Options{})
	rc := newReceiver(t, func(n int, ev webhook.Event) int { return http.StatusNotFound })
	for name, in := range map[string]client.CreateWebhook{
		"no events":          {Domain: "example.com", URL: rc.URL},
		"unknown event":      {Domain: "example.com", Events: []string{"nope"}, URL: rc.URL},
		"bad domain":         {Domain: "http://x", Events: []string{events.VisibilityChange}, URL: rc.URL},
		"ftp url":            {Domain: "example.com", Events: []string{events.VisibilityChange}, URL: "ftp://example.com/x"},
		"private address":    {Domain: "example.com", Events: []string{events.VisibilityChange}, URL: "https://10.1.2.3/hook"},
		"min change range":   {Domain: "example.com", Events: []string{events.VisibilityChange}, URL: rc.URL, MinScoreChange: ptr(101)},
		"min citation range": {Domain: "example.com", Events: []string{events.CitationChange}, URL: rc.URL, MinCitationChange: ptr(-1)},
		"min errors range":   {Domain: "example.com", Events: []string{events.CrawlerErrors}, URL: rc.URL, MinCrawlerErrors: ptr(1000001)},
		"min errors below":   {Domain: "example.com", Events: []string{events.CrawlerErrors}, URL: rc.URL, MinCrawlerErrors: ptr(-1)},
	} {
		_, err := e.svc.Create(ctx, e.p, in)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, err := e.svc.Create(ctx, e.p, client.CreateWebhook{Domain: "example.com", Events: []string{events.VisibilityChange}, URL: rc.URL})
	if err == nil {
		t.Fatal("an endpoint answering 404 was accepted")
	}
	ws, _, _ := e.db.ListWebhooks(ctx, store.WebhookFilter{AccountID: "acct_1", AllClients: true})
	if len(ws) != 0 {
		t.Errorf("%d webhooks kept after refused setups", len(ws))
	}
}

// TestVerificationHidesTheRefusedAddress: an endpoint whose name resolves
// to a private address is refused without saying which address.
func TestVerificationHidesTheRefusedAddress(t *testing.T) {
	e := newEnv(t, delivery.Options{})
	guarded := netguard.Policy{}.Dialer(time.Second)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		// hooks.internal.test resolves to 10.20.30.40 on this network.
		return guarded.DialContext(ctx, network, strings.Replace(addr, "hooks.internal.test", "10.20.30.40", 1))
	}}
	svc := *e.svc
	svc.Client = &http.Client{Transport: tr}
	_, err := svc.Create(ctx, e.p, client.CreateWebhook{Domain: "example.com", Events: []string{events.VisibilityChange},
		URL: "https://hooks.internal.test/hook"})
	fe, ok := fault.As(err)
	if !ok || fe.Code != fault.WebhookVerification {
		t.Fatalf("Create = %v, want WEBHOOK_VERIFICATION_FAILED", err)
	}
	if strings.Contains(fe.Message, "10.20.30.40") || strings.Contains(fe.Message, "private") || !strings.Contains(fe.Message, "not allowed") {
		t.Errorf("message %q names the address or does not say it is not allowed", fe.Message)
	}
}

func ptr[T any](v T) *T { return &v }

var _ = strconv.Itoa

// An endpoint whose queue overflows leaves the rest of its deliveries in
// the store; its own refills bring them in as its queue runs low, without
// the store-wide claims (which here only run once an hour).
func TestSpilledEndpointIsRefilled(t *testing.T) {
	e := newEnv(t, delivery.Options{PerEndpoint: 1, Idle: time.Hour})
	var hold atomic.Bool
	release := make(chan struct{})
	rc := newReceiver(t, nil)
	inner := rc.Config.Handler
	rc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() {
			<-release // the first attempts wait while the queue overflows
		}
		inner.ServeHTTP(w, r)
	})
	e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	hold.Store(true)
	const n = 60 // an endpoint with 1 attempt in flight holds 8
	for i := range n {
		e.reading(t, "example.com", i%2*10+i%7)
	}
	time.Sleep(100 * time.Millisecond)
	close(release)
	eventually(t, "every event delivered", func() bool { return len(rc.events()) >= n })
	seen := map[string]bool{}
	for _, ev := range rc.events() {
		seen[ev.ID] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct events of %d", len(seen), n)
	}
}

// A success writes its target's health (failures reset, the time of the
// success) at most once a minute per engine, without reading the target in
// between; failures another process records are reset by the next write,
// and a failure this engine sees makes the next success write at once.
func TestSuccessWritesHealthOncePerMinute(t *testing.T) {
	fastSchedule(t)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	e := newEnv(t, delivery.Options{Now: now})
	var failing atomic.Bool
	rc := newReceiver(t, func(n int, ev webhook.Event) int {
		if failing.Load() && ev.Event != events.WebhookTest {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	target := func() store.Webhook {
		t.Helper()
		got, err := e.db.Webhook(ctx, "acct_1", w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	e.reading(t, "example.com", 10)
	succeeded(t, e, w.ID, 1)
	first := target()
	if first.LastSuccessAt.IsZero() || first.Failures != 0 {
		t.Fatalf("after the first success: %+v", first)
	}
	// Another process records failures meanwhile.
	if err := e.db.Update(ctx, func(tx store.Tx) error {
		cur := first
		cur.Failures, cur.FailingSince = 3, now().Add(-time.Hour)
		return tx.UpdateWebhookHealth(cur)
	}); err != nil {
		t.Fatal(err)
	}
	advance(10 * time.Second)
	e.reading(t, "example.com", 20)
	succeeded(t, e, w.ID, 2)
	if got := target(); got.Failures != 3 || !got.LastSuccessAt.Equal(first.LastSuccessAt) {
		t.Fatalf("a success within the minute wrote the target: failures %d, last success %s (was %s)",
			got.Failures, got.LastSuccessAt, first.LastSuccessAt)
	}
	advance(61 * time.Second)
	e.reading(t, "example.com", 30)
	succeeded(t, e, w.ID, 3)
	if got := target(); got.Failures != 0 || !got.FailingSince.IsZero() || !got.LastSuccessAt.Equal(now()) {
		t.Fatalf("a success a minute on did not reset the failures: %+v", got)
	}

	// A failure here: the next success, within the minute, resets it.
	failing.Store(true)
	advance(time.Second)
	e.reading(t, "example.com", 40)
	eventually(t, "a failure recorded", func() bool { return target().Failures == 1 })
	failing.Store(false)
	advance(time.Second) // the retry comes due
	e.engine.Wake()
	succeeded(t, e, w.ID, 4)
	if got := target(); got.Failures != 0 || !got.LastSuccessAt.Equal(now()) {
		t.Fatalf("the success after a failure did not reset it: %+v", got)
	}
}

// succeeded waits until n of the webhook's visibility deliveries have
// their success written: the outcomes' transactions have committed.
func succeeded(t *testing.T, e *env, webhookID string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d deliveries succeeded", n), func() bool {
		k := 0
		for _, d := range deliveries(t, e, webhookID) {
			if d.Event == events.VisibilityChange && d.Status == store.DeliverySucceeded {
				k++
			}
		}
		return k == n
	})
}

// targetReads counts the reads of a webhook or connection made in the
// engine's write transactions.
type targetReads struct {
	*sqlite.DB
	n atomic.Int64
}

func (c *targetReads) Update(ctx context.Context, fn func(store.Tx) error) error {
	return c.DB.Update(ctx, func(tx store.Tx) error { return fn(countedTx{tx, &c.n}) })
}

type countedTx struct {
	store.Tx
	n *atomic.Int64
}

func (tx countedTx) Webhook(accountID, id string) (store.Webhook, error) {
	tx.n.Add(1)
	return tx.Tx.Webhook(accountID, id)
}

// TestSuccessOfAHealthyTargetReadsNothing: the outcome of a success reads
// its target once, the first time; each later success within the minute
// is written with no read of it (the common case of a busy endpoint, on
// PostgreSQL a query a delivery saved).
func TestSuccessOfAHealthyTargetReadsNothing(t *testing.T) {
	var reads *targetReads
	e := newEnvOn(t, delivery.Options{}, func(db *sqlite.DB) delivery.Store { reads = &targetReads{DB: db}; return reads })
	rc := newReceiver(t, func(int, webhook.Event) int { return http.StatusOK })
	w := e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	e.reading(t, "example.com", 10)
	succeeded(t, e, w.ID, 1)
	if got := reads.n.Load(); got != 1 {
		t.Fatalf("the first success read its target %d times, want once", got)
	}
	const later = 10
	for i := range later {
		e.reading(t, "example.com", 20+i)
		succeeded(t, e, w.ID, 2+i)
	}
	if got := reads.n.Load() - 1; got != 0 {
		t.Errorf("%d later successes within the minute read their target %d times, want none", later, got)
	}
}
