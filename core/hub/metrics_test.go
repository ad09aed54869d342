package hub_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
	"github.com/aivis/aivis/plugins/sdk"
)

// The hub counts each call of a plugin by the connector's registered
// name, the call and whether the plugin answered (whatever its results
// say) or failed, with its time.
func TestMetrics(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testplugin")
	build(t, bin, "0")
	db := newStore(t)
	register(t, db, bin)
	m := metrics.New(metrics.Options{})
	h := openHub(t, db, hub.Options{Metrics: m.Connectors})
	ctx := context.Background()
	ev := sdk.Event{ID: "evt_1", Kind: "webhook_test", Timestamp: time.Now(), Body: []byte(`{}`)}
	ok, _ := json.Marshal(map[string]string{"mode": "ok"})
	if _, err := h.Deliver(ctx, "test", ok, []sdk.Event{ev, ev}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Test(ctx, "test", ok, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ValidateSettings(ctx, "test", ok); err != nil {
		t.Fatal(err)
	}
	crash, _ := json.Marshal(map[string]string{"mode": "crash"})
	if _, err := h.Deliver(ctx, "test", crash, []sdk.Event{ev}); err == nil {
		t.Fatal("a plugin that crashed delivered")
	}
	if _, err := h.Deliver(ctx, "unknown", ok, []sdk.Event{ev}); err == nil {
		t.Fatal("a connector not registered delivered")
	}
	value := func(name string, labels ...string) float64 { return metricstest.Value(t, m, name, labels...) }
	for _, c := range []struct {
		call, outcome string
		want          float64
	}{{"deliver", "ok", 1}, {"deliver", "error", 1}, {"test", "ok", 1}, {"validate", "ok", 1}, {"test", "error", 0}} {
		if n := value("aivis_connector_calls_total", "connector", "test", "call", c.call, "outcome", c.outcome); n != c.want {
			t.Errorf("%s calls %s: %v, want %v", c.call, c.outcome, n, c.want)
		}
	}
	if n := value("aivis_connector_call_duration_seconds_count", "connector", "test", "call", "deliver"); n != 2 {
		t.Errorf("deliver calls timed: %v, want 2", n)
	}
	if n := value("aivis_connector_calls_total", "connector", "unknown"); n != 0 {
		t.Errorf("calls of a connector not registered counted: %v", n)
	}
}
