package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/store"
)

// TestIdempotentHoldsItsKey: while a request with a key runs, the same
// request is 409 IDEMPOTENCY_CONFLICT and does not act; an answer other
// than 2xx frees the key; a key held by a request whose instance stopped
// more than 2 minutes ago is taken by the retry, which acts, and is then
// replayed.
func TestIdempotentHoldsItsKey(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ts := newTestServer(t, func() time.Time { return now }, 100)
	var h http.Handler
	acted, status := 0, http.StatusCreated
	var inside *httptest.ResponseRecorder
	h = ts.srv.idempotent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		acted++
		if acted == 1 {
			inside = httptest.NewRecorder()
			h.ServeHTTP(inside, post(ts, "k1"))
		}
		w.WriteHeader(status)
		w.Write([]byte(`{"n":` + string(rune('0'+acted)) + `}`))
	}))
	serve := func(key string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, post(ts, key))
		return w
	}

	if w := serve("k1"); w.Code != 201 || acted != 1 {
		t.Fatalf("first: %d %s, acted %d", w.Code, w.Body, acted)
	}
	if inside.Code != 409 || !strings.Contains(inside.Body.String(), "IDEMPOTENCY_CONFLICT") || !strings.Contains(inside.Body.String(), "in progress") {
		t.Errorf("while the first runs: %d %s", inside.Code, inside.Body)
	}
	if w := serve("k1"); w.Code != 201 || w.Body.String() != `{"n":1}` || w.Header().Get("Idempotent-Replayed") != "true" || acted != 1 {
		t.Errorf("again: %d %s %v, acted %d", w.Code, w.Body, w.Header(), acted)
	}

	status = http.StatusServiceUnavailable
	if w := serve("k2"); w.Code != 503 || acted != 2 {
		t.Fatalf("failing: %d %s, acted %d", w.Code, w.Body, acted)
	}
	status = http.StatusCreated
	if w := serve("k2"); w.Code != 201 || w.Header().Get("Idempotent-Replayed") != "" || acted != 3 {
		t.Errorf("after a failure: %d %s, acted %d", w.Code, w.Body, acted)
	}

	// A holder that stopped: its pending record, 1 minute old, then 3.
	held := store.Idempotency{Scope: content.IdempotencyScope(ts.account), Key: "k3", RequestHash: requestHash(post(ts, "k3"), []byte(`{}`)),
		Body: []byte{}, CreatedAt: now.Add(-time.Minute)}
	mustTB(t, ts.db.Update(context.Background(), func(tx store.Tx) error { return tx.PutIdempotency(held) }))
	if w := serve("k3"); w.Code != 409 || acted != 3 {
		t.Errorf("held a minute ago: %d %s, acted %d", w.Code, w.Body, acted)
	}
	held.CreatedAt = now.Add(-3 * time.Minute)
	mustTB(t, ts.db.Update(context.Background(), func(tx store.Tx) error { return tx.PutIdempotency(held) }))
	if w := serve("k3"); w.Code != 201 || w.Header().Get("Idempotent-Replayed") != "" || acted != 4 {
		t.Errorf("held 3 minutes ago: %d %s, acted %d", w.Code, w.Body, acted)
	}
	if w := serve("k3"); w.Code != 201 || w.Header().Get("Idempotent-Replayed") != "true" || acted != 4 {
		t.Errorf("replayed: %d %s, acted %d", w.Code, w.Body, acted)
	}
}

// post is POST /v1/domains with a body of {} and the key, by the test
// server's account.
func post(ts *testServer, key string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/domains", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	return r.WithContext(context.WithValue(r.Context(), keyPrincipal, ts.account))
}
