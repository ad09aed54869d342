package delivery

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/store"
)

// The recorder: writes the outcomes of attempts in batches, one
// transaction each: each attempt, and what the policy (decide, policy.go)
// says follows for its delivery and its target (the next attempt,
// success, failure, disabling with its event, a subscription deleted).
// It remembers the targets it knows healthy, so that a success of one
// costs no read of it.

// record writes outcomes in batches, one transaction each, until the
// channel closes.
func (e *Engine) record() {
	batch := make([]outcome, 0, 256)
	for o := range e.outcomes {
		batch = append(batch[:0], o)
	drain:
		for len(batch) < cap(batch) {
			select {
			case o, ok := <-e.outcomes:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		// The attempts happened: keep trying to write them down. An outcome
		// the store refuses fails its batch: then each is written alone, so
		// that it fails alone. Should one fail for good, its lease ends and
		// it is attempted again.
		if err := e.writeOutcomes(batch, 10); err != nil && len(batch) > 1 {
			for i := range batch {
				e.writeOutcomes(batch[i:i+1], 1)
			}
		}
	}
}

// writeOutcomes writes a batch of outcomes in one transaction, trying up
// to tries times while the store fails, but not again once it refused
// their text: trying again cannot mend that.
func (e *Engine) writeOutcomes(batch []outcome, tries int) error {
	for try := 1; ; try++ {
		var notes healthNotes
		err := e.store.Update(context.Background(), func(tx store.Tx) error {
			notes = healthNotes{}
			return e.apply(tx, batch, &notes)
		})
		if err == nil {
			e.noteHealth(notes)
			e.count(batch, notes.outcomes)
			for _, o := range batch {
				if o.verdict != delivered {
					e.Wake() // a retry is scheduled: the dispatcher's timer learns when
					break
				}
			}
			return nil
		}
		e.log.Error("webhooks: record attempts", "count", len(batch), "try", try, "err", err)
		if try >= tries || store.IsInvalidText(err) {
			return err
		}
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
	}
}

// healthNotes is what a batch of outcomes wrote of its targets' health:
// the success times written (with the failures reset), and the targets
// that failed.
type healthNotes struct {
	healthy  map[string]time.Time
	failed   map[string]bool
	outcomes []string // what each attempt of the batch came to, for the metrics
}

// noteHealth remembers, once their transaction committed, the successes
// this engine wrote and forgets the targets that failed since.
func (e *Engine) noteHealth(n healthNotes) {
	e.healthMu.Lock()
	defer e.healthMu.Unlock()
	for id := range n.failed {
		delete(e.healthy, id)
	}
	for id, at := range n.healthy {
		if len(e.healthy) >= maxHealthy {
			clear(e.healthy)
		}
		e.healthy[id] = at
	}
}

// maxHealthy bounds the memory of healthy targets; past it, it starts
// afresh (and the next success of each reads its target again).
const maxHealthy = 100_000

// knownHealthy reports that this engine wrote a success of the target,
// with its failures reset, less than a minute before at and saw no failure
// since: a success at at has nothing to write of the target's health.
// (Failures another process records are reset by this engine's next
// success a minute on at the latest, long before they could disable it.)
func (e *Engine) knownHealthy(id string, at time.Time) bool {
	e.healthMu.Lock()
	last, ok := e.healthy[id]
	e.healthMu.Unlock()
	return ok && at.Sub(last) <= time.Minute
}

// apply writes a batch of outcomes and their consequences for the webhooks.
func (e *Engine) apply(tx store.Tx, batch []outcome, notes *healthNotes) error {
	hooks := make(map[string]*store.Webhook)
	changed := make(map[string]bool)  // written back
	disabled := make(map[string]bool) // turned off too
	notes.healthy, notes.failed = make(map[string]time.Time), make(map[string]bool)
	held := make([]store.HeldOutcome, 0, len(batch))
	for _, o := range batch {
		w := hooks[o.w.ID]
		if w == nil && o.verdict == delivered && !notes.failed[o.w.ID] && e.knownHealthy(o.w.ID, o.attempt.At) {
			// The common case costs no read of the target: a success of a
			// target known healthy changes nothing of it (decide).
			held = append(held, store.HeldOutcome{DeliveryID: o.d.ID, Lease: o.d.Lease,
				DeliveryOutcome: store.DeliveryOutcome{Attempt: o.attempt, Step: o.d.Step + 1, Status: store.DeliverySucceeded}})
			notes.outcomes = append(notes.outcomes, metrics.Delivered)
			continue
		}
		if w == nil {
			cur, err := tx.Webhook(o.w.AccountID, o.w.ID)
			if errors.Is(err, store.ErrNotFound) || (err == nil && cur.Deleted()) {
				cur = *o.w // deleted meanwhile: nothing of it changes, and its deliveries end
				cur.ID = ""
			} else if err != nil {
				return err
			}
			w = &cur
			hooks[o.w.ID] = w
		}
		at := o.attempt.At
		step := o.d.Step + 1
		dec := decide(tried{verdict: o.verdict, retryIn: o.retryIn, step: step, at: at, error: o.attempt.Error},
			targetOf(w), rand.Float64()*2-1)
		w.FailingSince, w.Failures, w.LastSuccessAt = dec.health.failingSince, dec.health.failures, dec.health.lastSuccessAt
		if dec.changed {
			changed[o.w.ID] = true
		}
		switch {
		case dec.unsubscribe != "":
			// Deleted, its history kept until it ages out.
			err := tx.DeleteWebhook(w.AccountID, w.ID, dec.unsubscribe, at)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			e.log.InfoContext(o.ctx(), "connections: subscription deleted: the destination is gone", "connection", w.ID, "why", o.attempt.Error)
			w.ID = "" // its deliveries end
		case dec.disable != "":
			if err := e.disable(o.ctx(), tx, w, at, dec.disable); err != nil {
				return err
			}
			disabled[o.w.ID] = true
		}
		if o.verdict != delivered {
			notes.failed[o.w.ID] = true
			delete(notes.healthy, o.w.ID)
		} else if !notes.failed[o.w.ID] {
			notes.healthy[o.w.ID] = w.LastSuccessAt
		}
		held = append(held, store.HeldOutcome{DeliveryID: o.d.ID, Lease: o.d.Lease,
			DeliveryOutcome: store.DeliveryOutcome{Attempt: o.attempt, Step: step, Status: dec.status, Next: dec.next}})
		notes.outcomes = append(notes.outcomes, dec.outcome())
	}
	// Each outcome under the lease its attempt was made under. A lease
	// that ended and went to another claim (a stall past its end, another
	// process) writes nothing: the new holder's outcome stands, and the
	// receiver has seen the event once more, with the same webhook-id.
	// What the attempt said of its target's health still counts.
	lost, err := tx.RecordOutcomes(held)
	if err != nil {
		return err
	}
	for i, l := range lost {
		if l {
			e.log.InfoContext(batch[i].ctx(), "webhooks: outcome of a lost lease dropped", "delivery", held[i].DeliveryID, "lease", held[i].Lease)
		}
	}
	for id := range changed {
		w := hooks[id]
		if w.ID == "" {
			continue
		}
		w.UpdatedAt = e.opt.Now()
		update := tx.UpdateWebhookHealth // the common case: what matching reads is unchanged
		if disabled[id] {
			update = tx.UpdateWebhook
		}
		if err := update(*w); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// targetOf is what the policy reads of a webhook or connection; one
// deleted meanwhile has no id.
func targetOf(w *store.Webhook) target {
	return target{live: w.ID != "", enabled: w.Enabled, subscription: w.Subscription, connection: w.IsConnection(),
		health: health{failingSince: w.FailingSince, failures: w.Failures, lastSuccessAt: w.LastSuccessAt}}
}

// disable turns a webhook or connection off and emits webhook_disabled
// (to the owner's webhooks of the domain) or connection_disabled (to the
// owner's connections), in the same transaction; ctx is the attempt's
// that disabled it, whose trace the event joins.
func (e *Engine) disable(ctx context.Context, tx store.Tx, w *store.Webhook, at time.Time, reason string) error {
	w.Enabled, w.DisabledReason, w.DisabledAt = false, reason, at
	var failing *time.Time
	if !w.FailingSince.IsZero() {
		fs := w.FailingSince.UTC()
		failing = &fs
	}
	var ev events.Event
	var err error
	if w.IsConnection() {
		ev, err = events.New(events.ConnectionDisabled, at, w.AccountID, w.ClientID, "", events.ConnectionDisabledData{
			ConnectionID: w.ID, Connector: w.Connector, Name: w.Name, Reason: reason, DisabledAt: at.UTC(),
			FailingSince: failing, ClientID: events.Optional(w.ClientID)})
	} else {
		ev, err = events.New(events.WebhookDisabled, at, w.AccountID, w.ClientID, w.Domain, events.WebhookDisabledData{
			WebhookID: w.ID, Domain: w.Domain, URL: w.URL, Reason: reason, DisabledAt: at.UTC(), FailingSince: failing})
	}
	if err == nil {
		err = events.Publish(ctx, tx, ev)
	}
	if err != nil {
		return err
	}
	e.log.WarnContext(ctx, "deliveries: "+targetNoun(*w)+" disabled", "id", w.ID, "reason", reason)
	return nil
}
