package delivery_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/sdk"
)

// TestDeliveriesWaitForAnUnavailableConnector: while a connection's
// connector is registered but does not run (hub.ErrUnavailable), its
// deliveries are tried again and again, every ConnectorWait, long past the
// retry schedule, and stay pending with no attempt consumed, the
// connection's health untouched; once the connector runs, each is
// delivered once, on its first attempt.
func TestDeliveriesWaitForAnUnavailableConnector(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	h := &fakeHub{batch: 5, broken: fmt.Errorf("%w: fake: the binary is not on this instance", hub.ErrUnavailable),
		answer: func(ev sdk.Event, _ json.RawMessage) sdk.Result {
			mu.Lock()
			got[ev.ID]++
			mu.Unlock()
			return sdk.DeliveredResult()
		}}
	fastSchedule(t)
	e := newEnv(t, delivery.Options{Connectors: h, ConnectorWait: 50 * time.Millisecond, Idle: 20 * time.Millisecond})
	e.svc.Hub = h
	e.svc = e.svc.Connections()
	c := e.connect(t, client.CreateConnection{})
	const n = 12
	for i := range n {
		e.reading(t, "example.com", i)
	}
	// The fence: every event was handed to the connector more times than
	// the schedule has attempts (4 here), so that a delivery that
	// consumed one each time would have failed by now.
	eventually(t, "each event tried past the schedule", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		tries := map[string]int{}
		for _, call := range h.calls {
			for _, ev := range call {
				tries[ev.ID]++
			}
		}
		if len(tries) < n {
			return false
		}
		for _, k := range tries {
			if k <= len(delivery.Schedule)+1 {
				return false
			}
		}
		return true
	})
	ds := deliveries(t, e, c.ID)
	if len(ds) != n {
		t.Fatalf("%d deliveries, want %d", len(ds), n)
	}
	for _, d := range ds {
		if d.Status != store.DeliveryPending || d.Attempts != 0 || d.Step != 0 || d.LastError != "" {
			t.Errorf("a delivery waiting for its connector: %+v", d)
		}
		if _, as, err := e.db.Delivery(ctx, c.ID, d.ID); err != nil || len(as) != 0 {
			t.Errorf("attempts of a delivery waiting for its connector: %+v %v", as, err)
		}
	}
	if w, err := e.db.Webhook(ctx, c.AccountID, c.ID); err != nil || !w.Enabled || w.Failures != 0 || !w.FailingSince.IsZero() {
		t.Errorf("the connection while its connector does not run: %+v %v", w, err)
	}

	h.mu.Lock()
	h.broken = nil
	h.mu.Unlock()
	eventually(t, "every delivery succeeded", func() bool {
		for _, d := range deliveries(t, e, c.ID) {
			if d.Status != store.DeliverySucceeded {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Errorf("%d events delivered, want %d", len(got), n)
	}
	for id, k := range got {
		if k != 1 {
			t.Errorf("event %s delivered %d times", id, k)
		}
	}
	for _, d := range deliveries(t, e, c.ID) {
		if d.Attempts != 1 {
			t.Errorf("a delivery made once its connector ran: %d attempts", d.Attempts)
		}
	}
}
