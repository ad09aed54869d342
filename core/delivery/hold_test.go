package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/webhook"
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

// claimCounter counts the store-wide claims of the engine.
type claimCounter struct {
	*sqlite.DB
	claims atomic.Int64
}

func (c *claimCounter) ClaimDeliveries(ctx context.Context, lease string, now, leaseEnd time.Time, limit, perWebhook int,
	skip []string) ([]store.Delivery, map[string]store.Webhook, error) {
	c.claims.Add(1)
	return c.DB.ClaimDeliveries(ctx, lease, now, leaseEnd, limit, perWebhook, skip)
}

// TestWaitingDeliveriesCostNoClaims: while a connection's deliveries wait
// for their connector, they are not a backlog that wants room: once the
// webhooks that filled their shares have drained, the attempts of other
// deliveries do not each make a claim of the store.
func TestWaitingDeliveriesCostNoClaims(t *testing.T) {
	h := &fakeHub{batch: 5, broken: fmt.Errorf("%w: fake: the binary is not on this instance", hub.ErrUnavailable),
		answer: func(sdk.Event, json.RawMessage) sdk.Result { return sdk.DeliveredResult() }}
	var counter *claimCounter
	e := newEnvOn(t, delivery.Options{Connectors: h, ConnectorWait: time.Hour, Workers: 1, PerEndpoint: 1},
		func(db *sqlite.DB) delivery.Store { counter = &claimCounter{DB: db}; return counter })
	e.svc.Hub = h
	svc := e.svc.Connections()
	c, err := svc.CreateConnection(ctx, e.p, client.CreateConnection{Connector: "fake", Settings: json.RawMessage(`{"token":"s3cret"}`),
		Events: []string{events.VisibilityChange}})
	if err != nil {
		t.Fatal(err)
	}
	// Five slow webhooks fill their shares and the engine's: deliveries
	// wait in the store for room (a backlog).
	var slow atomic.Bool
	slow.Store(true)
	var rcs []*receiver
	for range 5 {
		rc := newReceiver(t, func(int, webhook.Event) int {
			if slow.Load() {
				time.Sleep(5 * time.Millisecond)
			}
			return 200
		})
		e.create(t, rc, client.CreateWebhook{Events: []string{events.VisibilityChange}})
		rcs = append(rcs, rc)
	}
	got := func() int {
		n := 0
		for _, rc := range rcs {
			n += len(rc.events())
		}
		return n
	}
	const n = 20
	for i := range n {
		e.reading(t, "example.com", 1+i)
	}
	eventually(t, "the backlog delivered", func() bool { return got() == 5*n })
	slow.Store(false)
	// Then one event at a time, each delivered before the next.
	before := counter.claims.Load()
	for i := range n {
		e.reading(t, "example.com", 50+i)
		eventually(t, "an event delivered", func() bool { return got() == 5*(n+i+1) })
	}
	if claims := counter.claims.Load() - before; claims > n/2 {
		t.Errorf("%d claims for %d events delivered one at a time while a connection waits", claims, n)
	}
	for _, d := range deliveries(t, e, c.ID) {
		if d.Status != store.DeliveryPending || d.Attempts != 0 {
			t.Errorf("a delivery of the waiting connection: %+v", d)
		}
	}
}

// TestWaitingDeliveriesGoToAnInstanceThatRunsTheConnector: deliveries
// that one instance found its connector unavailable for are left, not
// kept leased: another instance, on which the connector runs, delivers
// them at its next claim, each once, while the first leaves the
// connection alone.
func TestWaitingDeliveriesGoToAnInstanceThatRunsTheConnector(t *testing.T) {
	down := &fakeHub{batch: 5, broken: fmt.Errorf("%w: fake: the binary is not on this instance", hub.ErrUnavailable)}
	var mu sync.Mutex
	got := map[string]int{}
	up := &fakeHub{batch: 5, answer: func(ev sdk.Event, _ json.RawMessage) sdk.Result {
		mu.Lock()
		got[ev.ID]++
		mu.Unlock()
		return sdk.DeliveredResult()
	}}
	down.answer = up.answer
	a := newEnv(t, delivery.Options{Connectors: down, ConnectorWait: time.Hour, Idle: 20 * time.Millisecond})
	a.svc.Hub = down
	a.svc = a.svc.Connections()
	c := a.connect(t, client.CreateConnection{})
	const n = 6
	for i := range n {
		a.reading(t, "example.com", 10+i)
	}
	// The fence: the first instance found the connector unavailable, and
	// every delivery is made.
	eventually(t, "the first instance holding the connection", func() bool {
		down.mu.Lock()
		defer down.mu.Unlock()
		return len(down.calls) > 0 && len(deliveries(t, a, c.ID)) == n
	})
	a.beside(t, delivery.Options{Connectors: up, Idle: 20 * time.Millisecond})
	eventually(t, "the other instance delivering every event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	})
	eventually(t, "every delivery succeeded", func() bool {
		for _, d := range deliveries(t, a, c.ID) {
			if d.Status != store.DeliverySucceeded {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for id, k := range got {
		if k != 1 {
			t.Errorf("event %s delivered %d times", id, k)
		}
	}
}
