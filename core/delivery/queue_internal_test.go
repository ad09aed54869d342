package delivery

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// A new delivery the fan-out reserves room for is leased in the
// transaction that inserts it: no claim takes it, and the offer queues it
// once. A reservation whose delivery was not inserted gives its room back.
func TestReservedDeliveriesAreTheFanouts(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	box, _, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
	if err != nil {
		t.Fatal(err)
	}
	db.SetSecrets(box)
	now := time.Now()
	if err := db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	w := store.Webhook{ID: "wh_1", AccountID: "acct_1", Domain: "example.com", URL: "https://example.com/hook",
		Events: []string{"ai_visibility_change"}, Enabled: true, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", CreatedAt: now, UpdatedAt: now}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(w) }); err != nil {
		t.Fatal(err)
	}
	e := New(db, nil, &http.Client{}, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{PerEndpoint: 1})
	e.runCtx, e.sends = ctx, &sync.WaitGroup{}
	// The endpoint's one attempt is in flight: what comes next waits queued.
	ep := e.newEndpoint(&w)
	ep.inflight, e.inflight = 1, 1
	e.endpoints[w.ID] = ep

	delivery := func(id string) *store.Delivery {
		return &store.Delivery{ID: id, WebhookID: w.ID, AccountID: w.AccountID, EventID: "evt_" + id, Event: "ai_visibility_change",
			Payload: []byte(`{}`), Status: store.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	}
	d := delivery("dlv_1")
	reserved := e.reserve([]claimed{{d, &w}})
	if len(reserved) != 1 || d.Lease == "" || !d.LeaseUntil.After(now) {
		t.Fatalf("reserve: %d reserved, lease %q until %v", len(reserved), d.Lease, d.LeaseUntil)
	}
	if err := db.Update(ctx, func(tx store.Tx) error { _, err := tx.InsertDelivery(*d); return err }); err != nil {
		t.Fatal(err)
	}
	if n, _, err := e.claim(ctx, e.sends); err != nil || n != 0 {
		t.Fatalf("a claim took %d deliveries (%v); the fan-out's is leased", n, err)
	}
	e.offer(reserved, map[*store.Delivery]bool{d: true})
	// Not inserted (a failed transaction): its room comes back.
	lost := delivery("dlv_2")
	e.offer(e.reserve([]claimed{{lost, &w}}), nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(ep.queue) != 1 || ep.queue[0].d.ID != d.ID || ep.reserved != 0 || e.reserved != 0 {
		t.Fatalf("queue %v, reserved %d (engine %d); want the first delivery once and no reservation left", ep.queue, ep.reserved, e.reserved)
	}
}
