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
func pendingDeliveries(t *testing.T, n int) (*sqlite.DB, string, *secrets.Box, store.Webhook, []string) {
	t.Helper()
	db, path, box, w := webhookDB(t)
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
	return db, path, box, w, ids
}
