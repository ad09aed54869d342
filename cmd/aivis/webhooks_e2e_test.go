package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/webhook"
)

// hookReceiver is a local endpoint that verifies deliveries with the
// secret it is given and records them.
type hookReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	secrets []string
	events  []webhook.Event
	ids     map[string]int
	invalid int
	status  int // the answer; 0 means 200
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{ids: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		var ev webhook.Event
		json.Unmarshal(body, &ev)
		if len(h.secrets) > 0 {
			v, err := webhook.NewVerifier(h.secrets...)
			if err != nil || v.Verify(r.Header, body) != nil {
				h.invalid++
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		if h.status != 0 && ev.Event != "webhook_test" {
			w.WriteHeader(h.status)
			return
		}
		h.ids[r.Header.Get("webhook-id")]++
		h.events = append(h.events, ev)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) kinds() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		out = append(out, ev.Event)
	}
	return out
}

// got reports whether an event was delivered (webhook-id is its id).
func (h *hookReceiver) got(eventID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids[eventID] > 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	pollEvery(t, 15*time.Second, 20*time.Millisecond, what, cond)
}

// waitLong is waitFor with a deadline of its own, asking every 100 ms:
// within the tiers' rate limits when cond asks the API.
func waitLong(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	pollEvery(t, within, 100*time.Millisecond, what, cond)
}

// pollEvery asks cond every interval until it holds, and fails the test
// if it does not within.
func pollEvery(t *testing.T, within, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(every)
	}
}

// recordEvent records a reading that changes the score and returns its
// event's id.
func recordEvent(t *testing.T, s *server, k key, body string) string {
	t.Helper()
	var rec client.RecordedReading
	r := s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: body})
	r.decode(t, &rec)
	if r.Status != 201 || rec.EventID == nil {
		t.Fatalf("record %s: %d %s", body, r.Status, r.Body)
	}
	return *rec.EventID
}

// fannedOut waits until the fan-out has handled an event: it logs the
// event (GET /v1/events) in the transaction that adds the event's
// deliveries, so from then on the deliveries it made are all listed.
func fannedOut(t *testing.T, s *server, k key, eventID string) {
	t.Helper()
	waitFor(t, "event "+eventID+" handled by the fan-out", func() bool {
		return strings.Contains(string(s.do(t, req{method: "GET", path: "/v1/events?limit=100", header: bearer(k)}).Body), `"id":"`+eventID+`"`)
	})
}

// deliveredTo reports whether a webhook has a delivery of an event.
func deliveredTo(t *testing.T, s *server, k key, webhookID, eventID string) bool {
	t.Helper()
	var page client.List[client.Delivery]
	s.do(t, req{method: "GET", path: "/v1/webhooks/" + webhookID + "/deliveries?limit=100", header: bearer(k)}).decode(t, &page)
	for _, d := range page.Items {
		if d.EventID == eventID {
			return true
		}
	}
	return false
}

