package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

// TestBearerCallsAndUnauthenticated: the /v1 methods send the key as a
// bearer token with their typed body and query, deletes take a 204, and
// the health and catalog calls send no credential.
func TestBearerCallsAndUnauthenticated(t *testing.T) {
	s, rec := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/v1/domains":
			writeJSON(w, 201, `{"id":"dom_1","domain":"example.com","brands":["Example"]}`)
		case r.URL.Path == "/v1/visibility/scans/scan_1/answers":
			writeJSON(w, 200, `{"items":[{"seq":0,"engine":"gpt","cited":true}],"has_more":false,"next_cursor":null}`)
		case r.URL.Path == "/readyz":
			writeJSON(w, 200, `{"status":"ready"}`)
		case r.URL.Path == "/v1/visibility":
			writeJSON(w, 200, `{"domain":"example.com","visibility_score":61,"trend":{"7d":{"visibility_score":50,"change":11}},"last_scan":null}`)
		}
	})
	var waits []time.Duration
	c := newClient(t, s, &waits)
	ctx := context.Background()
	d, err := c.CreateDomain(ctx, CreateDomain{Domain: "example.com", Brands: []string{"Example"}}, IdempotencyKey("d1"))
	if err != nil || d.ID != "dom_1" || d.Brands[0] != "Example" {
		t.Fatalf("create domain %+v %v", d, err)
	}
	if err := c.DeleteDomain(ctx, "dom/1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	prompt, yes := 2, true
	var seqs []string
	for a, err := range c.ScanAnswers(ctx, "scan_1", AnswerParams{Engine: "gpt", Prompt: &prompt, Cited: &yes, Q: "a b"}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, a.Engine)
	}
	if len(seqs) != 1 || seqs[0] != "gpt" {
		t.Errorf("answers %v", seqs)
	}
	r, err := c.Readiness(ctx)
	if err != nil || r.Status != "ready" {
		t.Fatalf("readiness %+v %v", r, err)
	}
	v, err := c.Visibility(ctx, "example.com", ForClient("cl_1"))
	if err != nil || v.VisibilityScore != 61 || v.Trend.Days7 == nil || v.Trend.Days7.Change != 11 || v.LastScan != nil {
		t.Fatalf("visibility %+v %v", v, err)
	}
	if q := rec.reqs[4].URL.Query(); q.Get("domain") != "example.com" || q.Get("client_id") != "cl_1" {
		t.Errorf("visibility query %v", q)
	}
	create, del, answers, ready := rec.reqs[0], rec.reqs[1], rec.reqs[2], rec.reqs[3]
	if create.Header.Get("Authorization") != "Bearer svc_key" || create.Header.Get("X-API-Secret") != "" ||
		create.Header.Get("Idempotency-Key") != "d1" || !strings.Contains(rec.body[0], `"brands":["Example"]`) {
		t.Errorf("create: %v %s", create.Header, rec.body[0])
	}
	if del.Method != http.MethodDelete || del.URL.EscapedPath() != "/v1/domains/dom%2F1" {
		t.Errorf("delete %s %s", del.Method, del.URL.EscapedPath())
	}
	if q := answers.URL.Query(); q.Get("engine") != "gpt" || q.Get("prompt") != "2" || q.Get("cited") != "true" ||
		q.Has("mentioned") || q.Get("q") != "a b" || q.Has("limit") {
		t.Errorf("answers query %v", q)
	}
	if ready.Header.Get("Authorization") != "" || ready.Header.Get("X-API-Key") != "" || ready.Header.Get("X-API-Secret") != "" {
		t.Errorf("readiness sent a credential: %v", ready.Header)
	}
}

// TestBearer429: a rate-limited /v1 call waits retry_after and tries
// again, as the key-and-secret calls do.
func TestBearer429(t *testing.T) {
	n := 0
	s, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n++; n == 1 {
			writeJSON(w, 429, `{"success":false,"error":{"code":"RATE_LIMITED","message":"slow down","request_id":"r","retry_after":7}}`)
			return
		}
		writeJSON(w, 200, `{"id":"wh_1","domain":"example.com"}`)
	})
	var waits []time.Duration
	c := newClient(t, s, &waits)
	wh, err := c.GetWebhook(context.Background(), "wh_1")
	if err != nil || wh.ID != "wh_1" || len(waits) != 1 || waits[0] != 7*time.Second {
		t.Fatalf("webhook %+v %v, waits %v", wh, err, waits)
	}
}

// TestExportAccount: the export is read line by line up to its end line;
// a stream cut before it is an error.
func TestExportAccount(t *testing.T) {
	body := `{"kind":"accounts","data":{"id":"acc_1"}}` + "\n" + `{"kind":"end","data":{"records":1}}` + "\n"
	calls := 0
	s, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		if calls++; calls == 2 {
			io.WriteString(w, body[:strings.Index(body, "\n")+1])
			return
		}
		io.WriteString(w, body)
	})
	var waits []time.Duration
	c := newClient(t, s, &waits)
	var kinds []string
	for rec, err := range c.ExportAccount(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, rec.Kind)
	}
	if strings.Join(kinds, ",") != "accounts,end" {
		t.Errorf("kinds %v", kinds)
	}
	var last error
	kinds = nil
	for rec, err := range c.ExportAccount(context.Background()) {
		if err != nil {
			last = err
			break
		}
		kinds = append(kinds, rec.Kind)
	}
	if !errors.Is(last, io.ErrUnexpectedEOF) || len(kinds) != 1 {
		t.Errorf("cut export: %v after %v", last, kinds)
	}
}

// TestVerifyEvent: a delivery signed with the webhook's secret verifies
// and decodes; a changed body does not.
func TestVerifyEvent(t *testing.T) {
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := webhook.NewSigner(secret)
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_1","event":"webhook_test","timestamp":"2026-01-02T03:04:05Z","data":{"webhook_id":"wh_1"}}`)
	h := http.Header{}
	signer.Headers(h, "evt_1", time.Now(), body)
	e, err := VerifyEvent(v, h, body)
	if err != nil || e.ID != "evt_1" || e.Event != "webhook_test" || !strings.Contains(string(e.Data), "wh_1") {
		t.Fatalf("event %+v %v", e, err)
	}
	body[len(body)-3] = 'X'
	if _, err := VerifyEvent(v, h, body); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("tampered body: %v", err)
	}
}
