package delivery

import (
	"context"
	"time"

	"github.com/aivis/aivis/core/store"
)

// The hold: a connection whose connector is registered but does not run
// on this instance (its binary missing, a build not registered, crashing
// at start: hub.ErrUnavailable) had no attempt made. Its deliveries are
// neither failed nor retried on the schedule: they stay pending, their
// attempts and step as they were, and their leases end at once, so that
// another instance on which the connector runs takes them at its next
// claim; this one leaves the connection alone (neither claims nor queues
// its deliveries) for ConnectorWait, then tries again. Once the connector
// runs, they are delivered.

// DefaultConnectorWait is how long the deliveries of a connection whose
// connector does not run wait before they are tried again.
const DefaultConnectorWait = 10 * time.Second

// hold makes the deliveries of an attempt that found their connector
// unavailable wait, recording nothing of them: their leases end now, and
// their connection is held here for ConnectorWait.
func (e *Engine) hold(ctx context.Context, cs []claimed) {
	now := e.opt.Now()
	until := now.Add(e.opt.ConnectorWait)
	w := cs[0].w
	e.heldMu.Lock()
	_, before := e.held[w.ID]
	e.held[w.ID] = until
	e.heldMu.Unlock()
	if !before {
		e.log.Warn("connections: the connector does not run: the connection's deliveries wait for it, consuming no attempt",
			"connection", w.ID, "connector", w.Connector, "retry_in", e.opt.ConnectorWait)
	}
	ds := make([]store.Delivery, len(cs))
	for i, c := range cs {
		ds[i] = *c.d
	}
	if _, err := e.store.RenewLeases(context.WithoutCancel(ctx), ds, now); err != nil {
		// Their leases end as they were: another instance waits that long.
		e.log.Warn("connections: the waiting deliveries' leases could not be given back", "connection", w.ID, "count", len(ds), "err", err)
	}
}

// release forgets that a connection was held: its connector answered.
func (e *Engine) release(id string) {
	e.heldMu.Lock()
	defer e.heldMu.Unlock()
	if _, ok := e.held[id]; ok {
		delete(e.held, id)
		e.log.Info("connections: the connector runs again: the connection's deliveries go on", "connection", id)
	}
}

// isHeld says whether a connection's deliveries wait for its connector at
// now.
func (e *Engine) isHeld(id string, now time.Time) bool {
	e.heldMu.Lock()
	defer e.heldMu.Unlock()
	until, ok := e.held[id]
	return ok && now.Before(until)
}

// holding lists the connections held at now.
func (e *Engine) holding(now time.Time) []string {
	e.heldMu.Lock()
	defer e.heldMu.Unlock()
	var out []string
	for id, until := range e.held {
		if now.Before(until) {
			out = append(out, id)
		}
	}
	return out
}
