package delivery_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/sdk"
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

// The tier caps webhooks and connections; the cap is checked and the new
// one kept in one transaction, so that of 32 concurrent creations at one
// below the cap exactly one is kept. A creation past the cap sends no test
// payload; a deleted one leaves room.
func TestCapsHoldUnderConcurrentCreation(t *testing.T) {
	h := &fakeHub{batch: 1, answer: func(sdk.Event, json.RawMessage) sdk.Result { return sdk.DeliveredResult() }}
	e := connEnv(t, h)
	e.p.Account.Tier = "starter" // 10 webhooks, 5 connections
	hooks := &delivery.Service{Store: e.db, Client: e.svc.Client, AllowHTTP: true, CheckURL: e.svc.CheckURL, VerifyTimeout: e.svc.VerifyTimeout}
	rc := newReceiver(t, nil)
	create := func() error {
		_, err := hooks.Create(ctx, e.p, client.CreateWebhook{Domain: "example.com", URL: rc.URL + "/hook", Events: []string{events.VisibilityChange}})
		return err
	}
	connect := func() error {
		_, err := e.svc.CreateConnection(ctx, e.p, client.CreateConnection{Connector: "fake", Settings: json.RawMessage(`{"token":"t"}`),
			Events: []string{events.VisibilityChange}})
		return err
	}
	for _, tc := range []struct {
		what     string
		make     func() error
		cap      int
		code     fault.Code
		svc      *delivery.Service
		requests func() int64
	}{
		{"webhooks", create, 10, fault.WebhookLimitReached, hooks, rc.requests.Load},
		{"connections", connect, 5, fault.ConnectionLimitReached, e.svc, func() int64 { return 0 }}, // nothing is sent to verify one
	} {
		for range tc.cap - 1 {
			if err := tc.make(); err != nil {
				t.Fatalf("%s below the cap: %v", tc.what, err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Go(func() { errs[i] = tc.make() })
		}
		wg.Wait()
		kept := 0
		for _, err := range errs {
			switch {
			case err == nil:
				kept++
			case faultCode(err) != tc.code:
				t.Fatalf("%s: %v", tc.what, err)
			}
		}
		n, err := e.db.CountWebhooks(ctx, e.p.AccountID(), tc.svc == e.svc)
		if kept != 1 || n != tc.cap || err != nil {
			t.Fatalf("%s: %d of 32 concurrent creations kept, %d in all (%v); want 1 and %d", tc.what, kept, n, err, tc.cap)
		}
		sent := tc.requests()
		err = tc.make()
		if fe, ok := fault.As(err); !ok || fe.Code != tc.code || fe.Code.Status() != http.StatusForbidden {
			t.Fatalf("%s past the cap: %v", tc.what, err)
		}
		if tc.requests() != sent {
			t.Errorf("%s: a creation past the cap sent its test payload", tc.what)
		}
		all, _, err := tc.svc.List(ctx, e.p, "", "", 100)
		if err != nil || len(all) != tc.cap {
			t.Fatalf("%s: %d listed, %v", tc.what, len(all), err)
		}
		if err := tc.svc.Delete(ctx, e.p, all[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := tc.make(); err != nil {
			t.Errorf("%s: a deleted one leaves no room: %v", tc.what, err)
		}
	}
}
