package sqlite_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
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

func deliveryIDs(ds []store.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// A webhook's claim passes over the deliveries leased already and takes
// the next ones in order; a store-wide claim likewise.
func TestClaimsPassOverLeases(t *testing.T) {
	db, _, _, w, ids := pendingDeliveries(t, 300)
	now, end := t0.Add(time.Hour), t0.Add(2*time.Hour)
	ds, more, err := db.ClaimWebhookDeliveries(ctx, "lease_a", w.ID, now, end, 150)
	if err != nil || !slices.Equal(deliveryIDs(ds), ids[:150]) || !more {
		t.Fatalf("first claim: %d deliveries, more %v, %v; want the first 150", len(ds), more, err)
	}
	for _, d := range ds {
		if d.Lease != "lease_a" || !d.LeaseUntil.Equal(end) {
			t.Fatalf("claimed %s with lease %q until %v", d.ID, d.Lease, d.LeaseUntil)
		}
	}
	ds, more, err = db.ClaimWebhookDeliveries(ctx, "lease_b", w.ID, now, end, 30)
	if err != nil || !slices.Equal(deliveryIDs(ds), ids[150:180]) || !more {
		t.Fatalf("claim of 30 = %v, more %v, %v; want %s to %s", deliveryIDs(ds), more, err, ids[150], ids[179])
	}
	all, hooks, err := db.ClaimDeliveries(ctx, "lease_c", now, end, 500, 500, nil)
	if err != nil || !slices.Equal(deliveryIDs(all), ids[180:]) || hooks[w.ID].URL != w.URL {
		t.Fatalf("store-wide claim = %d deliveries (%v), webhook %+v; want the last 120", len(all), err, hooks[w.ID])
	}
	if ds, _, err := db.ClaimWebhookDeliveries(ctx, "lease_d", w.ID, now, end, 10); err != nil || len(ds) != 0 {
		t.Fatalf("every delivery is leased, yet a claim took %v (%v)", deliveryIDs(ds), err)
	}
	// Once the leases end, they may be claimed again.
	ds, _, err = db.ClaimWebhookDeliveries(ctx, "lease_e", w.ID, end, end.Add(time.Hour), 10)
	if err != nil || !slices.Equal(deliveryIDs(ds), ids[:10]) {
		t.Fatalf("after the leases ended: %v (%v)", deliveryIDs(ds), err)
	}
}

// Concurrent claims, from this handle and from another on the same file
// (another process), never lease one delivery twice, and between them
// lease every one.
func TestConcurrentClaimsNeverShare(t *testing.T) {
	const n = 2000
	db, path, box, w, ids := pendingDeliveries(t, n)
	other := open(t, path)
	other.SetSecrets(box)
	now, end := t0.Add(time.Hour), t0.Add(2*time.Hour)
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			h := db
			if i%2 == 1 {
				h = other
			}
			lease := fmt.Sprintf("lease_%d", i)
			for {
				var ds []store.Delivery
				var err error
				if i%4 < 2 {
					ds, _, err = h.ClaimWebhookDeliveries(ctx, lease, w.ID, now, end, 7)
				} else {
					ds, _, err = h.ClaimDeliveries(ctx, lease, now, end, 7, 7, nil)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					if prev, ok := got[d.ID]; ok {
						t.Errorf("%s leased by %s and by %s", d.ID, prev, lease)
					}
					got[d.ID] = lease
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != n {
		t.Fatalf("%d of %d deliveries leased", len(got), n)
	}
	for _, id := range ids {
		if d, _, err := db.Delivery(ctx, w.ID, id); err != nil || d.Lease != got[id] {
			t.Fatalf("%s is stored under lease %q, claimed by %s (%v)", id, d.Lease, got[id], err)
		}
	}
}

// An outcome is recorded only under the lease that holds the delivery: a
// holder whose lease ended and was taken records nothing, and the new
// holder's outcome stands.
func TestOutcomeFencedByLease(t *testing.T) {
	db, _, _, w, ids := pendingDeliveries(t, 1)
	now := t0.Add(time.Hour)
	if ds, _, err := db.ClaimWebhookDeliveries(ctx, "lease_old", w.ID, now, now.Add(time.Minute), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v %v", ds, err)
	}
	later := now.Add(2 * time.Minute) // the first lease has ended
	if ds, _, err := db.ClaimWebhookDeliveries(ctx, "lease_new", w.ID, later, later.Add(time.Minute), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim after the lease ended: %v %v", ds, err)
	}
	outcome := func(lease string, status int) error {
		return db.Update(ctx, func(tx store.Tx) error {
			return tx.RecordOutcome(ids[0], lease, store.DeliveryOutcome{Status: store.DeliverySucceeded,
				Attempt: store.Attempt{DeliveryID: ids[0], N: 1, At: later, StatusCode: status}})
		})
	}
	if err := outcome("lease_old", 500); !errors.Is(err, store.ErrLost) {
		t.Fatalf("the late holder's outcome: %v, want ErrLost", err)
	}
	must(t, outcome("lease_new", 200))
	d, attempts, err := db.Delivery(ctx, w.ID, ids[0])
	must(t, err)
	if d.Status != store.DeliverySucceeded || d.LastStatus != 200 || d.Lease != "" || len(attempts) != 1 || attempts[0].StatusCode != 200 {
		t.Fatalf("after both outcomes: %+v, attempts %+v", d, attempts)
	}
	if err := outcome("lease_new", 200); !errors.Is(err, store.ErrLost) {
		t.Fatalf("a second outcome under an ended lease: %v, want ErrLost", err)
	}
}

// A delivery inserted with a lease (the fan-out's) is the inserter's: no
// claim takes it until the lease ends; a renewal keeps it, but only for
// the holder of the lease.
func TestInsertedLeaseAndRenewal(t *testing.T) {
	db, _, _, w := webhookDB(t)
	now := t0.Add(time.Hour)
	d := store.Delivery{ID: "dlv_hot", WebhookID: w.ID, AccountID: w.AccountID, EventID: "evt_hot", Event: "ai_visibility_change",
		Payload: []byte(`{}`), Status: store.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now,
		Lease: "lease_fanout", LeaseUntil: now.Add(time.Minute)}
	must(t, db.Update(ctx, func(tx store.Tx) error { _, err := tx.InsertDelivery(d); return err }))
	if ds, _, err := db.ClaimDeliveries(ctx, "lease_claim", now, now.Add(time.Minute), 10, 10, nil); err != nil || len(ds) != 0 {
		t.Fatalf("a claim took the fan-out's delivery: %v %v", deliveryIDs(ds), err)
	}
	renewed, err := db.RenewLeases(ctx, []store.Delivery{d, {ID: "dlv_hot", Lease: "lease_other"}}, now.Add(3*time.Minute))
	if err != nil || !slices.Equal(renewed, []string{"dlv_hot"}) {
		t.Fatalf("renewal: %v %v", renewed, err)
	}
	later := now.Add(2 * time.Minute) // past the first end, before the renewed one
	if ds, _, err := db.ClaimDeliveries(ctx, "lease_claim", later, later.Add(time.Minute), 10, 10, nil); err != nil || len(ds) != 0 {
		t.Fatalf("a claim took a renewed delivery: %v %v", deliveryIDs(ds), err)
	}
	if renewed, err := db.RenewLeases(ctx, []store.Delivery{{ID: "dlv_hot", Lease: "lease_other"}}, later.Add(time.Hour)); err != nil || len(renewed) != 0 {
		t.Fatalf("a renewal under another lease renewed %v (%v)", renewed, err)
	}
}

// Deleting a webhook ends its deliveries' leases: an attempt in flight
// records nothing.
func TestDeleteEndsLeases(t *testing.T) {
	db, _, _, w, ids := pendingDeliveries(t, 1)
	now := t0.Add(time.Hour)
	if ds, _, err := db.ClaimWebhookDeliveries(ctx, "lease_a", w.ID, now, now.Add(time.Minute), 1); err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v %v", ds, err)
	}
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.DeleteWebhook(w.AccountID, w.ID, "deleted", now) }))
	err := db.Update(ctx, func(tx store.Tx) error {
		return tx.RecordOutcome(ids[0], "lease_a", store.DeliveryOutcome{Status: store.DeliverySucceeded,
			Attempt: store.Attempt{DeliveryID: ids[0], N: 1, At: now, StatusCode: 200}})
	})
	if !errors.Is(err, store.ErrLost) {
		t.Fatalf("an outcome after the delete: %v, want ErrLost", err)
	}
	if d, _, err := db.Delivery(ctx, w.ID, ids[0]); err != nil || d.Status != store.DeliveryFailed {
		t.Fatalf("after the delete: %+v %v", d, err)
	}
}

