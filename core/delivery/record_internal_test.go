package delivery

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
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
			ds, ws := leased(t, st, "acct_a", "acct_b", "acct_c")
			now := ds[0].CreatedAt
			e := New(st, nil, nil, slog.New(slog.DiscardHandler), Options{Holder: "proc_1"})
			e.outcomes <- outcome{d: &ds[0], w: &ws[0], verdict: delivered,
				attempt: store.Attempt{DeliveryID: ds[0].ID, N: 1, At: now, StatusCode: 200}}
			e.outcomes <- outcome{d: &ds[1], w: &ws[1], verdict: failed,
				attempt: store.Attempt{DeliveryID: ds[1].ID, N: 1, At: now, Result: ResultFailed, Error: "hook answered 400: bad\x00request"}}
			e.outcomes <- outcome{d: &ds[2], w: &ws[2], verdict: delivered,
				attempt: store.Attempt{DeliveryID: ds[2].ID, N: 1, At: now, StatusCode: 204}}
			close(e.outcomes)
			close(e.stopped)
			e.write()

			for i, want := range []string{store.DeliverySucceeded, store.DeliveryPending, store.DeliverySucceeded} {
				d, as, err := st.Delivery(context.Background(), ws[i].ID, ds[i].ID)
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

// leased makes, for each account, the account, a webhook and a pending
// delivery to it held by a lease of proc_1.
func leased(t *testing.T, st store.Store, accts ...string) ([]store.Delivery, []store.Webhook) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	ds := make([]store.Delivery, len(accts))
	ws := make([]store.Webhook, len(accts))
	for i, acct := range accts {
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
	return ds, ws
}

// counting counts a store's transactions.
type counting struct {
	store.Store
	updates atomic.Int32
}

func (c *counting) Update(ctx context.Context, fn func(store.Tx) error) error {
	c.updates.Add(1)
	return c.Store.Update(ctx, fn)
}

// The fan-out's deliveries and the outcomes of attempts that come while
// the writer is busy go in one transaction; when it fails, for an outcome
// the store refuses, the deliveries are written alone and the outcomes as
// the recorder writes them, the refused one failing alone.
func TestDeliveriesAndOutcomesShareATransaction(t *testing.T) {
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			box, _, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
			if err != nil {
				t.Fatal(err)
			}
			st := &counting{Store: open(t, box)}
			ds, ws := leased(t, st, "acct_a", "acct_b", "acct_c", "acct_d")
			now := ds[0].CreatedAt
			e := New(st, nil, nil, slog.New(slog.DiscardHandler), Options{Holder: "proc_1"})
			newInsertion := func(w store.Webhook, event string) (insertion, *store.Delivery) {
				d := &store.Delivery{ID: store.NewDeliveryID(now), WebhookID: w.ID, AccountID: w.AccountID, EventID: event,
					Event: "ai_visibility_change", Payload: []byte(`{}`), Status: store.DeliveryPending, NextAttemptAt: now,
					CreatedAt: now, UpdatedAt: now}
				return insertion{ds: []claimed{{d, &w}}, done: make(chan error, 1)}, d
			}
			state := func(w store.Webhook, id string) (string, int) {
				d, as, err := st.Delivery(context.Background(), w.ID, id)
				if err != nil {
					t.Fatalf("delivery %s: %v", id, err)
				}
				return d.Status, len(as)
			}
			success := func(i int) outcome {
				return outcome{d: &ds[i], w: &ws[i], verdict: delivered, attempt: store.Attempt{DeliveryID: ds[i].ID, N: 1, At: now, StatusCode: 200}}
			}

			// Together: one transaction.
			req, d := newInsertion(ws[0], "evt_new_a")
			before := st.updates.Load()
			e.commit([]insertion{req}, []outcome{success(0), success(1)})
			if err := <-req.done; err != nil {
				t.Fatalf("the insertion: %v", err)
			}
			if n := st.updates.Load() - before; n != 1 {
				t.Errorf("%d transactions for a batch of deliveries and outcomes, want 1", n)
			}
			if status, attempts := state(ws[0], d.ID); status != store.DeliveryPending || attempts != 0 {
				t.Errorf("the new delivery: %s, %d attempts", status, attempts)
			}
			for i := range 2 {
				if status, attempts := state(ws[i], ds[i].ID); status != store.DeliverySucceeded || attempts != 1 {
					t.Errorf("delivery %d: %s, %d attempts; want succeeded, 1", i, status, attempts)
				}
			}

			// An outcome refused: the deliveries still go in, the other
			// outcome is recorded, the refused one's delivery stays pending.
			req, d = newInsertion(ws[2], "evt_new_c")
			bad := outcome{d: &ds[2], w: &ws[2], verdict: failed,
				attempt: store.Attempt{DeliveryID: ds[2].ID, N: 1, At: now, Result: ResultFailed, Error: "hook answered 400: bad\x00request"}}
			e.commit([]insertion{req}, []outcome{bad, success(3)})
			if err := <-req.done; err != nil {
				t.Fatalf("the insertion beside a refused outcome: %v", err)
			}
			if status, _ := state(ws[2], d.ID); status != store.DeliveryPending {
				t.Errorf("the new delivery beside a refused outcome: %s", status)
			}
			if status, attempts := state(ws[3], ds[3].ID); status != store.DeliverySucceeded || attempts != 1 {
				t.Errorf("the outcome beside a refused one: %s, %d attempts", status, attempts)
			}
			if status, attempts := state(ws[2], ds[2].ID); status != store.DeliveryPending || attempts != 0 {
				t.Errorf("the refused outcome's delivery: %s, %d attempts; want pending, none", status, attempts)
			}
		})
	}
}