func jsonBody(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestWebhooksEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "enterprise", true)
	k := newKey(t, dir, a.ID)
	var cl struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client One")
	ck := newKey(t, dir, a.ID, "--client", cl.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets", "--webhook-timeout", "3s")

	rc := newHookReceiver(t)
	// Setup: the test payload is sent and answered 200; the secret is shown once.
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: jsonBody(client.CreateWebhook{Domain: "Example.COM", Events: []string{"ai_visibility_change", "webhook_test"}, URL: rc.URL + "/hook"})})
	var wh client.Webhook
	r.decode(t, &wh)
	if r.Status != 201 || !strings.HasPrefix(wh.Secret, "whsec_") || wh.Domain != "example.com" || r.Header.Get("Location") != "/v1/webhooks/"+wh.ID {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if got := rc.kinds(); len(got) != 1 || got[0] != "webhook_test" {
		t.Fatalf("the setup test payload: %v", got)
	}
	rc.mu.Lock()
	rc.secrets = []string{wh.Secret}
	rc.mu.Unlock()
	// The secret is stored sealed under the master key, never in clear.
	for _, name := range []string{"aivis.db", "aivis.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil && bytes.Contains(b, []byte(strings.TrimPrefix(wh.Secret, "whsec_"))) {
			t.Errorf("%s holds the webhook secret in clear", name)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "master.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("master key file: %v %v", st, err)
	}
	r = s.do(t, req{method: "GET", path: "/v1/webhooks/" + wh.ID, header: bearer(k)})
	if r.Status != 200 || strings.Contains(string(r.Body), "whsec_") {
		t.Fatalf("get shows the secret or fails: %d %s", r.Status, r.Body)
	}

	// A reading that changes the score is delivered, signed.
	score := func(n int) string {
		return fmt.Sprintf(`{"domain":"example.com","visibility_score":%d,"sentiment":"positive"}`, n)
	}
	r = s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: score(40)})
	var rec client.RecordedReading
	r.decode(t, &rec)
	if r.Status != 201 || !rec.Changed || rec.EventID == nil {
		t.Fatalf("record: %d %s", r.Status, r.Body)
	}
	waitFor(t, "the first reading delivered", func() bool { return len(rc.kinds()) == 2 })
	r = s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: score(40)})
	r.decode(t, &rec)
	if rec.Changed || rec.EventID != nil {
		t.Fatalf("an unchanged reading: %s", r.Body)
	}
	r = s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: bearer(k)})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"visibility_score":40`) {
		t.Fatalf("read back: %d %s", r.Status, r.Body)
	}

	// The deliveries and the attempts of one.
	r = s.do(t, req{method: "GET", path: "/v1/webhooks/" + wh.ID + "/deliveries", header: bearer(k)})
	var page client.List[client.Delivery]
	r.decode(t, &page)
	if r.Status != 200 || len(page.Items) != 2 {
		t.Fatalf("deliveries: %d %s", r.Status, r.Body)
	}
	var change client.Delivery
	waitFor(t, "the delivery recorded as succeeded", func() bool {
		r = s.do(t, req{method: "GET", path: "/v1/webhooks/" + wh.ID + "/deliveries/" + page.Items[0].ID, header: bearer(k)})
		r.decode(t, &change)
		return change.Status == "succeeded"
	})
	if len(change.AttemptLog) != 1 || change.AttemptLog[0].StatusCode == nil || *change.AttemptLog[0].StatusCode != 200 {
		t.Fatalf("attempt log: %s", r.Body)
	}

	// Redeliver: the same webhook-id again.
	r = s.do(t, req{method: "POST", path: "/v1/webhooks/" + wh.ID + "/deliveries/" + change.ID + "/redeliver", header: bearer(k)})
	if r.Status != 202 {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	waitFor(t, "redelivered with the same id", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.ids[change.EventID] == 2
	})

	// Send a test event; rotate the secret: both sign during the grace period.
	r = s.do(t, req{method: "POST", path: "/v1/webhooks/" + wh.ID + "/test", header: bearer(k)})
	if r.Status != 202 {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	waitFor(t, "the test event", func() bool { return len(rc.kinds()) == 4 })
	r = s.do(t, req{method: "POST", path: "/v1/webhooks/" + wh.ID + "/rotate-secret", header: bearer(k), body: `{"grace_period": 3600}`})
	var rotated client.Webhook
	r.decode(t, &rotated)
	if r.Status != 200 || rotated.Secret == wh.Secret || rotated.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: score(60)})
	waitFor(t, "delivered under the old secret", func() bool { return len(rc.kinds()) == 5 })
	rc.mu.Lock()
	rc.secrets = []string{rotated.Secret}
	rc.mu.Unlock()
	s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: score(70)})
	waitFor(t, "delivered under the new secret", func() bool { return len(rc.kinds()) == 6 })

	// min_score_change: a 5-point move is below 10.
	r = s.do(t, req{method: "PATCH", path: "/v1/webhooks/" + wh.ID, header: bearer(k), body: `{"min_score_change": 10}`})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"min_score_change":10`) {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	small := recordEvent(t, s, k, score(75))
	big := recordEvent(t, s, k, score(95))
	waitFor(t, "the 20-point change", func() bool { return rc.got(big) })
	fannedOut(t, s, k, small)
	if deliveredTo(t, s, k, wh.ID, small) || len(rc.kinds()) != 7 {
		t.Fatalf("the 5-point change %s was sent (%d deliveries)", small, len(rc.kinds()))
	}

	// Failures, then replay of the failed range once the endpoint is back.
	r = s.do(t, req{method: "POST", path: "/v1/webhooks/" + wh.ID + "/replay", header: bearer(k), body: `{"since":"2020-01-01T00:00:00Z"}`})
	if r.Status != 202 || !strings.Contains(string(r.Body), `"scheduled":0`) {
		t.Fatalf("replay with nothing failed: %d %s", r.Status, r.Body)
	}

	// An agency client's events reach only the client's webhooks.
	crc := newHookReceiver(t)
	r = s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(ck),
		body: jsonBody(client.CreateWebhook{Domain: "example.com", Events: []string{"ai_visibility_change"}, URL: crc.URL})})
	var cwh client.Webhook
	r.decode(t, &cwh)
	if r.Status != 201 || cwh.ClientID == nil || *cwh.ClientID != cl.ID {
		t.Fatalf("client webhook: %d %s", r.Status, r.Body)
	}
	clientEvent := recordEvent(t, s, ck, score(10))
	waitFor(t, "the client's event at the client's webhook", func() bool { return crc.got(clientEvent) })
	fannedOut(t, s, k, clientEvent)
	if deliveredTo(t, s, k, wh.ID, clientEvent) || len(rc.kinds()) != 7 {
		t.Fatalf("the account's webhook got the client's event %s (%d deliveries)", clientEvent, len(rc.kinds()))
	}
	r = s.do(t, req{method: "GET", path: "/v1/webhooks/" + wh.ID, header: bearer(ck)})
	if r.Status != 404 {
		t.Fatalf("a client key read the account's webhook: %d", r.Status)
	}
	r = s.do(t, req{method: "GET", path: "/v1/webhooks?client_id=*", header: bearer(k)})
	r.decode(t, &page)
	if r.Status != 200 || !strings.Contains(string(r.Body), cwh.ID) || !strings.Contains(string(r.Body), wh.ID) {
		t.Fatalf("list all: %d %s", r.Status, r.Body)
	}

	// Delete.
	r = s.do(t, req{method: "DELETE", path: "/v1/webhooks/" + wh.ID, header: bearer(k)})
	if r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	// It is kept, disabled and no longer listed, with its deliveries, until
	// they age out; it can no longer be changed.
	var gone client.Webhook
	if r := s.do(t, req{method: "GET", path: "/v1/webhooks/" + wh.ID, header: bearer(k)}); r.Status != 200 {
		t.Fatalf("after delete: %d %s", r.Status, r.Body)
	} else if r.decode(t, &gone); gone.DeletedAt == nil || gone.Enabled || gone.DisabledReason == nil {
		t.Fatalf("after delete: %s", r.Body)
	}
	var log client.List[client.Delivery]
	if r := s.do(t, req{method: "GET", path: "/v1/webhooks/" + wh.ID + "/deliveries", header: bearer(k)}); r.Status != 200 {
		t.Fatalf("its deliveries after delete: %d %s", r.Status, r.Body)
	} else if r.decode(t, &log); len(log.Items) == 0 {
		t.Fatalf("its deliveries after delete: %s", r.Body)
	}
	if r := s.do(t, req{method: "PATCH", path: "/v1/webhooks/" + wh.ID, header: bearer(k), body: `{"enabled":true}`}); r.Status != 404 {
		t.Fatalf("enabling it after delete: %d", r.Status)
	}
	if r := s.do(t, req{method: "GET", path: "/v1/webhooks?client_id=*", header: bearer(k)}); strings.Contains(string(r.Body), wh.ID) {
		t.Fatalf("listed after delete: %s", r.Body)
	}
	rc.mu.Lock()
	invalid := rc.invalid
	rc.mu.Unlock()
	if invalid != 0 {
		t.Errorf("%d deliveries failed signature verification", invalid)
	}
}

