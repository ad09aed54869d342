package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// BenchmarkPrune measures how long one batch of the retention holds the
// writer: delivery.PruneBatch deliveries, each with a 1 KB payload and
// three attempts (the engine's batch), deleted in one statement from a
// database file holding 40 such batches to prune and as many younger
// deliveries that stay. While a batch runs no Update commits, so its time
// is the longest a write waits for it.
func BenchmarkPrune(b *testing.B) {
	ctx := context.Background()
	db, _, a := benchDB(b)
	defer db.Close()
	now := time.Now()
	cut := now.Add(-delivery.DefaultRetention)
	w := store.Webhook{ID: "wh_bench", AccountID: a.ID, Domain: "example.com", URL: "https://example.com/hook",
		Events: []string{events.VisibilityChange}, Enabled: true, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", CreatedAt: cut, UpdatedAt: cut}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(w) }); err != nil {
		b.Fatal(err)
	}
	const batches = 40
	payload := []byte(`{"data":"` + strings.Repeat("x", 1000) + `"}`)
	fill := func(from time.Time) {
		for range batches {
			err := db.Update(ctx, func(tx store.Tx) error {
				for range delivery.PruneBatch {
					from = from.Add(time.Millisecond)
					ev, err := events.New(events.VisibilityChange, from, a.ID, "", w.Domain, nil)
					if err != nil {
						return err
					}
					d := store.Delivery{ID: store.NewDeliveryID(from), WebhookID: w.ID, AccountID: a.ID, EventID: ev.ID, Event: ev.Event,
						Payload: payload, Status: store.DeliveryPending, CreatedAt: from, UpdatedAt: from}
					if _, err := tx.InsertDelivery(d); err != nil {
						return err
					}
					for n := 1; n <= 3; n++ {
						err := tx.RecordOutcome(d.ID, "", store.DeliveryOutcome{Status: store.DeliverySucceeded, Step: n, Attempt: store.Attempt{
							DeliveryID: d.ID, N: n, At: from, StatusCode: 200, Latency: time.Millisecond, ResponseBody: `{"ok":true}`}})
						if err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	fill(cut.Add(-time.Hour)) // to prune
	fill(cut)                 // to keep

	b.ResetTimer()
	var held []time.Duration
	for range b.N { // the first prunes all; any later one finds nothing
		for {
			start := time.Now()
			n, err := db.PruneDeliveries(ctx, cut, delivery.PruneBatch)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			held = append(held, time.Since(start))
			if n != delivery.PruneBatch {
				b.Fatalf("a batch of %d", n)
			}
		}
	}
	b.StopTimer()
	slices.Sort(held)
	p50, p99 := held[len(held)/2], held[len(held)*99/100]
	fmt.Printf("| prune: %d batches of %d deliveries (1 KB, 3 attempts each) | writer held p50 %.1f ms, p99 %.1f ms, max %.1f ms |\n",
		len(held), delivery.PruneBatch, msf(p50), msf(p99), msf(held[len(held)-1]))
	b.ReportMetric(msf(p50), "ms/batch")
}
