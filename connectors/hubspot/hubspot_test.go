package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/hubspot/hubspotfake"
	"github.com/aivis/aivis/connectors/internal/fakekit"
	"github.com/aivis/aivis/connectors/internal/kit"
	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/plugins/sdk/sdktest"
)

func settingsFor(f *hubspotfake.Fake, token string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"access_token": %q, "api_url": %q}`, token, f.URL()))
}

// ready is a fake with the aivis properties, made by Test as a user would.
func ready(t *testing.T) (*hubspotfake.Fake, *connector) {
	f := hubspotfake.New()
	t.Cleanup(f.Close)
	c := &connector{client: kittest.Client()}
	if r := c.Test(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), kittest.Event("evt_t", "webhook_test", "", nil)); r.Outcome != sdk.Delivered {
		t.Fatalf("test: %+v", r)
	}
	return f, c
}

func TestTestCreatesProperties(t *testing.T) {
	f, c := ready(t)
	for _, p := range Properties {
		if !f.HasProperty(p.Name) {
			t.Errorf("property %s not created", p.Name)
		}
	}
	n := len(f.Requests())
	// Again: they exist, nothing is created.
	c.Test(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), kittest.Event("evt_t2", "webhook_test", "", nil))
	for _, r := range f.Requests()[n:] {
		if r.Method != http.MethodGet {
			t.Errorf("a second test sent %s %s", r.Method, r.Path)
		}
	}
	if r := c.Test(kittest.Ctx(t), settingsFor(f, "pat-wrong"), kittest.Event("evt_t3", "webhook_test", "", nil)); r.Outcome != sdk.PermanentFailure ||
		!strings.Contains(r.Reason, "invalid or expired") {
		t.Errorf("a wrong token: %+v", r)
	}
}

func TestUpsertAndNotes(t *testing.T) {
	f, c := ready(t)
	first := kittest.Change("evt_1", "example.com", 60, 50, "neutral")
	second := kittest.Change("evt_2", "Example.com", 72, 60, "positive")
	second.Timestamp = first.Timestamp.Add(time.Minute)
	other := kittest.Event("evt_3", "scan_completed", "other.example", map[string]any{"visibility_score": 40, "sentiment": "negative", "readiness_score": 55})
	noDomain := kittest.Event("evt_4", "connection_disabled", "", map[string]any{"connection_id": "con_1"})
	n := len(f.Requests())
	rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{second, first, other, noDomain})
	for i, r := range rs[:3] {
		if r.Outcome != sdk.Delivered {
			t.Errorf("event %d: %+v", i, r)
		}
	}
	if rs[3].Outcome != sdk.PermanentFailure || !strings.Contains(rs[3].Reason, "by domain") {
		t.Errorf("an event without a domain: %+v", rs[3])
	}
	if reqs := f.Requests()[n:]; len(reqs) != 4 || reqs[0].Path != "/crm/v3/objects/companies/batch/upsert" {
		t.Errorf("%d requests, want one upsert and three notes", len(reqs))
	}
	co := f.Company("example.com")
	if co == nil || co.Properties["aivis_visibility_score"] != "72" || co.Properties["aivis_sentiment"] != "positive" ||
		co.Properties["aivis_score_change"] != "12" || co.Properties["aivis_last_change"] != second.Timestamp.Format(time.RFC3339) {
		t.Fatalf("company %+v: the latest event must win", co)
	}
	if o := f.Company("other.example"); o == nil || o.Properties["aivis_readiness_score"] != "55" || o.Properties["aivis_last_event"] != "scan_completed" {
		t.Errorf("company %+v", o)
	}
	notes := f.Notes()
	// One note per event, in the order they happened.
	if len(notes) != 3 || notes[0].CompanyID != co.ID || !strings.Contains(notes[0].Body, "60/100 (+10, was 50)") ||
		!strings.Contains(notes[2].Body, "72/100 (+12, was 60)") {
		t.Fatalf("notes %+v", notes)
	}
	// A retry upserts the same company, never a second one.
	c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{first})
	if again := f.Company("example.com"); again.ID != co.ID {
		t.Errorf("a retry made company %s beside %s", again.ID, co.ID)
	}
	// A long note is cut to HubSpot's limit.
	long := kittest.Event("evt_long", "content_request_failed", "example.com", map[string]any{"failure_reason": strings.Repeat("<b>", 30000)})
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{long}); rs[0].Outcome != sdk.Delivered {
		t.Errorf("a long note: %+v", rs)
	}
	// Without notes, only the upsert.
	n = len(f.Requests())
	noNotes := json.RawMessage(fmt.Sprintf(`{"access_token": %q, "api_url": %q, "notes": false}`, hubspotfake.Token, f.URL()))
	if rs := c.Deliver(kittest.Ctx(t), noNotes, []sdk.Event{first}); rs[0].Outcome != sdk.Delivered || len(f.Requests()) != n+1 {
		t.Errorf("notes off: %+v, %d requests", rs, len(f.Requests())-n)
	}
}

// The scan's citation figures over every engine, and the last engine
// whose citation rate changed, are company properties, in percent and
// points; a scan whose engines reported no sources clears the share.
func TestCitationProperties(t *testing.T) {
	f, c := ready(t)
	scan, change := kittest.Scan("evt_s", "example.com"), kittest.Citation("evt_c", "example.com")
	change.Timestamp = scan.Timestamp.Add(time.Second)
	for _, r := range c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{change, scan}) {
		if r.Outcome != sdk.Delivered {
			t.Fatalf("%+v", r)
		}
	}
	co := f.Company("example.com")
	want := map[string]string{"aivis_citation_rate": "25", "aivis_source_share": "7.5", "aivis_citation_change": "-27.5",
		"aivis_citation_engine": "Perplexity", "aivis_last_event": "citation_change", "aivis_visibility_score": "64"}
	for k, v := range want {
		if co == nil || co.Properties[k] != v {
			t.Errorf("company %+v: %s, want %q", co, k, v)
		}
	}
	notes := f.Notes()
	if len(notes) != 2 || !strings.Contains(notes[1].Body, "Citation rate: 12.5% (1 of 8), was 40% (4 of 10): -27.5 pts") ||
		!strings.Contains(notes[0].Body, "Perplexity: cited in 40% (4 of 10), 7.5% of sources") {
		t.Errorf("notes %+v", notes)
	}
	bare := kittest.Event("evt_s2", "scan_completed", "example.com", map[string]any{"visibility_score": 60, "sentiment": "neutral",
		"readiness_score": 80, "citation_rate": map[string]any{"value": 0.5, "hits": 5, "of": 10}, "source_share": nil, "engines": []any{}})
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{bare}); rs[0].Outcome != sdk.Delivered {
		t.Fatalf("%+v", rs)
	}
	if co := f.Company("example.com"); co.Properties["aivis_citation_rate"] != "50" || co.Properties["aivis_source_share"] != "" ||
		co.Properties["aivis_citation_engine"] != "Perplexity" {
		t.Errorf("after a scan without sources: %+v", co)
	}
}

// crawler_errors sets the company's error hits and the cited page with
// the most of them, and leaves a note listing every page.
func TestCrawlerErrorsProperties(t *testing.T) {
	f, c := ready(t)
	if r := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{kittest.CrawlerErrors("evt_e", "example.com")}); r[0].Outcome != sdk.Delivered {
		t.Fatalf("%+v", r)
	}
	co := f.Company("example.com")
	want := map[string]string{"aivis_crawler_errors": "14", "aivis_crawler_error_page": "/pricing", "aivis_last_event": "crawler_errors"}
	for k, v := range want {
		if co == nil || co.Properties[k] != v {
			t.Errorf("company %+v: %s, want %q", co, k, v)
		}
	}
	notes := f.Notes()
	if len(notes) != 1 || !strings.Contains(notes[0].Body, "AI crawlers got errors: example.com 14 errors on 2 cited pages") ||
		!strings.Contains(notes[0].Body, "/docs/setup: 3 errors (OAI-SearchBot 3 5xx), cited by Perplexity (1)") {
		t.Errorf("notes %+v", notes)
	}
}

func TestErrorsAndLimits(t *testing.T) {
	ev := kittest.Change("evt_1", "example.com", 60, 50, "neutral")
	// Properties not created yet (Test never ran, or ran before a version
	// that writes more): HubSpot's VALIDATION_ERROR, then the delivery
	// creates them and writes the company again.
	f := hubspotfake.New()
	defer f.Close()
	c := &connector{client: kittest.Client()}
	rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev})
	if co := f.Company("example.com"); rs[0].Outcome != sdk.Delivered || co == nil || co.Properties["aivis_visibility_score"] != "60" {
		t.Errorf("missing properties: %+v, company %+v", rs, co)
	}
	for _, p := range Properties {
		if !f.HasProperty(p.Name) {
			t.Errorf("property %s not created", p.Name)
		}
	}
	// Without the scope to create them: HubSpot's 403, with the fix.
	missing := `{"status":"error","message":"Property values were not valid: Property \"aivis_citation_rate\" does not exist","category":"VALIDATION_ERROR"}`
	f.Script(fakekit.Answer{Status: 400, Body: missing},
		fakekit.Answer{Status: 404, Body: `{"status":"error","message":"Unable to find property aivis_visibility_score","category":"OBJECT_NOT_FOUND"}`},
		fakekit.Answer{Status: 403, Body: `{"status":"error","message":"This app hasn't been granted all required scopes to make this call.","category":"MISSING_SCOPES"}`})
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev}); rs[0].Outcome != sdk.PermanentFailure ||
		!strings.Contains(rs[0].Reason, "lacks a scope") {
		t.Errorf("missing properties, no scope to make them: %+v", rs)
	}
	// Made, and refused again: the fix is said, and nothing loops.
	n := len(f.Requests())
	f.Script(fakekit.Answer{Status: 400, Body: missing})
	for range Properties {
		f.Script(fakekit.Answer{Status: 200, Body: `{"name":"x"}`})
	}
	f.Script(fakekit.Answer{Status: 400, Body: missing})
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev}); rs[0].Outcome != sdk.PermanentFailure ||
		!strings.Contains(rs[0].Reason, "VALIDATION_ERROR") || !strings.Contains(rs[0].Reason, "press Test") || len(f.Requests()) != n+len(Properties)+2 {
		t.Errorf("still refused: %+v after %d requests", rs, len(f.Requests())-n)
	}
	f, c = ready(t)
	f.TenSecondly = 2
	rs = c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev})
	if rs[0].Outcome != sdk.Retry || rs[0].RetryAfter != 10*time.Second || !strings.Contains(rs[0].Reason, "ten_secondly") {
		t.Errorf("ten-secondly limit: %+v", rs)
	}
	f.TenSecondly, f.Daily = 0, 1
	rs = c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev})
	if rs[0].Outcome != sdk.Retry || rs[0].RetryAfter < time.Second || rs[0].RetryAfter > 24*time.Hour || !strings.Contains(rs[0].Reason, "daily") {
		t.Errorf("daily limit: %+v", rs)
	}
	f.Daily = 0
	for _, tc := range []struct {
		a    fakekit.Answer
		want sdk.Outcome
	}{
		{fakekit.Answer{Status: 429, Header: map[string]string{"Retry-After": "3"}, Body: `{"status":"error","errorType":"RATE_LIMIT","policyName":"TEN_SECONDLY_ROLLING"}`}, sdk.Retry},
		{fakekit.Answer{Status: 502, Body: "<html>"}, sdk.Retry},
		{fakekit.Answer{Status: 403, Body: `{"status":"error","message":"This app hasn't been granted all required scopes","category":"MISSING_SCOPES"}`}, sdk.PermanentFailure},
		{fakekit.Answer{Status: 200, Body: `{"status":"COMPLETE","results":[],"errors":[{"message":"domain is not unique"}]}`}, sdk.PermanentFailure},
	} {
		f.Script(tc.a)
		rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev})
		if rs[0].Outcome != tc.want || rs[0].Reason == "" {
			t.Errorf("%d %s: %+v", tc.a.Status, tc.a.Body, rs)
		}
		if tc.a.Status == 429 && rs[0].RetryAfter != 3*time.Second {
			t.Errorf("Retry-After: %+v", rs)
		}
	}
	// The upsert works, the note is throttled: the event is retried (the
	// upsert again is harmless).
	f.Script(fakekit.Answer{Status: 200, Body: `{"status":"COMPLETE","results":[{"id":"1","properties":{"domain":"example.com"}}]}`},
		fakekit.Answer{Status: 429, Body: `{"status":"error","errorType":"RATE_LIMIT","policyName":"TEN_SECONDLY_ROLLING"}`, Header: map[string]string{"X-HubSpot-RateLimit-Interval-Milliseconds": "10000"}})
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev}); rs[0].Outcome != sdk.Retry || rs[0].RetryAfter != 10*time.Second {
		t.Errorf("note throttled: %+v", rs)
	}
	f.Close()
	if rs := c.Deliver(kittest.Ctx(t), settingsFor(f, hubspotfake.Token), []sdk.Event{ev}); rs[0].Outcome != sdk.Retry {
		t.Errorf("dead: %+v", rs)
	}
}

func TestDailyWaitsForMidnight(t *testing.T) {
	now := time.Date(2026, 11, 23, 22, 30, 0, 0, time.UTC)
	r := refusal(kit.Response{Status: 429, Header: http.Header{}, Body: []byte(`{"errorType":"RATE_LIMIT","policyName":"DAILY"}`)}, now)
	if r.Outcome != sdk.Retry || r.RetryAfter != 90*time.Minute {
		t.Errorf("%+v", r)
	}
}

func TestPlugin(t *testing.T) {
	f := hubspotfake.New()
	defer f.Close()
	sdktest.Run(t, sdktest.Suite{Binary: kittest.Build(t), Env: kittest.Loopback,
		Valid:       []json.RawMessage{json.RawMessage(`{"access_token": "pat-na1-x", "notes": false}`)},
		Invalid:     []json.RawMessage{json.RawMessage(`{"access_token": "abc"}`), json.RawMessage(`{"access_token": "pat-x", "notes": "yes"}`)},
		Deliverable: settingsFor(f, hubspotfake.Token)})
	// The kit delivers 20 events before it tests: the first delivery
	// creates the properties, and each event and the test make a note.
	if co := f.Company("example.com"); co == nil || co.Properties["aivis_visibility_score"] != "72" || len(f.Notes()) != 21 {
		t.Errorf("company %+v, %d notes", co, len(f.Notes()))
	}
}
