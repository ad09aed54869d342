package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aivis/aivis/connectors/internal/fakekit"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/connectors/segment/segmentfake"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/plugins/sdk/sdktest"
)

func settingsFor(f *segmentfake.Fake, key string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"write_key": %q, "api_url": %q}`, key, f.URL()))
}

func events(n int) []sdk.Event {
	evs := make([]sdk.Event, n)
	for i := range evs {
		evs[i] = kittest.Change(fmt.Sprintf("evt_%03d", i), "example.com", 50+i%50, 40, "positive")
	}
	return evs
}

func TestBatchAndDedup(t *testing.T) {
	f := segmentfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	evs := events(100)
	evs[7].ClientID = "cli_7"
	for _, r := range c.Deliver(kittest.Ctx(t), settingsFor(f, segmentfake.WriteKey), evs) {
		if r.Outcome != sdk.Delivered {
			t.Fatalf("%+v", r)
		}
	}
	if n := len(f.Requests()); n != 1 {
		t.Errorf("%d requests for 100 events, want one batch", n)
	}
	got := f.Received()
	if len(got) != 100 {
		t.Fatalf("%d calls", len(got))
	}
	c0, c7 := got[0], got[7]
	if c0.Type != "track" || c0.Event != "AI Visibility Changed" || c0.MessageID != "evt_000" || c0.UserID != "acct_test" ||
		c0.Properties["visibility_score"] != 50.0 || c0.Properties["aivis_event"] != "ai_visibility_change" || c0.Timestamp == "" {
		t.Errorf("call %+v", c0)
	}
	if c7.UserID != "cli_7" {
		t.Errorf("a client's event has userId %q", c7.UserID)
	}
	// A retry of the same events is de-duplicated by messageId.
	c.Deliver(kittest.Ctx(t), settingsFor(f, segmentfake.WriteKey), evs[:10])
	if len(f.Received()) != 100 || f.Duplicates != 10 {
		t.Errorf("after a retry: %d calls, %d duplicates", len(f.Received()), f.Duplicates)
	}
}

// The citation events are track calls named as Segment names events
// ("Citation Rate Changed"), their properties the data as sent, nested
// rates and the scan's engines included.
func TestCitationTracks(t *testing.T) {
	f := segmentfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	evs := []sdk.Event{kittest.Citation("evt_c", "example.com"), kittest.Scan("evt_s", "example.com")}
	for _, r := range c.Deliver(kittest.Ctx(t), settingsFor(f, segmentfake.WriteKey), evs) {
		if r.Outcome != sdk.Delivered {
			t.Fatalf("%+v", r)
		}
	}
	got := f.Received()
	if len(got) != 2 || got[0].Event != "Citation Rate Changed" || got[1].Event != "Visibility Scan Completed" {
		t.Fatalf("calls %+v", got)
	}
	for i, ev := range evs {
		var body struct {
			Data map[string]any `json:"data"`
		}
		json.Unmarshal(ev.Body, &body)
		body.Data["aivis_event"], body.Data["aivis_event_id"] = ev.Kind, ev.ID
		if !reflect.DeepEqual(got[i].Properties, body.Data) || got[i].MessageID != ev.ID {
			t.Errorf("%s: properties %v, want %v", ev.Kind, got[i].Properties, body.Data)
		}
	}
	if p := got[0].Properties; p["citation_change"] != -27.5 || p["previous_citation_rate"].(map[string]any)["of"] != 10.0 {
		t.Errorf("citation_change properties %v", p)
	}
}

// crawler_errors is the track "AI Crawlers Got Errors", its properties
// the data as sent: the pages with their agents and engines nested.
func TestCrawlerErrorsTrack(t *testing.T) {
	f := segmentfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	ev := kittest.CrawlerErrors("evt_e", "example.com")
	if r := c.Deliver(kittest.Ctx(t), settingsFor(f, segmentfake.WriteKey), []sdk.Event{ev}); r[0].Outcome != sdk.Delivered {
		t.Fatalf("%+v", r)
	}
	got := f.Received()
	if len(got) != 1 || got[0].Event != "AI Crawlers Got Errors" {
		t.Fatalf("calls %+v", got)
	}
	var body struct {
		Data map[string]any `json:"data"`
	}
	json.Unmarshal(ev.Body, &body)
	body.Data["aivis_event"], body.Data["aivis_event_id"] = ev.Kind, ev.ID
	if !reflect.DeepEqual(got[0].Properties, body.Data) {
		t.Errorf("properties %v, want %v", got[0].Properties, body.Data)
	}
	page := got[0].Properties["pages"].([]any)[0].(map[string]any)
	if got[0].Properties["errors"] != 14.0 || page["path"] != "/pricing" || page["agents"].([]any)[0].(map[string]any)["status_4xx"] != 9.0 {
		t.Errorf("crawler_errors properties %v", got[0].Properties)
	}
}

func TestLimits(t *testing.T) {
	f := segmentfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	big := kittest.Event("evt_big", "content_request_failed", "example.com", map[string]any{"failure_reason": strings.Repeat("x", 33<<10)})
	// 60 events of 10 KB: past 500 KB in one request, so two requests.
	evs := []sdk.Event{big}
	for i := range 60 {
		evs = append(evs, kittest.Event(fmt.Sprint("evt_m", i), "content_request_failed", "example.com", map[string]any{"failure_reason": strings.Repeat("y", 10<<10)}))
	}
	rs := c.Deliver(kittest.Ctx(t), settingsFor(f, segmentfake.WriteKey), evs)
	if rs[0].Outcome != sdk.PermanentFailure || !strings.Contains(rs[0].Reason, "32 KB") {
		t.Errorf("a 33 KB event: %+v", rs[0])
	}
	for _, r := range rs[1:] {
		if r.Outcome != sdk.Delivered {
			t.Fatalf("%+v", r)
		}
	}
	if n, got := len(f.Requests()), len(f.Received()); n != 2 || got != 60 || f.Dropped != 0 {
		t.Errorf("%d requests, %d calls kept, %d dropped", n, got, f.Dropped)
	}
}

func TestOutcomes(t *testing.T) {
	f := segmentfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	evs := events(3)
	for _, tc := range []struct {
		name     string
		settings json.RawMessage
		script   []fakekit.Answer
		want     sdk.Outcome
		reason   string
	}{
		{"bad key", settingsFor(f, "wk_wrong"), nil, sdk.PermanentFailure, "write key"},
		{"429", settingsFor(f, segmentfake.WriteKey), []fakekit.Answer{{Status: 429, Header: map[string]string{"Retry-After": "12"}}}, sdk.Retry, "429"},
		{"500", settingsFor(f, segmentfake.WriteKey), []fakekit.Answer{{Status: 500}}, sdk.Retry, "500"},
		{"400", settingsFor(f, segmentfake.WriteKey), []fakekit.Answer{{Status: 400, Body: `{"success":false,"message":"Invalid JSON"}`}}, sdk.PermanentFailure, "Invalid JSON"},
	} {
		f.Script(tc.script...)
		rs := c.Deliver(kittest.Ctx(t), tc.settings, evs)
		for _, r := range rs {
			if r.Outcome != tc.want || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("%s: %+v", tc.name, r)
			}
		}
		if tc.name == "429" && rs[0].RetryAfter.Seconds() != 12 {
			t.Errorf("Retry-After %v", rs[0].RetryAfter)
		}
	}
	// RudderStack answers 200 text OK.
	f.Rudder = true
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, segmentfake.WriteKey), evs); rs[0].Outcome != sdk.Delivered {
		t.Errorf("RudderStack: %+v", rs)
	}
	f.Close()
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, segmentfake.WriteKey), evs); rs[0].Outcome != sdk.Retry {
		t.Errorf("dead: %+v", rs)
	}
}

func TestSettings(t *testing.T) {
	c := &connector{}
	for _, tc := range []struct{ settings, field string }{
		{`{}`, "write_key"},
		{`{"write_key": "k", "region": "asia"}`, "region"},
		{`{"write_key": "k", "region": "eu", "api_url": "https://rudder.example"}`, "api_url"},
		{`{"write_key": "k", "api_url": "rudder.example"}`, "api_url"},
	} {
		fes := c.ValidateSettings(kittest.Ctx(t), json.RawMessage(tc.settings))
		if len(fes) == 0 || fes[0].Field != tc.field {
			t.Errorf("%s: %+v, want an error on %s", tc.settings, fes, tc.field)
		}
	}
	for in, want := range map[string]string{
		`{"write_key": "k"}`:                                          "https://api.segment.io/v1/batch",
		`{"write_key": "k", "region": "eu"}`:                          "https://events.eu1.segmentapis.com/v1/batch",
		`{"write_key": "k", "api_url": "https://dp.rudder.example/"}`: "https://dp.rudder.example/v1/batch",
	} {
		s, _ := parse(json.RawMessage(in))
		if s.endpoint() != want {
			t.Errorf("%s: endpoint %s, want %s", in, s.endpoint(), want)
		}
	}
}

func TestPlugin(t *testing.T) {
	f := segmentfake.New()
	defer f.Close()
	sdktest.Run(t, sdktest.Suite{Binary: kittest.Build(t), Env: kittest.Loopback,
		Valid:       []json.RawMessage{json.RawMessage(`{"write_key": "k", "region": "eu"}`)},
		Invalid:     []json.RawMessage{json.RawMessage(`{"region": "eu"}`)},
		Deliverable: settingsFor(f, segmentfake.WriteKey)})
	// The kit delivers MaxBatch events, then tests with the first again:
	// de-duplicated by its messageId.
	if n := len(f.Received()); n != maxBatch || f.Duplicates != 1 {
		t.Errorf("%d calls, %d duplicates", n, f.Duplicates)
	}
}
