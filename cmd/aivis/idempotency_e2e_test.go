package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/zapier/zapierfake"
)

// TestEveryPOSTIsIdempotent walks every POST of openapi.json through aivis
// serve with an Idempotency-Key: the first answer is 2xx; the same
// request again gets the same status and body with Idempotent-Replayed:
// true, having acted once (a creation's replay names the same id, and a
// second domain or scan would have been refused); another request with the
// key is 409 IDEMPOTENCY_CONFLICT; the same request with the key of another
// client acts anew. A POST of the document the walk does not make fails
// the test.
func TestEveryPOSTIsIdempotent(t *testing.T) {
	dir, cfg := everyOperationDir(t)
	a := newAccount(t, dir, "enterprise", true)
	k := newKey(t, dir, a.ID)
	var cl struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client")
	ck := newKey(t, dir, a.ID, "--client", cl.ID)
	s := start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets",
		"--webhook-timeout", "3s", "--content-workers", "0")
	zap := zapierfake.New()
	defer zap.Close()
	hooks := newRecorder(t)

	walked := map[string]bool{}
	// once sends the request twice with a key, then another request with
	// it, and returns the first answer's body.
	once := func(template, path string, h map[string]string, body, other string) []byte {
		t.Helper()
		walked["POST "+template] = true
		key := "key-" + strings.ReplaceAll(path, "/", "-")
		first := s.do(t, req{method: "POST", path: path, header: with(h, "Idempotency-Key", key), body: body})
		if first.Status < 200 || first.Status > 299 || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("POST %s: %d %s %s", path, first.Status, first.Header, first.Body)
		}
		again := s.do(t, req{method: "POST", path: path, header: with(h, "Idempotency-Key", key), body: body})
		if again.Status != first.Status || string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("POST %s again: %d %s %s\nwant %d %s", path, again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, first.Status, first.Body)
		}
		conflict := s.do(t, req{method: "POST", path: path, header: with(h, "Idempotency-Key", key), body: other})
		if conflict.Status != 409 || conflict.errorCode(t) != "IDEMPOTENCY_CONFLICT" {
			t.Errorf("POST %s with another body %s: %d %s", path, other, conflict.Status, conflict.Body)
		}
		return first.Body
	}
	id := func(b []byte) string {
		t.Helper()
		var v struct {
			ID   string `json:"id"`
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &v); err != nil || v.ID+v.Data.ID == "" {
			t.Fatalf("no id in %s: %v", b, err)
		}
		return v.ID + v.Data.ID
	}
	bh := bearer(k)

	dom := id(once("/v1/domains", "/v1/domains", bh, `{"domain":"acme.invalid"}`, `{"domain":"other.invalid"}`))
	// The same request with the client's key is the client's own: a domain
	// of its own, made anew.
	if r := s.do(t, req{method: "POST", path: "/v1/domains", header: with(bearer(ck), "Idempotency-Key", "key--v1-domains"),
		body: `{"domain":"acme.invalid"}`}); r.Status != 201 || id(r.Body) == dom || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the client's key: %d %s", r.Status, r.Body)
	}
	// Sent at once, the same request with one key acts once: the store
	// holds the key for the first, the others are replayed or told that it
	// still runs.
	results := make(chan resp, 6)
	for range cap(results) {
		go func() {
			results <- s.do(t, req{method: "POST", path: "/v1/domains", header: with(bh, "Idempotency-Key", "at-once"), body: `{"domain":"once.invalid"}`})
		}()
	}
	acted := 0
	for range cap(results) {
		r := <-results
		switch {
		case r.Status == 201 && r.Header.Get("Idempotent-Replayed") == "":
			acted++
		case r.Status == 201 || r.Status == 409 && r.errorCode(t) == "IDEMPOTENCY_CONFLICT":
		default:
			t.Errorf("at once: %d %s", r.Status, r.Body)
		}
	}
	if acted != 1 {
		t.Errorf("at once, %d requests acted", acted)
	}
	once("/v1/domains/{id}/ingest-tokens", "/v1/domains/"+dom+"/ingest-tokens", bh, `{"name":"edge","source":"cloudflare"}`,
		`{"name":"edge","source":"fastly"}`)
	logLine := func(page string) string {
		return `52.230.152.7 - - [28/Nov/2026:09:00:00 +0000] "GET ` + page + ` HTTP/1.1" 200 10 "-" "GPTBot/1.3"` + "\n"
	}
	once("/v1/domains/{id}/traffic/logs", "/v1/domains/"+dom+"/traffic/logs", with(bh, "Content-Type", "text/plain"), logLine("/a"), logLine("/b"))
	once("/v1/domains/{id}/changes", "/v1/domains/"+dom+"/changes", bh, `{"title":"FAQ markup"}`, `{"title":"New pricing page"}`)
	once("/v1/visibility", "/v1/visibility", bh, `{"domain":"acme.invalid","visibility_score":40,"sentiment":"neutral"}`,
		`{"domain":"acme.invalid","visibility_score":41,"sentiment":"neutral"}`)
	scan := id(once("/v1/visibility/scans", "/v1/visibility/scans", bh, `{"domain":"acme.invalid"}`, `{"domain":"other.invalid"}`))

	wh := id(once("/v1/webhooks", "/v1/webhooks", bh, `{"domain":"acme.invalid","events":["ai_visibility_change"],"url":"`+hooks.URL+`/hook"}`,
		`{"domain":"acme.invalid","events":["scan_completed"],"url":"`+hooks.URL+`/hook"}`))
	once("/v1/webhooks/{id}/rotate-secret", "/v1/webhooks/"+wh+"/rotate-secret", bh, `{"grace_period":60}`, `{"grace_period":0}`)
	once("/v1/webhooks/{id}/test", "/v1/webhooks/"+wh+"/test", bh, "", `{}`)
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	once("/v1/webhooks/{id}/replay", "/v1/webhooks/"+wh+"/replay", bh, `{"since":"`+since+`"}`, `{"since":"2026-01-01T00:00:00Z"}`)
	dl := firstDelivery(t, s, "/v1/webhooks/"+wh+"/deliveries", bh)
	once("/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", "/v1/webhooks/"+wh+"/deliveries/"+dl+"/redeliver", bh, "", `{}`)

	sub := id(once("/v1/zapier/hooks", "/v1/zapier/hooks", bh, `{"target_url":"`+zap.Hook("standard", "1")+`","event":"ai_visibility_change"}`,
		`{"target_url":"`+zap.Hook("standard", "1")+`","event":"scan_completed"}`))
	conn := id(once("/v1/connections", "/v1/connections", bh,
		`{"connector":"zapier","name":"Zap","events":["ai_visibility_change"],"settings":{"target_url":"`+zap.Hook("standard", "2")+`"}}`,
		`{"connector":"zapier","name":"Zap 2","events":["ai_visibility_change"],"settings":{"target_url":"`+zap.Hook("standard", "2")+`"}}`))
	once("/v1/connections/{id}/test", "/v1/connections/"+conn+"/test", bh, "", `{}`)
	once("/v1/connections/{id}/replay", "/v1/connections/"+conn+"/replay", bh, `{"since":"`+since+`"}`, `{"since":"2026-01-01T00:00:00Z"}`)
	cdl := firstDelivery(t, s, "/v1/connections/"+sub+"/deliveries", bh)
	once("/v1/connections/{id}/deliveries/{delivery_id}/redeliver", "/v1/connections/"+sub+"/deliveries/"+cdl+"/redeliver", bh, "", `{}`)

	cr := id(once("/api/v1/ai/content-requests", "/api/v1/ai/content-requests", keyed(k),
		`{"domain":"acme.invalid","budget":1,"type":"analyze","content":"# Skates\n\nRocket skates."}`,
		`{"domain":"acme.invalid","budget":2,"type":"analyze","content":"# Skates\n\nRocket skates."}`))
	once("/api/v1/ai/content-requests/{id}/cancel", "/api/v1/ai/content-requests/"+cr+"/cancel", keyed(k), "", `{}`)

	waitFor(t, "the scan completed", func() bool {
		var sc struct{ Status string }
		s.do(t, req{method: "GET", path: "/v1/visibility/scans/" + scan, header: bh}).decode(t, &sc)
		return sc.Status == "completed"
	})
	// What acted once: the account's two domains and the client's, one webhook,
	// one connection besides the subscription, and two readings of the
	// account's domain: the one recorded and the scan's.
	for list, want := range map[string]int{"/v1/domains": 3, "/v1/webhooks": 1, "/v1/connections": 2,
		"/v1/visibility/history?domain=acme.invalid": 2} {
		var page struct{ Items []json.RawMessage }
		s.do(t, req{method: "GET", path: list, header: bh}).decode(t, &page)
		if len(page.Items) != want {
			t.Errorf("%s: %d items, want %d", list, len(page.Items), want)
		}
	}

	// A content request's result marked published needs a completed one:
	// the server again, with a content worker.
	s.stop()
	s = start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets",
		"--webhook-timeout", "3s", "--content-workers", "1")
	done := id(s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(k),
		body: `{"domain":"acme.invalid","budget":1,"type":"analyze","content":"# Skates\n\nRocket skates reach 40 km/h."}`}).Body)
	waitFor(t, "the analysis completed", func() bool {
		var cr struct{ Data struct{ Status string } }
		s.do(t, req{method: "GET", path: "/api/v1/ai/content-requests/" + done, header: keyed(k)}).decode(t, &cr)
		return cr.Data.Status == "completed"
	})
	once("/api/v1/ai/content-requests/{id}/published", "/api/v1/ai/content-requests/"+done+"/published", keyed(k),
		`{"url":"https://acme.invalid/skates"}`, `{"url":"https://acme.invalid/pricing"}`)

	// Every POST of the document was walked.
	if err := loadOpenAPI(); err != nil {
		t.Fatal(err)
	}
	var missed []string
	for path, item := range openapi.doc["paths"].(map[string]any) {
		// The ingest endpoints take no key: a batch is kept once per
		// content, however often it comes (TestTrafficIngest).
		if _, ok := item.(map[string]any)["post"]; ok && !walked["POST "+path] && !strings.HasPrefix(path, "/ingest/") {
			missed = append(missed, path)
		}
	}
	slices.Sort(missed)
	if len(missed) > 0 || len(walked) < 15 {
		t.Errorf("POSTs not walked: %v (walked %d)", missed, len(walked))
	}
}

// firstDelivery waits for a delivery of a webhook or connection whose
// attempts ended (one that may be redelivered) and returns its id.
func firstDelivery(t *testing.T, s *server, list string, h map[string]string) string {
	t.Helper()
	var id string
	waitFor(t, "a delivery of "+list, func() bool {
		var page struct {
			Items []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
		}
		s.do(t, req{method: "GET", path: list, header: h}).decode(t, &page)
		for _, d := range page.Items {
			if d.Status != "pending" {
				id = d.ID
			}
		}
		return id != ""
	})
	return id
}
