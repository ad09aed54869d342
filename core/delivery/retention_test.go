package delivery_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
)

func faultCode(err error) fault.Code {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return ""
}

// A deleted webhook gets nothing more and can no longer be changed, but
// it and its deliveries, with their attempts, stay readable until
// retention removes them; then it is gone.
func TestDeletedWebhookReadableUntilItAgesOut(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	e := newEnv(t, delivery.Options{Now: now, Retention: 24 * time.Hour, PruneEvery: 10 * time.Millisecond})
	e.svc.Now = now
	gone, stays := newReceiver(t, nil), newReceiver(t, nil)
	w := e.create(t, gone, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	other := e.create(t, stays, client.CreateWebhook{Events: []string{events.VisibilityChange}})
	e.reading(t, "example.com", 10)
	eventually(t, "the reading at both", func() bool { return len(gone.events()) == 1 && len(stays.events()) == 1 })
	eventually(t, "its delivery recorded", func() bool {
		ds := deliveries(t, e, w.ID)
		return len(ds) == 2 && ds[0].Status == store.DeliverySucceeded
	})

	if err := e.svc.Delete(ctx, e.p, w.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.Get(ctx, e.p, w.ID)
	if err != nil || !got.Deleted() || got.Enabled || got.DisabledReason != "deleted by the account" || got.Secret != "" {
		t.Fatalf("the deleted webhook: %+v %v", got, err)
	}
	ds, _, err := e.svc.Deliveries(ctx, e.p, w.ID, "", "", 10)
	if err != nil || len(ds) != 2 {
		t.Fatalf("its deliveries: %+v %v", ds, err)
	}
	for _, d := range ds {
		if _, as, err := e.svc.Delivery(ctx, e.p, w.ID, d.ID); err != nil || len(as) != 1 || as[0].StatusCode != http.StatusOK {
			t.Fatalf("delivery %s: %+v %v", d.Event, as, err)
		}
	}
	on := true
	for what, err := range map[string]error{
		"update":    func() error { _, err := e.svc.Update(ctx, e.p, w.ID, client.UpdateWebhook{Enabled: &on}); return err }(),
		"rotate":    func() error { _, err := e.svc.Rotate(ctx, e.p, w.ID, 0); return err }(),
		"test":      func() error { _, err := e.svc.SendTest(ctx, e.p, w.ID); return err }(),
		"redeliver": func() error { _, err := e.svc.Redeliver(ctx, e.p, w.ID, ds[0].ID); return err }(),
		"replay":    func() error { _, err := e.svc.Replay(ctx, e.p, w.ID, now().Add(-time.Hour), time.Time{}); return err }(),
		"delete":    e.svc.Delete(ctx, e.p, w.ID),
	} {
		if faultCode(err) != fault.NotFound {
			t.Errorf("%s of a deleted webhook: %v", what, err)
		}
	}
	if ws, _, err := e.svc.List(ctx, e.p, "", "", 10); err != nil || len(ws) != 1 || ws[0].ID != other.ID {
		t.Errorf("listed: %+v %v", ws, err)
	}

	// The next event reaches the other webhook of the domain, and nothing
	// is added for the deleted one.
	e.reading(t, "example.com", 20)
	eventually(t, "the next reading at the other webhook", func() bool { return len(deliveries(t, e, other.ID)) == 3 })
	if n := len(deliveries(t, e, w.ID)); n != 2 || gone.requests.Load() != 2 {
		t.Errorf("the deleted webhook got %d deliveries and %d requests, want 2 and 2", n, gone.requests.Load())
	}

	// Past the retention its history, then the webhook itself, go; the
	// other webhook stays, without its old deliveries.
	clock.Add(int64(25 * time.Hour))
	eventually(t, "the deleted webhook pruned", func() bool {
		_, err := e.svc.Get(ctx, e.p, w.ID)
		return faultCode(err) == fault.NotFound
	})
	if _, err := e.svc.Get(ctx, e.p, other.ID); err != nil {
		t.Fatal(err)
	}
	if ds := deliveries(t, e, other.ID); len(ds) != 0 {
		t.Errorf("the other webhook's old deliveries: %d", len(ds))
	}
}
