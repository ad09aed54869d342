package delivery

import (
	"context"
	"time"
)

// Retention: the engine's pruner forgets, every PruneEvery, the deliveries
// older than Options.Retention with their attempts, then the deleted
// targets whose deliveries have all gone, then the logged events older
// than EventLogRetention, then what Options.Prune adds, in short writes of
// PruneBatch rows.

// DefaultRetention is how long deliveries and their attempts are kept, as
// Svix keeps payloads and Stripe its events: 30 days.
const DefaultRetention = 30 * 24 * time.Hour

// EventLogRetention is how long the event log keeps an event (as long as
// the bus keeps its messages).
const EventLogRetention = 7 * 24 * time.Hour

// PruneBatch bounds the rows one write of the retention removes, so that
// the writer is never held long: a batch of deliveries, each with its
// attempts, holds it for about 3 ms (docs/benchmarks.md).
const PruneBatch = 200

// Pruning is more of what the retention forgets: What (for the log), the
// Age past which it goes, and the store's bounded delete of it, which
// forgets at most limit of what is older than before and says how many
// went.
type Pruning struct {
	What  string
	Age   time.Duration
	Prune func(ctx context.Context, before time.Time, limit int) (int, error)
}

// prune forgets what retention no longer keeps, every PruneEvery until ctx
// ends.
func (e *Engine) prune(ctx context.Context) {
	t := time.NewTicker(e.opt.PruneEvery)
	defer t.Stop()
	for {
		e.pruneOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneOnce forgets the deliveries, with their attempts, made before the
// retention; then the deleted webhooks and connections whose deliveries
// have all gone; then the logged events past EventLogRetention; then what
// Options.Prune adds. Each batch of PruneBatch rows is a write of its own:
// the group commit's callers take their turn between two.
func (e *Engine) pruneOnce(ctx context.Context) {
	now := e.opt.Now()
	steps := append([]Pruning{
		{"deliveries", e.opt.Retention, e.store.PruneDeliveries},
		{"deleted webhooks and connections", e.opt.Retention, e.store.PruneDeleted},
		{"logged events", EventLogRetention, e.store.PruneEvents},
	}, e.opt.Prune...)
	for _, step := range steps {
		total, batches, longest := 0, 0, time.Duration(0)
		for {
			start := time.Now()
			n, err := step.Prune(ctx, now.Add(-step.Age), PruneBatch)
			if err != nil {
				if ctx.Err() == nil {
					e.log.Warn("retention: pruning failed", "what", step.What, "err", err)
				}
				return
			}
			total, batches, longest = total+n, batches+1, max(longest, time.Since(start))
			if n < PruneBatch {
				break
			}
		}
		if total > 0 {
			e.log.Info("retention: pruned", "what", step.What, "count", total, "batches", batches, "longest_batch", longest)
		}
	}
}
