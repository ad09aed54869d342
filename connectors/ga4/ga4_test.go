package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/ga4/ga4fake"
	"github.com/aivis/aivis/connectors/internal/fakekit"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/plugins/sdk/sdktest"
)

func settingsFor(f *ga4fake.Fake, secret string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"measurement_id": %q, "api_secret": %q, "api_url": %q}`, ga4fake.MeasurementID, secret, f.URL()))
}

func TestBatch(t *testing.T) {
	f := ga4fake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	evs := make([]sdk.Event, 25)
	for i := range evs {
		evs[i] = kittest.Change(fmt.Sprint("evt_", i), "example.com", 60+i, 50, "positive")
	}
	// A kind GA4 would refuse as a name fails alone, with the reason.
	evs[3] = kittest.Event("evt_bad", "bad-kind", "example.com", nil)
	// Data keys that are no valid param names are left out.
	evs[4] = kittest.Event("evt_4", "scan_completed", "example.com", map[string]any{"2x": 1, "visibility_score": 64, "nested": map[string]any{}})
	rs := c.Deliver(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), evs)
	for i, r := range rs {
		want := sdk.Delivered
		if i == 3 {
			want = sdk.PermanentFailure
		}
		if r.Outcome != want {
			t.Errorf("event %d: %+v", i, r)
		}
	}
	if !strings.Contains(rs[3].Reason, "GA4 would drop this event") || !strings.Contains(rs[3].Reason, "aivis_bad-kind") {
		t.Errorf("reason %q", rs[3].Reason)
	}
	got := f.Received()
	if len(f.Requests()) != 1 || len(got) != 24 || len(f.Dropped()) != 0 {
		t.Fatalf("%d requests, %d events kept, dropped %+v", len(f.Requests()), len(got), f.Dropped())
	}
	h := got[0]
	if h.Name != "aivis_ai_visibility_change" || h.ClientID != "aivis" || h.Params["domain"] != "example.com" ||
		h.Params["visibility_score"] != 60.0 || h.Params["event_id"] != "evt_0" || h.Params["sentiment"] != "positive" {
		t.Errorf("hit %+v", h)
	}
	if age := time.Since(time.UnixMicro(h.TimestampMicros)); age < 0 || age > time.Minute {
		t.Errorf("timestamp_micros %d", h.TimestampMicros)
	}
	if p := got[3].Params; p["visibility_score"] != 64.0 || p["2x"] != nil || p["nested"] != nil {
		t.Errorf("params %+v", p)
	}
}

// TestGA4KeepsWhatIsSent: events that reach each of GA4's limits, checked
// by the fake on GA4's rules of its own: what the connector sends is kept
// (nothing is dropped in silence), and what GA4 would drop fails instead
// of being sent.
func TestGA4KeepsWhatIsSent(t *testing.T) {
	f := ga4fake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	wide := map[string]any{"domain": "example.com"}
	for i := range 40 {
		wide[fmt.Sprintf("k%02d", i)] = strings.Repeat("€", 150)
	}
	for _, k := range []string{"google_id", "ga_session", "firebase_screen", "_hidden", "a-b", "p" + strings.Repeat("x", 40)} {
		wide[k] = "left out"
	}
	evs := make([]sdk.Event, c.Info().MaxBatch)
	for i := range evs {
		evs[i] = kittest.Event(fmt.Sprint("evt_", i), "scan_completed", "example.com", wide)
	}
	evs[1] = kittest.Event("evt_long", "kind_"+strings.Repeat("x", 60), "example.com", nil)
	evs[2] = kittest.Event("evt_dash", "bad-kind", "example.com", nil)
	rs := c.Deliver(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), evs)
	delivered := 0
	for i, r := range rs {
		if want := map[bool]sdk.Outcome{true: sdk.PermanentFailure, false: sdk.Delivered}[i == 2]; r.Outcome != want {
			t.Errorf("event %d: %+v", i, r)
		}
		if r.Outcome == sdk.Delivered {
			delivered++
		}
	}
	if d := f.Dropped(); len(d) != 0 {
		t.Fatalf("GA4 dropped %d events, the first for %+v", len(d), d[0].Why)
	}
	got := f.Received()
	if len(got) != delivered {
		t.Fatalf("%d events kept, %d delivered", len(got), delivered)
	}
	if h := got[0]; len(h.Params) != 25 || len([]rune(h.Params["k00"].(string))) != 100 || h.Params["google_id"] != nil {
		t.Errorf("the widest event kept %d params: %+v", len(h.Params), h.Params)
	}
	if n := got[1].Name; len(n) != 40 {
		t.Errorf("a long kind became %q", n)
	}

	// A prefix that makes a reserved name of a kind: refused, not sent.
	reserved := json.RawMessage(fmt.Sprintf(`{"measurement_id": %q, "api_secret": %q, "api_url": %q, "event_prefix": "session_"}`,
		ga4fake.MeasurementID, ga4fake.APISecret, f.URL()))
	sent := len(f.Requests())
	rs = c.Deliver(kittest.Ctx(t), reserved, []sdk.Event{kittest.Event("evt_r", "start", "example.com", nil)})
	if rs[0].Outcome != sdk.PermanentFailure || len(f.Requests()) != sent {
		t.Errorf("session_start: %+v after %d requests", rs, len(f.Requests())-sent)
	}
}

// The citation events reach GA4 as aivis_citation_change and
// aivis_scan_completed, the rates as their values (0-1), the scan's list
// of engines left out: GA4's params are flat.
func TestCitationEvents(t *testing.T) {
	f := ga4fake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	for _, r := range c.Deliver(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), []sdk.Event{kittest.Citation("evt_c", "example.com"),
		kittest.Scan("evt_s", "example.com")}) {
		if r.Outcome != sdk.Delivered {
			t.Fatalf("%+v", r)
		}
	}
	got := f.Received()
	if len(got) != 2 || len(f.Dropped()) != 0 {
		t.Fatalf("kept %+v, dropped %+v", got, f.Dropped())
	}
	want := map[string]any{"event_id": "evt_c", "domain": "example.com", "engine": "Perplexity", "kind": "perplexity",
		"surface": "search_api", "market": "de-DE",
		"citation_change": -27.5, "citation_rate": 0.125, "previous_citation_rate": 0.4, "source_share": 1.0 / 30,
		"previous_source_share": 0.075, "scan_id": "scan_2", "previous_scan_id": "scan_1"}
	if got[0].Name != "aivis_citation_change" || !maps.Equal(got[0].Params, want) {
		t.Errorf("%s %v\nwant %v", got[0].Name, got[0].Params, want)
	}
	want = map[string]any{"event_id": "evt_s", "domain": "example.com", "scan_id": "scan_1", "visibility_score": 64.0,
		"sentiment": "positive", "readiness_score": 80.0, "citation_rate": 0.25, "source_share": 0.075, "overview_presence": 1.0}
	if got[1].Name != "aivis_scan_completed" || !maps.Equal(got[1].Params, want) {
		t.Errorf("%s %v\nwant %v", got[1].Name, got[1].Params, want)
	}
}

// crawler_errors reaches GA4 as aivis_crawler_errors: its counts as
// values, the page with the most errors as page and its days joined, the
// lists of pages left out.
func TestCrawlerErrorsEvent(t *testing.T) {
	f := ga4fake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	if r := c.Deliver(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), []sdk.Event{kittest.CrawlerErrors("evt_e", "example.com")}); r[0].Outcome != sdk.Delivered {
		t.Fatalf("%+v", r)
	}
	got := f.Received()
	if len(got) != 1 || len(f.Dropped()) != 0 {
		t.Fatalf("kept %+v, dropped %+v", got, f.Dropped())
	}
	want := map[string]any{"event_id": "evt_e", "domain": "example.com", "page": "/pricing", "days": "2026-11-27", "errors": 14.0,
		"pages_with_errors": 2.0, "scan_id": "scan_2"}
	if got[0].Name != "aivis_crawler_errors" || !maps.Equal(got[0].Params, want) {
		t.Errorf("%s %v\nwant %v", got[0].Name, got[0].Params, want)
	}
}

func TestOldEventsAndAnswers(t *testing.T) {
	f := ga4fake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	old := kittest.Change("evt_old", "example.com", 50, 40, "neutral")
	old.Timestamp = time.Now().Add(-80 * time.Hour)
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), []sdk.Event{old}); rs[0].Outcome != sdk.Delivered {
		t.Fatalf("%+v", rs)
	}
	if got := f.Received(); len(got) != 1 || got[0].TimestampMicros != 0 || len(f.Dropped()) != 0 {
		t.Errorf("an 80 h old event: kept %+v, dropped %+v (GA4 refuses timestamps past 72 h: it must go without one)", got, f.Dropped())
	}
	ev := kittest.Change("evt_1", "example.com", 50, 40, "neutral")
	for _, tc := range []struct {
		status int
		want   sdk.Outcome
	}{{429, sdk.Retry}, {500, sdk.Retry}, {503, sdk.Retry}, {400, sdk.PermanentFailure}} {
		f.Script(fakekit.Answer{Status: tc.status})
		if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), []sdk.Event{ev}); rs[0].Outcome != tc.want {
			t.Errorf("%d: %+v", tc.status, rs)
		}
	}
	// A wrong secret: GA4 answers 204 and drops the event; nothing on the
	// wire tells, which is why the docs point to the Test button.
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, "wrong"), []sdk.Event{ev}); rs[0].Outcome != sdk.Delivered || len(f.Dropped()) != 1 {
		t.Errorf("wrong secret: %+v, dropped %+v", rs, f.Dropped())
	}
	f.Close()
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), []sdk.Event{ev}); rs[0].Outcome != sdk.Retry {
		t.Errorf("dead: %+v", rs)
	}
}

func TestTestUsesValidationServer(t *testing.T) {
	f := ga4fake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	res := c.Test(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), kittest.Event("evt_t", "webhook_test", "example.com", map[string]any{"message": "hello"}))
	if res.Outcome != sdk.Delivered {
		t.Fatalf("%+v", res)
	}
	reqs := f.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/debug/mp/collect" || reqs[1].Path != "/mp/collect" || len(f.Received()) != 1 {
		t.Errorf("requests %+v", reqs)
	}
	// The validation server's messages come back as the reason, and the
	// event is not sent.
	f.Script(fakekit.Answer{Status: 200, Body: `{"validationMessages":[{"fieldPath":"events","description":"Event at index: [0] has invalid name [x-y].","validationCode":"NAME_INVALID"}]}`})
	res = c.Test(kittest.Ctx(t), settingsFor(f, ga4fake.APISecret), kittest.Event("evt_t2", "webhook_test", "example.com", nil))
	if res.Outcome != sdk.PermanentFailure || !strings.Contains(res.Reason, "NAME_INVALID") || len(f.Requests()) != 3 {
		t.Errorf("%+v after %d requests", res, len(f.Requests()))
	}
}

func TestSettings(t *testing.T) {
	c := &connector{}
	for _, tc := range []struct{ settings, field string }{
		{`{"api_secret": "s"}`, "measurement_id"},
		{`{"measurement_id": "UA-1234-1", "api_secret": "s"}`, "measurement_id"},
		{`{"measurement_id": "G-ABC123"}`, "api_secret"},
		{`{"measurement_id": "G-ABC123", "api_secret": "s", "event_prefix": "9x"}`, "event_prefix"},
		{`{"measurement_id": "G-ABC123", "api_secret": "s", "event_prefix": "google_"}`, "event_prefix"},
	} {
		fes := c.ValidateSettings(kittest.Ctx(t), json.RawMessage(tc.settings))
		if len(fes) == 0 || fes[0].Field != tc.field {
			t.Errorf("%s: %+v, want an error on %s", tc.settings, fes, tc.field)
		}
	}
}

func TestPlugin(t *testing.T) {
	f := ga4fake.New()
	defer f.Close()
	sdktest.Run(t, sdktest.Suite{Binary: kittest.Build(t), Env: kittest.Loopback,
		Valid:       []json.RawMessage{json.RawMessage(`{"measurement_id": "G-ABC123", "api_secret": "s", "api_url": "https://region1.google-analytics.com"}`)},
		Invalid:     []json.RawMessage{json.RawMessage(`{"measurement_id": "G-ABC123"}`)},
		Deliverable: settingsFor(f, ga4fake.APISecret)})
	if n := len(f.Received()); n != 26 {
		t.Errorf("%d events kept, want the kit's 25 and its test", n)
	}
}
