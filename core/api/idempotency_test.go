package api

import (
	"context"
	"errors"
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

	// A holder that acted (its action's transaction marked the key) and
	// stopped before keeping its answer: 1 minute ago it may still be
	// answering; 3 minutes ago it stopped, and the retry does not act.
	done := held
	done.Key, done.RequestHash = "k5", requestHash(post(ts, "k5"), []byte(`{}`))
	done.Status, done.CreatedAt = store.IdempotencyActed, now.Add(-time.Minute)
	mustTB(t, ts.db.Update(context.Background(), func(tx store.Tx) error { return tx.PutIdempotency(done) }))
	if w := serve("k5"); w.Code != 409 || !strings.Contains(w.Body.String(), "IDEMPOTENCY_CONFLICT") ||
		!strings.Contains(w.Body.String(), "in progress") || acted != 4 {
		t.Errorf("acted a minute ago: %d %s, acted %d", w.Code, w.Body, acted)
	}
	done.CreatedAt = now.Add(-3 * time.Minute)
	mustTB(t, ts.db.Update(context.Background(), func(tx store.Tx) error { return tx.PutIdempotency(done) }))
	for range 2 {
		if w := serve("k5"); w.Code != 409 || !strings.Contains(w.Body.String(), "IDEMPOTENCY_CONFLICT") ||
			!strings.Contains(w.Body.String(), "was carried out") || acted != 4 {
			t.Errorf("acted 3 minutes ago: %d %s, acted %d", w.Code, w.Body, acted)
		}
	}
}

// TestIdempotentMarksTheAction: the handler runs under the key it holds,
// so that its action's Update (through store.Acted, as the server opens
// its store) marks the key acted in its transaction; the answer kept
// after it replaces the mark, and a failed action marks nothing.
func TestIdempotentMarksTheAction(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ts := newTestServer(t, func() time.Time { return now }, 100)
	st := store.Acted(ts.db)
	scope := content.IdempotencyScope(ts.account)
	read := func(key string) (store.Idempotency, error) {
		var rec store.Idempotency
		err := ts.db.Update(context.Background(), func(tx store.Tx) (err error) {
			rec, err = tx.Idempotency(scope, key, now.Add(-time.Hour))
			return err
		})
		return rec, err
	}
	fail := false
	var during store.Idempotency
	h := ts.srv.idempotent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := st.Update(r.Context(), func(tx store.Tx) error {
			if fail {
				return errors.New("refused")
			}
			return nil
		})
		during, _ = read(r.Header.Get("Idempotency-Key"))
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{}`))
	}))

	h.ServeHTTP(httptest.NewRecorder(), post(ts, "m1"))
	if during.Status != store.IdempotencyActed || !during.CreatedAt.Equal(now) {
		t.Errorf("the key after the handler's action: %+v; want it acted", during)
	}
	if rec, err := read("m1"); err != nil || rec.Status != http.StatusCreated {
		t.Errorf("the key once answered: %+v, %v; want the answer kept", rec, err)
	}
	fail = true
	h.ServeHTTP(httptest.NewRecorder(), post(ts, "m2"))
	if during.Status != 0 {
		t.Errorf("the key after a failed action: %+v; want it held, not acted", during)
	}
	if _, err := read("m2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the key after a 409: %v; want it freed", err)
	}
}

// post is POST /v1/domains with a body of {} and the key, by the test
// server's account.
func post(ts *testServer, key string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/domains", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	return r.WithContext(context.WithValue(r.Context(), keyState, &state{authenticated: true, principal: ts.account}))
}
