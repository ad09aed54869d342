package delivery

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/testsvc"
)

// engines opens a store of each engine for a test.
var engines = map[string]func(t *testing.T, box *secrets.Box) store.Store{
	"sqlite": func(t *testing.T, box *secrets.Box) store.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "aivis.db"))
		if err != nil {
			t.Fatal(err)
		}
		db.SetSecrets(box)
		t.Cleanup(func() { db.Close() })
		return db
	},
	"postgres": func(t *testing.T, box *secrets.Box) store.Store {
		db, err := postgres.Open(context.Background(), testsvc.Postgres(t), box)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	},
}

// An outcome the store refuses (here an error with a NUL, as a
// destination's answer could hold before reasons were cleaned) fails
// alone: the other outcomes of its batch, another tenant's among them,
// are recorded, and their deliveries are not attempted again.
func TestOneRefusedOutcomeFailsAlone(t *testing.T) {
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			box, _, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
			if err != nil {
				t.Fatal(err)
			}
			st := open(t, box)
			ctx := context.Background()
			now := time.Now().UTC()
			var ds [3]store.Delivery
			var ws [3]store.Webhook
			for i := range ds {
				acct := []string{"acct_a", "acct_b", "acct_c"}[i]
				if err := st.CreateAccount(ctx, store.Account{ID: acct, Name: acct, Tier: "enterprise", Type: store.AccountStandard, CreatedAt: now}); err != nil {
					t.Fatal(err)
				}
				ws[i] = store.Webhook{ID: "wh_" + acct, AccountID: acct, Domain: "example.com", URL: "https://example.com/hook",
					Events: []string{"ai_visibility_change"}, Enabled: true, Secret: "whsec_C2FtcGxlc2VjcmV0MTIzNDU2Nzg5MDEyMzQ1Njc4",
					CreatedAt: now, UpdatedAt: now}
				ds[i] = store.Delivery{ID: store.NewDeliveryID(now), WebhookID: ws[i].ID, AccountID: acct, EventID: "evt_" + acct,
					Event: "ai_visibility_change", Payload: []byte(`{}`), Status: store.DeliveryPending, NextAttemptAt: now,
					CreatedAt: now, UpdatedAt: now, Lease: "proc_1/1", LeaseUntil: now.Add(time.Hour)}
				err := st.Update(ctx, func(tx store.Tx) error {
					if err := tx.InsertWebhook(ws[i]); err != nil {
						return err
					}
					_, err := tx.InsertDelivery(ds[i])
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			e := New(st, nil, nil, slog.New(slog.DiscardHandler), Options{Holder: "proc_1"})
			e.outcomes <- outcome{d: &ds[0], w: &ws[0], verdict: delivered,
				attempt: store.Attempt{DeliveryID: ds[0].ID, N: 1, At: now, StatusCode: 200}}
			e.outcomes <- outcome{d: &ds[1], w: &ws[1], verdict: failed,
				attempt: store.Attempt{DeliveryID: ds[1].ID, N: 1, At: now, Result: ResultFailed, Error: "hook answered 400: bad\x00request"}}
			e.outcomes <- outcome{d: &ds[2], w: &ws[2], verdict: delivered,
				attempt: store.Attempt{DeliveryID: ds[2].ID, N: 1, At: now, StatusCode: 204}}
			close(e.outcomes)
			e.record()

			for i, want := range []string{store.DeliverySucceeded, store.DeliveryPending, store.DeliverySucceeded} {
				d, as, err := st.Delivery(ctx, ws[i].ID, ds[i].ID)
				if err != nil {
					t.Fatal(err)
				}
				if d.Status != want {
					t.Errorf("delivery %d: %s, want %s", i, d.Status, want)
				}
				if recorded := d.Status != store.DeliveryPending; recorded != (len(as) == 1) || recorded == (d.Lease != "") {
					t.Errorf("delivery %d (%s): %d attempts, lease %q", i, d.Status, len(as), d.Lease)
				}
			}
		})
	}
}
