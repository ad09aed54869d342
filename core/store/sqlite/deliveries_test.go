package sqlite_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// A webhook's deliveries are listed newest event first, in pages that
// neither skip nor repeat, and replayed by the time of their events; both
// walk the index of (webhook_id, event_id) without sorting.
func TestDeliveriesByEventTime(t *testing.T) {
	db, path, _, w := webhookDB(t)
	type dl struct {
		id, event string
		at        time.Time
		status    string
	}
	var all []dl
	must(t, db.Update(ctx, func(tx store.Tx) error {
		for i := range 40 {
			at := t0.Add(time.Duration(i%20) * time.Minute) // two events a minute
			ev, err := events.New(events.VisibilityChange, at, w.AccountID, "", w.Domain, map[string]int{"n": i})
			if err != nil {
				return err
			}
			d := dl{fmt.Sprintf("dlv_%02d", i), ev.ID, at, []string{store.DeliveryFailed, store.DeliverySucceeded}[i%3/2]}
			if _, err := tx.InsertDelivery(store.Delivery{ID: d.id, WebhookID: w.ID, AccountID: w.AccountID, EventID: ev.ID,
				Event: ev.Event, Payload: []byte(`{}`), Status: d.status, CreatedAt: t0.Add(time.Hour), UpdatedAt: t0}); err != nil {
				return err
			}
			all = append(all, d)
		}
		return nil
	}))
	slices.SortFunc(all, func(a, b dl) int { return strings.Compare(b.event, a.event) })
	for _, status := range []string{"", store.DeliveryFailed} {
		var want []string
		for _, d := range all {
			if status == "" || d.status == status {
				want = append(want, d.id)
			}
		}
		for _, limit := range []int{1, 7, 40, 100} {
			var got []string
			cursor := ""
			for range len(all) + 1 {
				page, next, err := db.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Status: status, Cursor: cursor, Limit: limit})
				must(t, err)
				for _, d := range page {
					got = append(got, d.ID)
				}
				if cursor = next; cursor == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("status %q, limit %d: pages hold %v, want %v", status, limit, got, want)
			}
		}
	}
	if _, _, err := db.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Cursor: "not base64!"}); !errors.Is(err, store.ErrMalformed) {
		t.Errorf("a malformed cursor: %v", err)
	}

	// Replay [5 min, 12 min): the failed deliveries of the events of those
	// minutes, and no other.
	since, until := t0.Add(5*time.Minute), t0.Add(12*time.Minute)
	var want []string
	for _, d := range all {
		if d.status == store.DeliveryFailed && !d.at.Before(since) && d.at.Before(until) {
			want = append(want, d.id)
		}
	}
	var n int
	must(t, db.Update(ctx, func(tx store.Tx) (err error) {
		n, err = tx.Redeliver(w.ID, nil, since, until, t0.Add(2*time.Hour))
		return err
	}))
	pending, _, err := db.ListDeliveries(ctx, store.DeliveryFilter{WebhookID: w.ID, Status: store.DeliveryPending, Limit: 100})
	must(t, err)
	var got []string
	for _, d := range pending {
		got = append(got, d.ID)
	}
	if n != len(want) || !slices.Equal(got, want) {
		t.Errorf("replay of [5, 12) min: %d scheduled, pending %v; want %v", n, got, want)
	}

	r := raw(t, path)
	for _, q := range []string{
		`SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND status = ? AND event_id < ? ORDER BY event_id DESC LIMIT ?`,
		`UPDATE webhook_deliveries SET status = 'pending' WHERE webhook_id = ? AND status = 'failed' AND event_id >= ? AND event_id < ?`,
	} {
		plan := queryPlan(t, r, q, make([]any, strings.Count(q, "?"))...)
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "(webhook_id=? AND event_id") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nwalks:\n%s", q, p)
		}
	}
}
