package sqlite_test

import (
	"errors"

	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// deliveriesAt adds n delivered deliveries of w made at at (a second
// apart), each with two attempts, and returns their ids, oldest first.
func deliveriesAt(t *testing.T, db *sqlite.DB, w store.Webhook, at time.Time, n int) []string {
	t.Helper()
	var ids []string
	must(t, db.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			made := at.Add(time.Duration(i) * time.Second)
			ev, err := events.New(events.VisibilityChange, made, w.AccountID, "", w.Domain, map[string]int{"n": i})
			if err != nil {
				return err
			}
			d := store.Delivery{ID: store.NewDeliveryID(made), WebhookID: w.ID, AccountID: w.AccountID, EventID: ev.ID, Event: ev.Event,
				Payload: []byte(`{"n":1}`), Status: store.DeliveryPending, NextAttemptAt: made, CreatedAt: made, UpdatedAt: made}
			if _, err := tx.InsertDelivery(d); err != nil {
				return err
			}
			for try := 1; try <= 2; try++ {
				if err := tx.RecordOutcome(d.ID, "", store.DeliveryOutcome{Attempt: store.Attempt{DeliveryID: d.ID, N: try, At: made,
					StatusCode: 500 - 300*(try-1)}, Status: store.DeliverySucceeded, Step: try}); err != nil {
					return err
				}
			}
			ids = append(ids, d.ID)
		}
		return nil
	}))
	return ids
}

// count counts the rows of a table on the file itself.
func count(t *testing.T, path, table string) (n int) {
	t.Helper()
	must(t, raw(t, path).QueryRow(`SELECT count(*) FROM `+table).Scan(&n))
	return n
}

// Retention prunes the deliveries made before its cut, with their
// attempts, oldest first, never more than a batch's limit in one write,
// and keeps every delivery made since.
func TestPruneDeliveriesInBoundedBatches(t *testing.T) {
	db, path, _, w := webhookDB(t)
	cut := t0.Add(-30 * 24 * time.Hour)
	old := deliveriesAt(t, db, w, cut.Add(-time.Hour), 25)
	young := deliveriesAt(t, db, w, cut, 10) // the first made at the cut exactly
	var batches []int
	for {
		n, err := db.PruneDeliveries(ctx, cut, 10)
		must(t, err)
		batches = append(batches, n)
		if n < 10 {
			break
		}
	}
	if !slices.Equal(batches, []int{10, 10, 5}) {
		t.Errorf("batches of %v, want [10 10 5]", batches)
	}
	for _, id := range old {
		if _, _, err := db.Delivery(ctx, w.ID, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("old delivery %s: %v", id, err)
		}
	}
	for _, id := range young {
		d, as, err := db.Delivery(ctx, w.ID, id)
		if err != nil || d.Status != store.DeliverySucceeded || len(as) != 2 {
			t.Fatalf("young delivery %s: %+v %d attempts %v", id, d, len(as), err)
		}
	}
	if n := count(t, path, "webhook_attempts"); n != 2*len(young) {
		t.Errorf("%d attempts left, want %d: the old ones' went with them", n, 2*len(young))
	}

	plan := strings.Join(queryPlan(t, raw(t, path), sqlite.PruneQueries[0], "", 0), "\n")
	if !strings.Contains(plan, "sqlite_autoindex_webhook_deliveries_1 (id<?)") || strings.Contains(plan, "SCAN webhook_deliveries") {
		t.Errorf("the prune of deliveries walks:\n%s", plan)
	}
}