// A scan's claim is fenced by its number: once its lease ended and
// another worker claimed it, what the first writes is refused. A domain
// has at most one active scan.
func TestScanClaimFenced(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	md := store.MonitoredDomain{ID: "dom_1", AccountID: "acct_1", Domain: "example.com", Brands: []string{"Example"},
		NextScanAt: t0.Add(time.Hour), CreatedAt: t0, UpdatedAt: t0}
	sc := store.Scan{ID: "scan_1", AccountID: "acct_1", DomainID: md.ID, Domain: md.Domain, Trigger: store.ScanManual,
		Status: store.ScanQueued, CreatedAt: t0}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		if err := tx.InsertDomain(md); err != nil {
			return err
		}
		return tx.InsertScan(sc)
	}))
	second := sc
	second.ID = "scan_2"
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(second) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second active scan of the domain: %v, want ErrConflict", err)
	}
	claim := func(holder string, now time.Time) store.Scan {
		t.Helper()
		var got store.Scan
		must(t, db.Update(ctx, func(tx store.Tx) (err error) {
			got, err = tx.ClaimScan(holder, now, now.Add(time.Minute))
			return err
		}))
		return got
	}
	first := claim("proc_a", t0)
	if first.Attempts != 1 || first.Holder != "proc_a" || first.Status != store.ScanRunning {
		t.Fatalf("first claim: %+v", first)
	}
	if err := db.Update(ctx, func(tx store.Tx) error { _, err := tx.ClaimScan("proc_b", t0, t0.Add(time.Minute)); return err }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a claim while the lease holds: %v, want ErrNotFound", err)
	}
	taken := claim("proc_b", t0.Add(2*time.Minute))
	if taken.Attempts != 2 || taken.Holder != "proc_b" {
		t.Fatalf("claim after the lease ended: %+v", taken)
	}
	first.Status, first.FinishedAt = store.ScanFailed, t0.Add(3*time.Minute)
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.UpdateScan(first) }); !errors.Is(err, store.ErrLost) {
		t.Fatalf("the late holder's write: %v, want ErrLost", err)
	}
	taken.Status, taken.FinishedAt, taken.Result = store.ScanCompleted, t0.Add(3*time.Minute), []byte(`{"visibility_score":50}`)
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.UpdateScan(taken) }))
	got, err := db.Scan(ctx, "acct_1", "scan_1")
	if err != nil || got.Status != store.ScanCompleted || got.Attempts != 2 || got.Holder != "proc_b" {
		t.Fatalf("the scan after both: %+v %v", got, err)
	}
	// Ended, it leaves room for the next active scan.
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(second) }))
}