func TestWebhookSetupRefusals(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	ro := newKey(t, dir, a.ID, "--scopes", "visibility:read,webhooks:read")
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32")
	rc := newHookReceiver(t)

	for _, tc := range []struct {
		name, body, code, field string
		status                  int
	}{
		{"no events", `{"domain":"example.com","events":[],"url":"https://hooks.example.com/x"}`, "VALIDATION_ERROR", "events", 400},
		{"unknown event kind", `{"domain":"example.com","events":["nope"],"url":"https://hooks.example.com/x"}`, "VALIDATION_ERROR", "events[0]", 400},
		{"bad domain", `{"domain":"http://example.com","events":["ai_visibility_change"],"url":"https://hooks.example.com/x"}`, "VALIDATION_ERROR", "domain", 400},
		{"bad url", `{"domain":"example.com","events":["ai_visibility_change"],"url":"not a url"}`, "VALIDATION_ERROR", "url", 400},
		{"plain http", `{"domain":"example.com","events":["ai_visibility_change"],"url":"` + rc.URL + `"}`, "VALIDATION_ERROR", "url", 400},
		{"private address", `{"domain":"example.com","events":["ai_visibility_change"],"url":"https://10.0.0.7/hook"}`, "VALIDATION_ERROR", "url", 400},
		{"metadata address", `{"domain":"example.com","events":["ai_visibility_change"],"url":"https://169.254.169.254/latest"}`, "VALIDATION_ERROR", "url", 400},
		{"no url and no default", `{"domain":"example.com","events":["ai_visibility_change"]}`, "VALIDATION_ERROR", "url", 400},
		{"unknown field", `{"domain":"example.com","events":["ai_visibility_change"],"url":"https://hooks.example.com/x","secret":"mine"}`, "VALIDATION_ERROR", "secret", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k), body: tc.body})
			var e client.ErrorEnvelope
			r.decode(t, &e)
			if r.Status != tc.status || e.Error.Code != tc.code || len(e.Error.Details) == 0 || e.Error.Details[0].Field != tc.field {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(ro),
		body: `{"domain":"example.com","events":["ai_visibility_change"],"url":"https://hooks.example.com/x"}`})
	if r.Status != 403 || r.errorCode(t) != "INSUFFICIENT_SCOPE" {
		t.Fatalf("without webhooks:write: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "GET", path: "/v1/webhooks", header: bearer(ro)})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"items":[]`) {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
}

func TestWebhookVerificationFailure(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "professional", false)
	k := newKey(t, dir, a.ID)
	s := start(t, dir, "--allowed-targets", "127.0.0.1/32", "--allow-http-targets")
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	r := s.do(t, req{method: "POST", path: "/v1/webhooks", header: bearer(k),
		body: jsonBody(client.CreateWebhook{Domain: "example.com", Events: []string{"ai_visibility_change"}, URL: notFound.URL})})
	if r.Status != 422 || r.errorCode(t) != "WEBHOOK_VERIFICATION_FAILED" || !strings.Contains(string(r.Body), "404") {
		t.Fatalf("an endpoint answering 404: %d %s", r.Status, r.Body)
	}
	r = s.do(t, req{method: "GET", path: "/v1/webhooks", header: bearer(k)})
	if !strings.Contains(string(r.Body), `"items":[]`) {
		t.Fatalf("a refused webhook was kept: %s", r.Body)
	}
	// A reading with bad input changes nothing.
	r = s.do(t, req{method: "POST", path: "/v1/visibility", header: bearer(k), body: `{"domain":"example.com","visibility_score":101,"sentiment":"great"}`})
	var e client.ErrorEnvelope
	r.decode(t, &e)
	if r.Status != 400 || len(e.Error.Details) != 2 {
		t.Fatalf("bad reading: %d %s", r.Status, r.Body)
	}
	if r := s.do(t, req{method: "GET", path: "/v1/visibility?domain=example.com", header: bearer(k)}); r.Status != 404 {
		t.Fatalf("a refused reading was stored: %d", r.Status)
	}
}
