package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
)

// onEachStore runs f against a server on the SQLite store, and against
// one on PostgreSQL (with NATS and Redis, as a cluster's instance), each
// with an account of tier and its key; count runs a query of one number
// on the server's database.
func onEachStore(t *testing.T, tier string, f func(t *testing.T, s *server, k key, count func(query string) int)) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		k := newKey(t, dir, newAccount(t, dir, tier, false).ID)
		s := start(t, dir, queueOnly...)
		f(t, s, k, func(q string) int { return s.count(t, q) })
	})
	t.Run("postgres", func(t *testing.T) {
		c := newCluster(t)
		k := newKey(t, c.dir, newAccount(t, c.dir, tier, false).ID)
		s := start(t, t.TempDir(), queueOnly...)
		f(t, s, k, func(q string) int { return c.count(t, q) })
	})
}

// refused checks that a request is 400 VALIDATION_ERROR naming field, and
// field alone.
func refused(t *testing.T, s *server, r req, field string) {
	t.Helper()
	got := s.do(t, r)
	var e client.ErrorEnvelope
	got.decode(t, &e)
	if got.Status != 400 || e.Error.Code != "VALIDATION_ERROR" || len(e.Error.Details) != 1 || e.Error.Details[0].Field != field {
		t.Errorf("%s %q: %d %s; want 400 VALIDATION_ERROR of %q", r.method, r.path, got.Status, got.Body, field)
	}
}

// TestTenantTextRefused: a string of a request body, a query parameter or
// a path parameter holding NUL, another control character or bytes that
// are not UTF-8 is refused with 400 VALIDATION_ERROR naming the field, on
// SQLite as on PostgreSQL (which cannot store them), on both interfaces,
// and changes nothing; tab and line breaks are text.
func TestTenantTextRefused(t *testing.T) {
	onEachStore(t, "professional", func(t *testing.T, s *server, k key, count func(string) int) {
		h, kh := bearer(k), keyed(k)
		r := s.do(t, req{method: "POST", path: "/v1/domains", header: h, body: `{"domain":"example.com","brands":["Acme"]}`})
		var d client.MonitoredDomain
		r.decode(t, &d)
		if r.Status != 201 {
			t.Fatalf("create the domain: %d %s", r.Status, r.Body)
		}
		dom, prompts := "/v1/domains/"+d.ID, "/v1/domains/"+d.ID+"/prompts"
		before := s.do(t, req{method: "GET", path: dom, header: h}).Body
		promptsBefore := s.do(t, req{method: "GET", path: prompts, header: h}).Body
		for _, c := range []struct {
			r     req
			field string
		}{
			{req{method: "PUT", path: prompts, body: `{"prompts":[{"text":"hello\u0000"}]}`}, "prompts[0].text"},
			{req{method: "PUT", path: prompts, body: `{"prompts":[{"text":"ok"},{"text":"tab\tand\nline"},{"text":"bell\u0007"}]}`}, "prompts[2].text"},
			{req{method: "PATCH", path: dom, body: `{"brands":["Acme\u0000"]}`}, "brands[0]"},
			{req{method: "POST", path: "/v1/domains", body: `{"domain":"other.example","topics":["\u001b[2J"]}`}, "topics[0]"},
			{req{method: "POST", path: "/v1/domains", body: "{\"domain\":\"other.example\",\"aliases\":[\"a\xffb\"]}"}, "aliases[0]"},
			{req{method: "POST", path: "/v1/visibility", body: `{"domain":"example.com","visibility_score":50,"sentiment":"positive","client_id":"cli_\u0000"}`}, "client_id"},
			{req{method: "POST", path: "/v1/visibility/scans", body: `{"domain":"example.com\u0000"}`}, "domain"},
			{req{method: "POST", path: "/v1/webhooks", body: `{"domain":"example.com","events":["ai_visibility_change"],"url":"https://example.com/\u0000"}`}, "url"},
			{req{method: "POST", path: "/v1/connections", body: `{"connector":"slack","events":["ai_visibility_change"],"settings":{"channel":"#a\u0000"}}`}, "settings.channel"},
			{req{method: "POST", path: "/v1/zapier/hooks", body: `{"target_url":"https://example.com/x","event":"ai_visibility_change","domain":"\u0085"}`}, "domain"},
			{req{method: "POST", path: crPath, header: kh, body: `{"domain":"example.com","budget":1,"metadata":{"k":"v\u0000"}}`}, "metadata.k"},
			{req{method: "POST", path: crPath, header: kh, body: `{"domain":"example.com","budget":1,"target_queries":["a","\u007f"]}`}, "target_queries[1]"},
			{req{method: "GET", path: "/v1/visibility/scans/scn_x/answers?q=%00"}, "q"},
			{req{method: "GET", path: "/v1/domains?cursor=%00"}, "cursor"},
			{req{method: "GET", path: "/v1/visibility?domain=example.com%00"}, "domain"},
			{req{method: "GET", path: "/v1/visibility/history?domain=example.com&client_id=%1B"}, "client_id"},
			{req{method: "GET", path: "/v1/events?event=%FF"}, "event"},
			{req{method: "GET", path: "/v1/domains/%00"}, "id"},
			{req{method: "DELETE", path: "/v1/webhooks/wh_%07"}, "id"},
			{req{method: "GET", path: crPath + "?status=%00", header: kh}, "status"},
			{req{method: "GET", path: crPath + "/cr_%00", header: kh}, "id"},
		} {
			if c.r.header == nil {
				c.r.header = h
			}
			refused(t, s, c.r, c.field)
		}
		if got := s.do(t, req{method: "GET", path: dom, header: h}).Body; string(got) != string(before) {
			t.Errorf("the domain changed:\n%s\n%s", before, got)
		}
		if got := s.do(t, req{method: "GET", path: prompts, header: h}).Body; string(got) != string(promptsBefore) {
			t.Errorf("the prompts changed:\n%s\n%s", promptsBefore, got)
		}
		for _, table := range []string{"monitored_domains", "content_requests", "webhooks", "visibility_readings"} {
			want := map[string]int{"monitored_domains": 1}[table]
			if n := count("SELECT count(*) FROM " + table); n != want {
				t.Errorf("%d rows in %s, want %d", n, table, want)
			}
		}
		// Tab and line breaks are text, on either engine.
		r = s.do(t, req{method: "PUT", path: prompts, header: h, body: `{"prompts":[{"text":"tab\tand\r\nline"}]}`})
		if r.Status != 200 || !strings.Contains(string(r.Body), `tab\tand\r\nline`) {
			t.Errorf("a prompt with tab and line breaks: %d %s", r.Status, r.Body)
		}
	})
}

