package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// webhookDB makes a database with a master key, an account and a webhook
// of example.com.
func webhookDB(t *testing.T) (*sqlite.DB, string, *secrets.Box, store.Webhook) {
	t.Helper()
	db, path := newDB(t)
	box, _, err := secrets.Load(t.TempDir()+"/"+secrets.KeyFile, true)
	must(t, err)
	db.SetSecrets(box)
	account(t, db, "acct_1", store.AccountStandard)
	w := store.Webhook{ID: "wh_1", AccountID: "acct_1", Domain: "example.com", URL: "https://example.com/hook",
		Events: []string{"ai_visibility_change"}, Enabled: true, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", CreatedAt: t0, UpdatedAt: t0}
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(w) }))
	return db, path, box, w
}

// pendingDeliveries makes a webhook with n due deliveries, oldest first.
func pendingDeliveries(t *testing.T, n int) (*sqlite.DB, store.Webhook, []string) {
	t.Helper()
	db, _, _, w := webhookDB(t)
	var ids []string
	must(t, db.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			d := store.Delivery{ID: fmt.Sprintf("dlv_%04d", i), WebhookID: w.ID, AccountID: w.AccountID, EventID: fmt.Sprintf("evt_%04d", i),
				Event: "ai_visibility_change", Payload: []byte(`{}`), Status: store.DeliveryPending,
				NextAttemptAt: t0.Add(time.Duration(i) * time.Millisecond), CreatedAt: t0, UpdatedAt: t0}
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
			ids = append(ids, d.ID)
		}
		return nil
	}))
	return db, w, ids
}

// A webhook's claim passes over the deliveries leased already, page after
// page, and takes the next ones in order.
func TestClaimWebhookDeliveriesPassesOverLeases(t *testing.T) {
	db, w, ids := pendingDeliveries(t, 300)
	now, end := t0.Add(time.Hour), t0.Add(2*time.Hour)
	if got, err := db.LeaseDeliveries(ctx, ids[:150], now, end); err != nil || len(got) != 150 {
		t.Fatalf("leased %d of the first 150 (%v)", len(got), err)
	}
	ds, more, err := db.ClaimWebhookDeliveries(ctx, w.ID, now, end, 30, 0)
	must(t, err)
	if len(ds) != 30 || ds[0].ID != ids[150] || ds[29].ID != ids[179] || !more {
		t.Fatalf("claim of 30 = %d deliveries (%v ... ), more %v; want %s to %s and more", len(ds), ds[0].ID, more, ids[150], ids[179])
	}
	ds, more, err = db.ClaimWebhookDeliveries(ctx, w.ID, now, end, 500, 180)
	must(t, err)
	if len(ds) != 120 || ds[0].ID != ids[180] || more {
		t.Fatalf("claim of the rest = %d deliveries, more %v; want the last 120 and no more", len(ds), more)
	}
}

// A delivery released after a reader read it is not leased from that
// read: its outcome may be newer than the read.
func TestNoLeaseFromAReadOlderThanARelease(t *testing.T) {
	db, _, ids := pendingDeliveries(t, 2)
	now, end := t0.Add(time.Hour), t0.Add(2*time.Hour)
	read := time.Now()
	if got, _ := db.LeaseDeliveries(ctx, ids[:1], read, end); len(got) != 1 {
		t.Fatal("not leased")
	}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		return tx.RecordOutcome(ids[0], store.DeliveryOutcome{Status: store.DeliveryPending, Step: 1, Next: t0,
			Attempt: store.Attempt{DeliveryID: ids[0], N: 1, At: now, StatusCode: 500}})
	}))
	if got, _ := db.LeaseDeliveries(ctx, ids, read, end); len(got) != 1 || got[0] != ids[1] {
		t.Errorf("leased %v from a read before the release; want only %s", got, ids[1])
	}
	if got, _ := db.LeaseDeliveries(ctx, ids[:1], time.Now(), end); len(got) != 1 {
		t.Errorf("a read after the release could not lease it: %v", got)
	}
}