// A worker's write to a content request is fenced by its claim's number.
func TestContentClaimFenced(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	insert(t, db, cr("cr_1", "acct_1", "", t0))
	claim := func(holder string, now time.Time) store.ContentRequest {
		t.Helper()
		var got store.ContentRequest
		must(t, db.Update(ctx, func(tx store.Tx) (err error) {
			got, err = tx.ClaimContentRequest(holder, now, now.Add(time.Minute))
			return err
		}))
		return got
	}
	first := claim("proc_a", t0)
	taken := claim("proc_b", t0.Add(2*time.Minute))
	if first.Attempts != 1 || taken.Attempts != 2 || taken.Holder != "proc_b" {
		t.Fatalf("claims: %d by %s, %d by %s", first.Attempts, first.Holder, taken.Attempts, taken.Holder)
	}
	first.Step, first.Spent = "rewrite", 5
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(first, first.Attempts) }); !errors.Is(err, store.ErrLost) {
		t.Fatalf("the late holder's step: %v, want ErrLost", err)
	}
	taken.Step = "analyze"
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(taken, taken.Attempts) }))
	got, err := db.ContentRequest(ctx, "acct_1", "cr_1")
	if err != nil || got.Step != "analyze" || got.Spent != 0 || got.Holder != "proc_b" {
		t.Fatalf("after both: step %q spent %d holder %q (%v)", got.Step, got.Spent, got.Holder, err)
	}
}