// TestDateTimesOfTheWrongKind: a date-time field given a number, an
// object, an array, a boolean or a string that is not an RFC 3339 time is
// 400 VALIDATION_ERROR naming it, as any other field of the wrong kind is,
// in a message that names nothing of Go, and nothing is recorded.
func TestDateTimesOfTheWrongKind(t *testing.T) {
	onEachStore(t, "starter", func(t *testing.T, s *server, k key, count func(string) int) {
		h := bearer(k)
		for _, v := range []string{`5`, `1.5`, `{}`, `{"time":"2026-01-02T15:04:05Z"}`, `[]`, `true`, `"yesterday"`, `""`,
			`"2026-01-02"`, `"2026-01-02T15:04:05"`} {
			refused(t, s, req{method: "POST", path: "/v1/visibility", header: h,
				body: `{"domain":"example.com","visibility_score":50,"sentiment":"positive","measured_at":` + v + `}`}, "measured_at")
			for _, target := range []string{"/v1/webhooks/wh_nosuch", "/v1/connections/con_nosuch"} {
				refused(t, s, req{method: "POST", path: target + "/replay", header: h, body: `{"since":` + v + `}`}, "since")
				refused(t, s, req{method: "POST", path: target + "/replay", header: h,
					body: `{"since":"2026-01-02T15:04:05Z","until":` + v + `}`}, "until")
			}
		}
		if n := count("SELECT count(*) FROM visibility_readings"); n != 0 {
			t.Errorf("%d readings recorded", n)
		}
		// A good time is taken, null is absent.
		at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
		r := s.do(t, req{method: "POST", path: "/v1/visibility", header: h,
			body: `{"domain":"example.com","visibility_score":50,"sentiment":"positive","measured_at":"` + at.Format(time.RFC3339) + `"}`})
		var rec client.RecordedReading
		r.decode(t, &rec)
		if r.Status != 201 || !rec.MeasuredAt.Equal(at) {
			t.Errorf("a reading measured at %s: %d %s", at, r.Status, r.Body)
		}
		if r := s.do(t, req{method: "POST", path: "/v1/visibility", header: h,
			body: `{"domain":"example.com","visibility_score":51,"sentiment":"positive","measured_at":null}`}); r.Status != 201 {
			t.Errorf("measured_at null: %d %s", r.Status, r.Body)
		}
	})
}

