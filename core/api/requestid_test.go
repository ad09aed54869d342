package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/limits"
)

// A caller's X-Request-Id that is short and of safe characters is the
// request's id, in the header, the error envelope and the log; any other
// is replaced by one of the server's; the access log gives the duration
// in milliseconds.
func TestRequestIDFromCaller(t *testing.T) {
	var log bytes.Buffer
	db := newTestDB(t)
	as := &auth.Service{Keys: db, Accounts: db, Now: time.Now}
	cs := &content.Service{Store: db, Now: time.Now}
	srv := New(Config{}, Deps{Store: db, Auth: as, Content: cs, Counter: limits.NewMemory(nil, testLog),
		Guard: limits.NewAuthGuard(100, time.Minute), Log: slog.New(slog.NewTextHandler(&log, nil))})
	for _, tc := range []struct {
		sent string
		kept bool
	}{
		{"abc-123", true},
		{"7f3c9a2e-4b1d-4e8a-9c6f-2d5b8e1a0c3f", true},
		{"trace:span.1_2", true},
		{"", false},
		{"with space", false},
		{"-leading-dash", false},
		{strings.Repeat("a", 65), false},
		{"bell\a", false},
		{"quote\"", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/v1/domains", nil)
		if tc.sent != "" {
			r.Header.Set("X-Request-Id", tc.sent)
		}
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, r)
		got := w.Header().Get("X-Request-Id")
		env := checkEnvelope(t, w)
		switch {
		case tc.kept && (got != tc.sent || env.Error.RequestID != tc.sent):
			t.Errorf("X-Request-Id %q: answered %q, envelope %q", tc.sent, got, env.Error.RequestID)
		case !tc.kept && (!strings.HasPrefix(got, "req_") || env.Error.RequestID != got):
			t.Errorf("X-Request-Id %q: answered %q, envelope %q; want one of the server's", tc.sent, got, env.Error.RequestID)
		}
		if !strings.Contains(log.String(), "request_id="+got+" ") {
			t.Errorf("X-Request-Id %q: the log has no request_id=%s:\n%s", tc.sent, got, log.String())
		}
	}
	if !strings.Contains(log.String(), " duration_ms=") || strings.Contains(log.String(), " duration=") {
		t.Errorf("the access log's duration:\n%s", log.String())
	}
}

// The header values every response carries are shared between responses
// (nosniff, noStore, contentJSON): a handler that adds to one of them, or
// replaces it, leaves the next response's as they were.
func TestSharedHeaderValuesStayPut(t *testing.T) {
	s := New(Config{}, Deps{Counter: limits.NewMemory(nil, testLog), Guard: limits.NewAuthGuard(100, time.Minute), Log: testLog})
	changing := s.base(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Cache-Control", "private")
		h.Add("X-Content-Type-Options", "other")
		writeRaw(w, http.StatusOK, []byte(`{}`))
		h.Add("Content-Type", "charset=utf-8")
		w.Header().Set("Cache-Control", "public")
	}))
	plain := s.base(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeRaw(w, http.StatusOK, []byte(`{}`)) }))
	for i, h := range []http.Handler{changing, plain, changing, plain} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/domains", nil))
		if i%2 == 0 {
			continue
		}
		got := w.Result().Header
		if v := got.Values("Cache-Control"); len(v) != 1 || v[0] != "no-store" {
			t.Errorf("response %d: Cache-Control %q, want no-store", i, v)
		}
		if v := got.Values("X-Content-Type-Options"); len(v) != 1 || v[0] != "nosniff" {
			t.Errorf("response %d: X-Content-Type-Options %q, want nosniff", i, v)
		}
		if v := got.Values("Content-Type"); len(v) != 1 || v[0] != "application/json" {
			t.Errorf("response %d: Content-Type %q, want application/json", i, v)
		}
	}
	if nosniff[0] != "nosniff" || noStore[0] != "no-store" || contentJSON[0] != "application/json" || len(nosniff)+len(noStore)+len(contentJSON) != 3 {
		t.Errorf("the shared values changed: %q %q %q", nosniff, noStore, contentJSON)
	}
}