// A deleted webhook is kept, disabled and without its secrets, with its
// deliveries and their attempts, until they age out: then it goes too.
// Meanwhile nothing new reaches it and it is neither matched, listed,
// counted nor deleted again.
func TestDeletedWebhookKeptUntilItsDeliveriesAgeOut(t *testing.T) {
	db, path, _, w := webhookDB(t)
	sent := deliveriesAt(t, db, w, t0, 3)
	pending := store.Delivery{ID: store.NewDeliveryID(t0.Add(time.Minute)), WebhookID: w.ID, AccountID: w.AccountID, EventID: "evt_p",
		Event: events.VisibilityChange, Payload: []byte(`{}`), Status: store.DeliveryPending, NextAttemptAt: t0.Add(time.Hour),
		CreatedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Minute)}
	must(t, db.Update(ctx, func(tx store.Tx) error { _, err := tx.InsertDelivery(pending); return err }))

	deleted := t0.Add(2 * time.Minute)
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.DeleteWebhook(w.AccountID, w.ID, "deleted by the account", deleted) }))
	got, err := db.Webhook(ctx, w.AccountID, w.ID)
	if err != nil || !got.DeletedAt.Equal(deleted) || got.Enabled || got.DisabledReason != "deleted by the account" ||
		got.Secret != "" || got.URL != w.URL {
		t.Fatalf("the deleted webhook reads %+v, %v", got, err)
	}
	if d, _, err := db.Delivery(ctx, w.ID, pending.ID); err != nil || d.Status != store.DeliveryFailed || d.LastError != "deleted by the account" {
		t.Errorf("its pending delivery: %+v %v", d, err)
	}
	if ds, _, err := db.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Limit: 10}); err != nil || len(ds) != 4 {
		t.Errorf("its delivery log: %d deliveries, %v", len(ds), err)
	}
	if _, as, err := db.Delivery(ctx, w.ID, sent[0]); err != nil || len(as) != 2 {
		t.Errorf("a delivery's attempts: %d, %v", len(as), err)
	}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		added, err := tx.InsertDelivery(store.Delivery{ID: store.NewDeliveryID(deleted), WebhookID: w.ID, AccountID: w.AccountID,
			EventID: "evt_late", Event: events.VisibilityChange, Payload: []byte(`{}`), Status: store.DeliveryPending,
			CreatedAt: deleted, UpdatedAt: deleted})
		if added || err != nil {
			t.Errorf("a delivery added to the deleted webhook: %v %v", added, err)
		}
		if err := tx.DeleteWebhook(w.AccountID, w.ID, "again", deleted); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted twice: %v", err)
		}
		return nil
	}))
	if ws, err := db.MatchWebhooks(ctx, w.AccountID, "", w.Domain); err != nil || len(ws) != 0 {
		t.Errorf("matched: %+v %v", ws, err)
	}
	if n, err := db.CountWebhooks(ctx, w.AccountID, false); err != nil || n != 0 {
		t.Errorf("counted: %d %v", n, err)
	}
	for _, del := range []bool{false, true} {
		ws, _, err := db.ListWebhooks(ctx, store.WebhookFilter{AccountID: w.AccountID, Deleted: del})
		if err != nil || len(ws) != map[bool]int{false: 0, true: 1}[del] {
			t.Errorf("listed (deleted %v): %+v %v", del, ws, err)
		}
	}

	// Its deliveries are younger than the cut: it stays.
	cut := deleted.Add(time.Hour)
	if n, err := db.PruneDeleted(ctx, cut, 10); err != nil || n != 0 {
		t.Fatalf("pruned %d deleted webhooks with deliveries, %v", n, err)
	}
	if _, err := db.Webhook(ctx, w.AccountID, w.ID); err != nil {
		t.Fatal(err)
	}
	// Once they have aged out, it goes.
	if n, err := db.PruneDeliveries(ctx, cut, 10); err != nil || n != 4 {
		t.Fatalf("pruned %d deliveries, %v", n, err)
	}
	if n, err := db.PruneDeleted(ctx, deleted, 10); err != nil || n != 0 {
		t.Fatalf("pruned %d webhooks deleted at or after the cut, %v", n, err)
	}
	if n, err := db.PruneDeleted(ctx, cut, 10); err != nil || n != 1 {
		t.Fatalf("pruned %d deleted webhooks, %v", n, err)
	}
	if _, err := db.Webhook(ctx, w.AccountID, w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after its history aged out: %v", err)
	}
	if n := count(t, path, "webhook_attempts"); n != 0 {
		t.Errorf("%d attempts left", n)
	}
	plan := strings.Join(queryPlan(t, raw(t, path), sqlite.PruneQueries[1], 0, 0), "\n")
	if !strings.Contains(plan, "webhooks_deleted (deleted_at<?)") || strings.Contains(plan, "SCAN webhook_deliveries") {
		t.Errorf("the prune of deleted webhooks walks:\n%s", plan)
	}
}

// An attempt whose delivery retention removed while it was in flight is
// not recorded, and the transaction it shares with others stands.
func TestOutcomeOfAPrunedDelivery(t *testing.T) {
	db, path, _, w := webhookDB(t)
	ids := deliveriesAt(t, db, w, t0, 2)
	if n, err := db.PruneDeliveries(ctx, t0.Add(time.Second), 10); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		for _, id := range ids {
			if err := tx.RecordOutcome(id, "", store.DeliveryOutcome{Attempt: store.Attempt{DeliveryID: id, N: 3, At: t0, StatusCode: 200},
				Status: store.DeliverySucceeded, Step: 3}); err != nil {
				return err
			}
		}
		return nil
	}))
	if _, as, err := db.Delivery(ctx, w.ID, ids[1]); err != nil || len(as) != 3 {
		t.Errorf("the other delivery's attempts: %d, %v", len(as), err)
	}
	if n := count(t, path, "webhook_attempts"); n != 3 {
		t.Errorf("%d attempts, want the other delivery's 3", n)
	}
}

// The event log is pruned along its primary key, the event ids that begin
// with the event's time, in bounded batches: exactly the events before the
// cut go.
func TestPruneEvents(t *testing.T) {
	db, path, _, w := webhookDB(t)
	var kept []string
	must(t, db.Update(ctx, func(tx store.Tx) error {
		for i := range 30 {
			at := t0.Add(time.Duration(i) * time.Minute)
			ev, err := events.New(events.VisibilityChange, at, w.AccountID, "", w.Domain, map[string]int{"n": i})
			if err != nil {
				return err
			}
			if i >= 12 {
				kept = append([]string{ev.ID}, kept...)
			}
			if err := tx.LogEvent(store.LoggedEvent{ID: ev.ID, AccountID: w.AccountID, Event: ev.Event, Domain: w.Domain,
				Payload: []byte(`{}`), CreatedAt: ev.Timestamp}); err != nil {
				return err
			}
		}
		return nil
	}))
	var batches []int
	for n := 5; n == 5; {
		var err error
		n, err = db.PruneEvents(ctx, t0.Add(12*time.Minute), 5)
		must(t, err)
		batches = append(batches, n)
	}
	left, err := db.RecentEvents(ctx, store.EventFilter{AccountID: w.AccountID, Limit: 100})
	must(t, err)
	var got []string
	for _, e := range left {
		got = append(got, e.ID)
	}
	if !slices.Equal(batches, []int{5, 5, 2}) || !slices.Equal(got, kept) {
		t.Errorf("batches of %v, kept %v; want [5 5 2] and %v kept", batches, got, kept)
	}
	plan := strings.Join(queryPlan(t, raw(t, path), sqlite.PruneQueries[2], "", 0, 0), "\n")
	if !strings.Contains(plan, "sqlite_autoindex_event_log_1 (id<?)") {
		t.Errorf("the prune walks:\n%s", plan)
	}
}
