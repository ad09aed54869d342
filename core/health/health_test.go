package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func get(h http.HandlerFunc) (int, map[string]any) {
	w := httptest.NewRecorder()
	h(w, httptest.NewRequest(http.MethodGet, "/", nil))
	var body map[string]any
	json.Unmarshal(w.Body.Bytes(), &body)
	return w.Code, body
}

// /readyz names the parts that do not answer, by kind and in order, and
// says why in the log once, when the answer changes; a part that hangs
// fails at the deadline; /livez answers whatever the parts do; drained,
// /readyz is 503 for good.
func TestReadiness(t *testing.T) {
	var storeDown, busHangs atomic.Bool
	var log bytes.Buffer
	h := New(slog.New(slog.NewTextHandler(&log, nil)), 50*time.Millisecond,
		Check{"store", func(context.Context) error {
			if storeDown.Load() {
				return errors.New("dial tcp 10.0.0.7:5432: connection refused")
			}
			return nil
		}},
		Check{"bus", func(ctx context.Context) error {
			if busHangs.Load() {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}},
		Check{"counter", func(context.Context) error { return nil }})
	ready := func() (int, map[string]any) { return get(h.ServeReady) }

	if code, body := ready(); code != 200 || body["status"] != "ready" {
		t.Fatalf("all answering: %d %v", code, body)
	}
	storeDown.Store(true)
	busHangs.Store(true)
	start := time.Now()
	code, body := ready()
	if took := time.Since(start); took > time.Second {
		t.Errorf("a hanging part held /readyz for %v", took)
	}
	failing, _ := json.Marshal(body["failing"])
	if code != 503 || body["status"] != "unavailable" || string(failing) != `["store","bus"]` {
		t.Fatalf("store and bus down: %d %v", code, body)
	}
	if strings.Contains(string(failing), "10.0.0.7") {
		t.Errorf("the answer names an address: %s", failing)
	}
	ready()
	if n := strings.Count(log.String(), "not ready"); n != 1 || !strings.Contains(log.String(), "connection refused") {
		t.Errorf("the log of two failing probes:\n%s", log.String())
	}
	if code, _ := get(h.Live); code != 200 {
		t.Errorf("/livez while parts fail: %d", code)
	}

	storeDown.Store(false)
	busHangs.Store(false)
	if code, _ := ready(); code != 200 || !strings.Contains(log.String(), "ready again") {
		t.Errorf("back: %d\n%s", code, log.String())
	}
	h.Drain()
	if code, body := ready(); code != 503 || body["status"] != "draining" {
		t.Errorf("drained: %d %v", code, body)
	}
	if code, body := get(h.Paths()["/healthz"]); code != 200 || body["status"] != "ok" {
		t.Errorf("/healthz drained: %d %v", code, body)
	}
}

// A ready process that lacks something it does without (a connector that
// does not run) answers /readyz 200, naming it, and says so in the log
// once, and once more when it is whole again; a part that fails still
// makes it 503, whatever is degraded.
func TestDegradedIsReady(t *testing.T) {
	var storeDown atomic.Bool
	var lacking atomic.Pointer[[]string]
	var log bytes.Buffer
	h := New(slog.New(slog.NewTextHandler(&log, nil)), 50*time.Millisecond, Check{"store", func(context.Context) error {
		if storeDown.Load() {
			return errors.New("down")
		}
		return nil
	}})
	h.Degraded(func() []string {
		if p := lacking.Load(); p != nil {
			return *p
		}
		return nil
	})
	ready := func() (int, map[string]any) { return get(h.ServeReady) }
	if code, body := ready(); code != 200 || body["status"] != "ready" || body["degraded"] != nil {
		t.Fatalf("whole: %d %v", code, body)
	}
	lacking.Store(&[]string{"connector:slack", "connector:ga4"})
	code, body := ready()
	degraded, _ := json.Marshal(body["degraded"])
	if code != 200 || body["status"] != "ready" || string(degraded) != `["connector:slack","connector:ga4"]` {
		t.Fatalf("degraded: %d %v", code, body)
	}
	ready()
	if n := strings.Count(log.String(), "ready, but degraded"); n != 1 {
		t.Errorf("the log of two degraded probes:\n%s", log.String())
	}
	storeDown.Store(true)
	if code, body := ready(); code != 503 || body["status"] != "unavailable" {
		t.Errorf("degraded and the store down: %d %v", code, body)
	}
	storeDown.Store(false)
	lacking.Store(nil)
	if code, body := ready(); code != 200 || body["degraded"] != nil || !strings.Contains(log.String(), "no longer degraded") {
		t.Errorf("whole again: %d %v\n%s", code, body, log.String())
	}
}
