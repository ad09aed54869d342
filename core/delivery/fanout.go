package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/tracing"
)

// The fan-out: the Watermill handler of the event topic (webhook-fanout)
// turns each event into its event-log entry and one delivery per webhook or
// connection that wants it (Wants). insert commits the deliveries of the
// events handled meanwhile in one transaction, before their messages are
// acknowledged, and offers the new ones to the dispatcher (dispatch.go),
// so that they go out without a claim.

// fanout turns one event into its log entry and its deliveries.
func (e *Engine) fanout(msg *message.Message) error {
	ev, err := events.FromMessage(msg)
	if err != nil {
		e.log.ErrorContext(msg.Context(), "webhooks: unreadable event dropped", "message", msg.UUID, "err", err)
		return nil // a malformed message would be redelivered forever
	}
	// The targets as of now, after the event's commit: a webhook or
	// connection made before the event gets it. The events handled at once
	// share one check of the store's caches (on PostgreSQL, a round trip).
	ctx := cache.AsOf(msg.Context(), time.Now())
	var targets []*store.Webhook
	var logged *store.LoggedEvent
	if ev.WebhookID != "" {
		w, err := e.store.Webhook(ctx, ev.AccountID, ev.WebhookID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && w.Deleted()) {
			return nil
		} else if err != nil {
			return err
		}
		targets = append(targets, &w)
	} else {
		ws, err := e.store.MatchWebhooks(ctx, ev.AccountID, ev.ClientID, ev.Domain)
		if err != nil {
			return err
		}
		for i := range ws {
			if Wants(ws[i], ev) {
				targets = append(targets, &ws[i])
			}
		}
		logged = &store.LoggedEvent{ID: ev.ID, AccountID: ev.AccountID, ClientID: ev.ClientID, Event: ev.Event,
			Domain: ev.Domain, Payload: msg.Payload, CreatedAt: ev.Timestamp}
	}
	if len(targets) == 0 && logged == nil {
		return nil
	}
	now := e.opt.Now()
	trace := tracing.Parent(msg.Context()) // the fan-out's span, which each attempt continues
	ds := make([]claimed, 0, len(targets))
	for _, w := range targets {
		d := &store.Delivery{ID: store.NewDeliveryID(now), WebhookID: w.ID, AccountID: w.AccountID,
			EventID: ev.ID, Event: ev.Event, Payload: msg.Payload, Status: store.DeliveryPending,
			NextAttemptAt: now, CreatedAt: now, UpdatedAt: now, Trace: trace}
		if !w.Enabled {
			// Kept, not attempted: a replay after enabling sends it.
			d.Status, d.NextAttemptAt, d.LastError = store.DeliveryFailed, time.Time{}, "the "+targetNoun(*w)+" was disabled"
		}
		ds = append(ds, claimed{d, w})
	}
	req := insertion{log: logged, ds: ds, done: make(chan error, 1)}
	select {
	case e.inserts <- req:
	case <-e.stopped:
		return errors.New("webhooks: stopping")
	}
	return <-req.done // acked only once the deliveries are committed
}

// FanoutInFlight is the MaxInFlight to give the fan-out's subscriber: how
// many events it handles at once, their deliveries committed together.
// FanoutBatch is its BatchSize: the subscriber reads the next messages only
// once a batch is all acknowledged, so a batch of several windows keeps
// that pause (the last events' commit) rare.
const (
	FanoutInFlight = 256
	FanoutBatch    = 4 * FanoutInFlight
)

// insertion is one event's log entry and deliveries, waiting for a
// transaction.
type insertion struct {
	log  *store.LoggedEvent // nil for an event aimed at one target
	ds   []claimed
	done chan error
}

func targetNoun(w store.Webhook) string {
	if w.IsConnection() {
		return "connection"
	}
	return "webhook"
}

// insert commits the deliveries of the events handled meanwhile in one
// transaction (group commit): with several events in flight (the
// subscriber's MaxInFlight), one write serves them all.
func (e *Engine) insert() {
	batch := make([]insertion, 0, 256)
	for {
		select {
		case req := <-e.inserts:
			batch = append(batch[:0], req)
		case <-e.stopped:
			return
		}
	drain:
		for len(batch) < cap(batch) {
			select {
			case req := <-e.inserts:
				batch = append(batch, req)
			default:
				break drain
			}
		}
		var pending []claimed
		for _, req := range batch {
			for _, c := range req.ds {
				if c.d.Status == store.DeliveryPending {
					pending = append(pending, c)
				}
			}
		}
		reserved := e.reserve(pending) // leases some: before they are copied
		var logs []store.LoggedEvent
		var ds []store.Delivery
		for _, req := range batch {
			if req.log != nil {
				logs = append(logs, *req.log)
			}
			for _, c := range req.ds {
				ds = append(ds, *c.d)
			}
		}
		added := make(map[*store.Delivery]bool, len(reserved))
		err := e.store.Update(context.Background(), func(tx store.Tx) error {
			clear(added)
			if err := tx.LogEvents(logs...); err != nil {
				return err
			}
			// A webhook deleted meanwhile gets none.
			ok, err := tx.InsertDeliveries(ds)
			if err != nil {
				return err
			}
			i := 0
			for _, req := range batch {
				for _, c := range req.ds {
					if ok[i] {
						added[c.d] = true
					}
					i++
				}
			}
			return nil
		})
		for _, req := range batch {
			req.done <- err
		}
		if err != nil {
			clear(added)
		}
		e.offer(reserved, added)
	}
}

// Wants reports whether a webhook or connection is to receive an event: it
// subscribes to the kind and the domain (a connection with no domains takes
// every domain) and, for a visibility change, the score moved at least its
// minimum (the first reading of a domain always counts), for a citation
// change, the engine's citation rate moved at least its minimum, for
// crawler errors, the error hits reach its minimum. A
// disabled one wants its events too: they are kept as failed deliveries.
func Wants(w store.Webhook, ev events.Event) bool {
	if !containsKind(w.Events, ev.Event) {
		return false
	}
	if w.IsConnection() {
		if len(w.Domains) > 0 && !containsKind(w.Domains, ev.Domain) {
			return false
		}
	} else if w.Domain != ev.Domain {
		return false
	}
	if ev.Event == events.VisibilityChange && ev.ScoreChange >= 0 && w.MinScoreChange > 0 {
		return ev.ScoreChange >= w.MinScoreChange
	}
	if ev.Event == events.CitationChange {
		return ev.CitationChange >= float64(w.MinCitationChange)
	}
	if ev.Event == events.CrawlerErrors {
		return ev.CrawlerErrors >= int64(w.MinCrawlerErrors)
	}
	return true
}

func containsKind(kinds []string, k string) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