// TestNullAndEmptyBodies: a field sent as null is absent in every body: a
// create takes its default, a PATCH keeps the value (null clears nothing;
// within a connection's settings, a merge patch, null removes a setting).
// A PATCH that changes nothing, whether by nulls or by the values already
// kept, leaves updated_at as it was; one that changes something moves it.
// Every action that takes no required body (test, rotate-secret,
// redeliver, cancel) takes none, white space, or a JSON object, and
// refuses anything else alike: not JSON (400 INVALID_JSON), an unknown
// field (400 VALIDATION_ERROR), not declared JSON (415).
func TestNullAndEmptyBodies(t *testing.T) {
	dir := t.TempDir()
	cli(t, dir, nil, "plugin", "register", buildPlugin(t, "../../examples/partner-connector", "partner-connector"))
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	h, kh := bearer(k), keyed(k)
	s := start(t, dir, append([]string{"--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s"}, queueOnly...)...)
	rc, chat := newHookReceiver(t), newChatReceiver(t)

	// get reads a resource; same checks that a PATCH answered it
	// unchanged, updated_at included, and that it reads so after.
	get := func(path string) []byte {
		t.Helper()
		r := s.do(t, req{method: "GET", path: path, header: h})
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		return r.Body
	}
	same := func(path, body string) {
		t.Helper()
		before := get(path)
		r := s.do(t, req{method: "PATCH", path: path, header: h, body: body})
		if r.Status != 200 || !jsonEqual(r.Body, before) || !jsonEqual(get(path), before) {
			t.Errorf("PATCH %s %s changed it: %d\n%s\nwas\n%s", path, body, r.Status, r.Body, before)
		}
	}
	moved := func(path, body string) {
		t.Helper()
		var was, now struct {
			UpdatedAt time.Time `json:"updated_at"`
		}
		json.Unmarshal(get(path), &was)
		r := s.do(t, req{method: "PATCH", path: path, header: h, body: body})
		r.decode(t, &now)
		if r.Status != 200 || !now.UpdatedAt.After(was.UpdatedAt) {
			t.Errorf("PATCH %s %s: %d, updated_at %s, was %s", path, body, r.Status, now.UpdatedAt, was.UpdatedAt)
		}
	}

	// Webhooks.
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: h, body: `{"domain":"example.com","events":["ai_visibility_change","webhook_test"],` +
		`"url":"` + rc.URL + `/hook","min_score_change":null,"min_citation_change":null,"client_id":null}`})
	var wh client.Webhook
	r.decode(t, &wh)
	if r.Status != 201 || wh.MinScoreChange != 0 || wh.MinCitationChange != 10 || wh.ClientID != nil {
		t.Fatalf("a webhook with null fields: %d %s", r.Status, r.Body)
	}
	whPath := "/v1/webhooks/" + wh.ID
	same(whPath, `{"url":null,"events":null,"min_score_change":null,"min_citation_change":null,"enabled":null}`)
	same(whPath, jsonBody(map[string]any{"url": wh.URL, "events": wh.Events, "min_score_change": 0, "enabled": true}))
	moved(whPath, `{"min_score_change":7,"url":null}`)

	// Connections: null settings are absent; a null setting is removed.
	r = s.do(t, req{method: "POST", path: "/v1/connections", header: h, body: `{"connector":"partner-chat","events":["ai_visibility_change"],` +
		`"settings":{"webhook_url":"` + chat.URL + `"},"name":null,"domains":null,"min_score_change":null,"client_id":null}`})
	var con client.Connection
	r.decode(t, &con)
	if r.Status != 201 || con.Name == "" || len(con.Domains) != 0 || con.MinCitationChange != 10 {
		t.Fatalf("a connection with null fields: %d %s", r.Status, r.Body)
	}
	conPath := "/v1/connections/" + con.ID
	same(conPath, `{"settings":null,"name":null,"events":null,"domains":null,"min_score_change":null,"enabled":null}`)
	same(conPath, jsonBody(map[string]any{"name": con.Name, "events": con.Events, "domains": []string{}, "settings": map[string]any{}}))
	moved(conPath, `{"name":"Renamed","settings":null}`)

	// Domains.
	r = s.do(t, req{method: "POST", path: "/v1/domains", header: h, body: `{"domain":"example.com","brands":null,"topics":null,"client_id":null}`})
	var d client.MonitoredDomain
	r.decode(t, &d)
	if r.Status != 201 || len(d.Brands) == 0 {
		t.Fatalf("a domain with null fields: %d %s", r.Status, r.Body)
	}
	domPath := "/v1/domains/" + d.ID
	same(domPath, `{"brands":null,"aliases":null,"competitors":null,"topics":null,"prompts":null}`)
	same(domPath, jsonBody(map[string]any{"brands": d.Brands, "topics": d.Topics, "prompts": []string{}}))
	moved(domPath, `{"competitors":["rival.example"],"brands":null}`)

	// Readings, content requests, scans, replays.
	for _, c := range []req{
		{method: "POST", path: "/v1/visibility", header: h,
			body: `{"domain":"example.com","visibility_score":50,"sentiment":"positive","sentiment_score":null,"measured_at":null,"client_id":null}`},
		{method: "POST", path: crPath, header: kh, body: `{"domain":"example.com","budget":5,"url":null,"content":null,"target_queries":null,` +
			`"type":null,"client_id":null,"metadata":null}`},
		{method: "POST", path: "/v1/visibility/scans", header: h, body: `{"domain":"example.com","client_id":null}`},
		{method: "POST", path: whPath + "/replay", header: h, body: `{"since":"2026-01-01T00:00:00Z","until":null}`},
		{method: "POST", path: whPath + "/rotate-secret", header: h, body: `{"grace_period":null}`},
	} {
		if r := s.do(t, c); r.Status/100 != 2 {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, r.Status, r.Body)
		}
	}
	var rot client.Webhook
	s.do(t, req{method: "POST", path: whPath + "/rotate-secret", header: h, body: `{"grace_period":null}`}).decode(t, &rot)
	if rot.PreviousSecretExpiresAt == nil || time.Until(*rot.PreviousSecretExpiresAt) < 23*time.Hour {
		t.Errorf("rotate-secret with grace_period null: the old secret ends at %v, want the default of 24 hours", rot.PreviousSecretExpiresAt)
	}
	if r := s.do(t, req{method: "POST", path: crPath, header: kh, body: `{"domain":"example.com","budget":null}`}); r.Status != 400 ||
		!strings.Contains(string(r.Body), `"field":"budget"`) {
		t.Errorf("a content request with budget null: %d %s; want budget required", r.Status, r.Body)
	}

	// The actions without a required body. The delivery of the webhook's
	// test event is redelivered.
	var test client.WebhookTestResult
	s.do(t, req{method: "POST", path: whPath + "/test", header: h}).decode(t, &test)
	waitFor(t, "the test event delivered", func() bool { return rc.got(test.EventID) })
	var deliveryID string
	waitFor(t, "its delivery succeeded", func() bool {
		var page client.List[client.Delivery]
		s.do(t, req{method: "GET", path: whPath + "/deliveries?status=succeeded", header: h}).decode(t, &page)
		for _, dl := range page.Items {
			if dl.EventID == test.EventID {
				deliveryID = dl.ID
			}
		}
		return deliveryID != ""
	})
	succeeded := func() bool {
		var dl client.Delivery
		s.do(t, req{method: "GET", path: whPath + "/deliveries/" + deliveryID, header: h}).decode(t, &dl)
		return dl.Status == "succeeded"
	}
	var crs []string
	for range 3 {
		cr, _ := create(t, s, kh, `{"domain":"example.com","budget":1}`)
		crs = append(crs, cr.ID)
	}
	actions := []struct {
		name   string
		path   func(int) string
		header map[string]string
		ok     int
		after  func() // what must hold before the action is taken again
	}{
		{"webhook test", func(int) string { return whPath + "/test" }, h, 202, nil},
		{"rotate-secret", func(int) string { return whPath + "/rotate-secret" }, h, 200, nil},
		{"webhook redeliver", func(int) string { return whPath + "/deliveries/" + deliveryID + "/redeliver" }, h, 202,
			func() { waitFor(t, "the delivery redelivered", succeeded) }},
		{"connection test", func(int) string { return conPath + "/test" }, h, 200, nil},
		{"connection redeliver", func(int) string { return conPath + "/deliveries/dlv_nosuch/redeliver" }, h, 404, nil},
		{"cancel", func(i int) string { return crPath + "/" + crs[i] + "/cancel" }, kh, 200, nil},
	}
	for _, act := range actions {
		for _, bad := range []struct {
			body, contentType string
			status            int
			code              string
		}{
			{"garbage", "application/json", 400, "INVALID_JSON"},
			{"null", "application/json", 400, "INVALID_JSON"},
			{"[]", "application/json", 400, "INVALID_JSON"},
			{`{"reason":"x"}`, "application/json", 400, "VALIDATION_ERROR"},
			{"{}", "text/plain", 415, "UNSUPPORTED_MEDIA_TYPE"},
		} {
			r := s.do(t, req{method: "POST", path: act.path(0), header: with(act.header, "Content-Type", bad.contentType), body: bad.body})
			if r.Status != bad.status || r.errorCode(t) != bad.code {
				t.Errorf("%s with %q (%s): %d %s; want %d %s", act.name, bad.body, bad.contentType, r.Status, r.Body, bad.status, bad.code)
			}
		}
		for i, good := range []req{{body: "{}"}, {}, {body: " \r\n", header: map[string]string{"Content-Type": ""}}} {
			hd := act.header
			if good.header != nil {
				hd = with(act.header, "Content-Type", "")
			}
			if r := s.do(t, req{method: "POST", path: act.path(i), header: hd, body: good.body}); r.Status != act.ok {
				t.Errorf("%s with %q: %d %s; want %d", act.name, good.body, r.Status, r.Body, act.ok)
			}
			if act.after != nil {
				act.after()
			}
		}
	}
}

// jsonEqual reports whether two JSON documents hold the same values.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
