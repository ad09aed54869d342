package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/connectors/zapier/zapierfake"
	"github.com/aivis/aivis/internal/sqlitefile"
)

// TestEveryPOSTIsIdempotent walks every POST of openapi.json through aivis
// serve with an Idempotency-Key: the first answer is 2xx; the same
// request again gets the same status and body with Idempotent-Replayed:
// true, having acted once (a creation's replay names the same id, and a
// second domain or scan would have been refused); another request with the
// key is 409 IDEMPOTENCY_CONFLICT; the same request with the key of another
// client acts anew. A POST of the document the walk does not make fails
// the test.
//
// Each POST under /v1 (and a result marked published) is then made once
// more by a server that stops between acting and keeping its answer: a
// trigger on the data file refuses the keeping of an answer for keys
// crash-*, so the request acts, answers 2xx and keeps nothing; its key,
// made 3 minutes old (its holder gone), is IDEMPOTENCY_CONFLICT to the
// retry, which says it was carried out and does not act again: the mark
// committed with the action.
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

	data, err := sql.Open("sqlite3", sqlitefile.DSN(filepath.Join(dir, "aivis.db"), sqlitefile.Params()))
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	exec := func(q string, args ...any) int64 {
		t.Helper()
		res, err := data.Exec(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n, _ := res.RowsAffected()
		return n
	}
	stopping := func() {
		exec(`CREATE TRIGGER stops_before_keeping BEFORE UPDATE ON idempotency_keys
			WHEN NEW.key LIKE 'crash-%' AND NEW.status >= 200
			BEGIN SELECT RAISE(ABORT, 'the server stopped before keeping the answer'); END`)
	}
	stopping()
	crashed := map[string]bool{}
	// crash sends a request with a key crash-*, which acts and keeps no
	// answer, makes its key 3 minutes old, and retries it: a conflict that
	// says it was carried out.
	crash := func(template, path string, h map[string]string, body string) {
		t.Helper()
		crashed["POST "+template] = true
		key := "crash-" + strings.ReplaceAll(path, "/", "-")
		r := s.do(t, req{method: "POST", path: path, header: with(h, "Idempotency-Key", key), body: body})
		if r.Status < 200 || r.Status > 299 {
			t.Fatalf("POST %s that acts and stops: %d %s", path, r.Status, r.Body)
		}
		var status int
		if err := data.QueryRow(`SELECT status FROM idempotency_keys WHERE key = ?`, key).Scan(&status); err != nil || status != 1 {
			t.Errorf("POST %s acted: its key's status %d, %v; want 1 (acted, committed with the action)", path, status, err)
		}
		if n := exec(`UPDATE idempotency_keys SET created_at = created_at - ? WHERE key = ?`, int64(3*time.Minute), key); n != 1 {
			t.Fatalf("POST %s: %d keys made older, want 1", path, n)
		}
		retry := s.do(t, req{method: "POST", path: path, header: with(h, "Idempotency-Key", key), body: body})
		if retry.Status != 409 || retry.errorCode(t) != "IDEMPOTENCY_CONFLICT" || !strings.Contains(string(retry.Body), "was carried out") {
			t.Errorf("POST %s retried after its server stopped: %d %s; want 409 IDEMPOTENCY_CONFLICT, carried out", path, retry.Status, retry.Body)
		}
	}
	// settled waits until a delivery's attempts ended: one that may be
	// redelivered again.
	settled := func(path string) {
		t.Helper()
		waitFor(t, path+" settled", func() bool {
			var d struct{ Status string }
			s.do(t, req{method: "GET", path: path, header: bearer(k)}).decode(t, &d)
			return d.Status != "" && d.Status != "pending"
		})
	}

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
	crash("/v1/domains", "/v1/domains", bh, `{"domain":"other.invalid"}`)
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
	crash("/v1/domains/{id}/ingest-tokens", "/v1/domains/"+dom+"/ingest-tokens", bh, `{"name":"edge","source":"cloudflare"}`)
	logLine := func(page string) string {
		return `52.230.152.7 - - [28/Nov/2026:09:00:00 +0000] "GET ` + page + ` HTTP/1.1" 200 10 "-" "GPTBot/1.3"` + "\n"
	}
	once("/v1/domains/{id}/traffic/logs", "/v1/domains/"+dom+"/traffic/logs", with(bh, "Content-Type", "text/plain"), logLine("/a"), logLine("/b"))
	// A batch is kept once per content: the one that stops is another.
	crash("/v1/domains/{id}/traffic/logs", "/v1/domains/"+dom+"/traffic/logs", with(bh, "Content-Type", "text/plain"), logLine("/c"))
	once("/v1/domains/{id}/changes", "/v1/domains/"+dom+"/changes", bh, `{"title":"FAQ markup"}`, `{"title":"New pricing page"}`)
	crash("/v1/domains/{id}/changes", "/v1/domains/"+dom+"/changes", bh, `{"title":"FAQ markup"}`)
	once("/v1/visibility", "/v1/visibility", bh, `{"domain":"acme.invalid","visibility_score":40,"sentiment":"neutral"}`,
		`{"domain":"acme.invalid","visibility_score":41,"sentiment":"neutral"}`)
	crash("/v1/visibility", "/v1/visibility", bh, `{"domain":"acme.invalid","visibility_score":42,"sentiment":"neutral"}`)
	scan := id(once("/v1/visibility/scans", "/v1/visibility/scans", bh, `{"domain":"acme.invalid"}`, `{"domain":"other.invalid"}`))
	// Of the other domain, whose scan's reading is not acme's.
	crash("/v1/visibility/scans", "/v1/visibility/scans", bh, `{"domain":"other.invalid"}`)

	wh := id(once("/v1/webhooks", "/v1/webhooks", bh, `{"domain":"acme.invalid","events":["ai_visibility_change"],"url":"`+hooks.URL+`/hook"}`,
		`{"domain":"acme.invalid","events":["scan_completed"],"url":"`+hooks.URL+`/hook"}`))
	crash("/v1/webhooks", "/v1/webhooks", bh, `{"domain":"acme.invalid","events":["scan_completed"],"url":"`+hooks.URL+`/hook"}`)
	once("/v1/webhooks/{id}/rotate-secret", "/v1/webhooks/"+wh+"/rotate-secret", bh, `{"grace_period":60}`, `{"grace_period":0}`)
	crash("/v1/webhooks/{id}/rotate-secret", "/v1/webhooks/"+wh+"/rotate-secret", bh, `{"grace_period":60}`)
	once("/v1/webhooks/{id}/test", "/v1/webhooks/"+wh+"/test", bh, "", `{}`)
	crash("/v1/webhooks/{id}/test", "/v1/webhooks/"+wh+"/test", bh, "")
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	once("/v1/webhooks/{id}/replay", "/v1/webhooks/"+wh+"/replay", bh, `{"since":"`+since+`"}`, `{"since":"2026-01-01T00:00:00Z"}`)
	crash("/v1/webhooks/{id}/replay", "/v1/webhooks/"+wh+"/replay", bh, `{"since":"`+since+`"}`)
	dl := firstDelivery(t, s, "/v1/webhooks/"+wh+"/deliveries", bh)
	once("/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", "/v1/webhooks/"+wh+"/deliveries/"+dl+"/redeliver", bh, "", `{}`)
	settled("/v1/webhooks/" + wh + "/deliveries/" + dl)
	crash("/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", "/v1/webhooks/"+wh+"/deliveries/"+dl+"/redeliver", bh, "")

	sub := id(once("/v1/zapier/hooks", "/v1/zapier/hooks", bh, `{"target_url":"`+zap.Hook("standard", "1")+`","event":"ai_visibility_change"}`,
		`{"target_url":"`+zap.Hook("standard", "1")+`","event":"scan_completed"}`))
	crash("/v1/zapier/hooks", "/v1/zapier/hooks", bh, `{"target_url":"`+zap.Hook("standard", "1")+`","event":"scan_completed"}`)
	conn := id(once("/v1/connections", "/v1/connections", bh,
		`{"connector":"zapier","name":"Zap","events":["ai_visibility_change"],"settings":{"target_url":"`+zap.Hook("standard", "2")+`"}}`,
		`{"connector":"zapier","name":"Zap 2","events":["ai_visibility_change"],"settings":{"target_url":"`+zap.Hook("standard", "2")+`"}}`))
	crash("/v1/connections", "/v1/connections", bh,
		`{"connector":"zapier","name":"Zap 2","events":["ai_visibility_change"],"settings":{"target_url":"`+zap.Hook("standard", "2")+`"}}`)
	once("/v1/connections/{id}/test", "/v1/connections/"+conn+"/test", bh, "", `{}`)
	crash("/v1/connections/{id}/test", "/v1/connections/"+conn+"/test", bh, "")
	once("/v1/connections/{id}/replay", "/v1/connections/"+conn+"/replay", bh, `{"since":"`+since+`"}`, `{"since":"2026-01-01T00:00:00Z"}`)
	crash("/v1/connections/{id}/replay", "/v1/connections/"+conn+"/replay", bh, `{"since":"`+since+`"}`)
	cdl := firstDelivery(t, s, "/v1/connections/"+sub+"/deliveries", bh)
	once("/v1/connections/{id}/deliveries/{delivery_id}/redeliver", "/v1/connections/"+sub+"/deliveries/"+cdl+"/redeliver", bh, "", `{}`)
	settled("/v1/connections/" + sub + "/deliveries/" + cdl)
	crash("/v1/connections/{id}/deliveries/{delivery_id}/redeliver", "/v1/connections/"+sub+"/deliveries/"+cdl+"/redeliver", bh, "")

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
	// account's domain: the one recorded and the scan's; and once more each
	// what a stopping server made: a domain, a webhook, a subscription and
	// a connection, and a reading of the account's domain.
	for list, want := range map[string]int{"/v1/domains": 3 + 1, "/v1/webhooks": 1 + 1, "/v1/connections": 2 + 2,
		"/v1/visibility/history?domain=acme.invalid": 2 + 1} {
		var page struct{ Items []json.RawMessage }
		s.do(t, req{method: "GET", path: list, header: bh}).decode(t, &page)
		if len(page.Items) != want {
			t.Errorf("%s: %d items, want %d", list, len(page.Items), want)
		}
	}

	// A content request's result marked published needs a completed one
	// (two: a result marked again makes no change, so the one whose
	// server stops is another): the server again, with a content worker.
	// The trigger is no part of the schema the start checks.
	exec(`DROP TRIGGER stops_before_keeping`)
	s.stop()
	s = start(t, dir, "--config", cfg, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets",
		"--webhook-timeout", "3s", "--content-workers", "1")
	stopping()
	var completed []string
	for _, text := range []string{"Rocket skates reach 40 km/h.", "Rocket skates reach 50 km/h."} {
		completed = append(completed, id(s.do(t, req{method: "POST", path: "/api/v1/ai/content-requests", header: keyed(k),
			body: `{"domain":"acme.invalid","budget":1,"type":"analyze","content":"# Skates\n\n` + text + `"}`}).Body))
	}
	for _, cr := range completed {
		waitFor(t, "the analysis completed", func() bool {
			var got struct{ Data struct{ Status string } }
			s.do(t, req{method: "GET", path: "/api/v1/ai/content-requests/" + cr, header: keyed(k)}).decode(t, &got)
			return got.Data.Status == "completed"
		})
	}
	done := completed[0]
	once("/api/v1/ai/content-requests/{id}/published", "/api/v1/ai/content-requests/"+done+"/published", keyed(k),
		`{"url":"https://acme.invalid/skates"}`, `{"url":"https://acme.invalid/pricing"}`)
	crash("/api/v1/ai/content-requests/{id}/published", "/api/v1/ai/content-requests/"+completed[1]+"/published", keyed(k),
		`{"url":"https://acme.invalid/skates"}`)

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
	// Every POST walked but /api/v1/ai's own (whose key commits with the
	// request, core/content) was made by a server that stopped.
	for op := range walked {
		if !crashed[op] && op != "POST /api/v1/ai/content-requests" && op != "POST /api/v1/ai/content-requests/{id}/cancel" {
			t.Errorf("%s not made by a server that stops between acting and keeping its answer", op)
		}
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
