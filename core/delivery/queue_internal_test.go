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

// A delivery that a claim leased and queued while the fan-out offered it
// too stays queued once: the offer drops its own copy, not the claim's
// (else it would wait for its lease to end).
func TestOfferKeepsTheClaimsCopy(t *testing.T) {
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
	d := store.Delivery{ID: "dlv_1", WebhookID: w.ID, AccountID: w.AccountID, EventID: "evt_1", Event: "ai_visibility_change",
		Payload: []byte(`{}`), Status: store.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	err = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.InsertWebhook(w); err != nil {
			return err
		}
		_, err := tx.InsertDelivery(d)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	e := New(db, nil, &http.Client{}, slog.New(slog.NewTextHandler(io.Discard, nil)), Options{PerEndpoint: 1})
	e.runCtx, e.sends = ctx, &sync.WaitGroup{}
	// The endpoint's one attempt is in flight: what comes next waits queued.
	ep := e.newEndpoint(&w)
	ep.inflight, e.inflight = 1, 1
	e.endpoints[w.ID] = ep

	n, _, err := e.claim(ctx, e.sends)
	if err != nil || n != 1 {
		t.Fatalf("claim: %d, %v; want the delivery", n, err)
	}
	e.offer([]claimed{{&d, &w}}, time.Now()) // the fan-out's hand-off of the same delivery
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(ep.queue) != 1 || ep.queue[0].d.ID != d.ID {
		t.Fatalf("queue after claim and offer = %v, want the delivery once", ep.queue)
	}
}
