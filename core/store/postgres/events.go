package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	buspg "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// The outbox is core/bus/postgres's: Tx.Publish writes the messages it is
// given through the outbox's Watermill SQL publisher, in the transaction:
// into the topic's table, where bus postgres reads them, or enveloped into
// the forwarder's table for another bus (ForBus). A reader takes each one
// once its transaction has committed, in the order of the transactions'
// ids.

// Outbox is where the store's transactions publish events.
func (db *DB) Outbox() *buspg.Outbox { return db.outbox }

// ForBus makes the outbox that of bus (the setting), before the first
// Update: the events go where bus postgres reads them (the default), or,
// for any other bus, to the forwarder.
func (db *DB) ForBus(bus string) { db.outbox = buspg.NewOutbox(db.pool, bus) }

// Publish keeps messages for the outbox: the transaction writes them at
// its end (publish), each run of one topic's in one statement.
func (t *txn) Publish(topic string, msgs ...*message.Message) error {
	if n := len(t.held); n > 0 && t.held[n-1].topic == topic {
		t.held[n-1].msgs = append(t.held[n-1].msgs, msgs...)
	} else {
		t.held = append(t.held, held{topic, slices.Clone(msgs)})
	}
	for _, m := range msgs {
		t.kinds = append(t.kinds, events.KindOf(m))
	}
	return nil
}

// held is a run of one topic's messages published in a transaction.
type held struct {
	topic string
	msgs  []*message.Message
}

// run runs fn in the transaction, then writes what it published.
func (t *txn) run(fn func(store.Tx) error) error {
	if err := fn(t); err != nil {
		return err
	}
	return t.publish()
}

// publish writes the messages held to the outbox, in their order, a run
// a statement. Nothing reads the outbox's rows in the transaction: they
// go with its COMMIT (the statements under the transaction's context).
func (t *txn) publish() error {
	for _, h := range t.held {
		for _, m := range h.msgs {
			m.SetContext(deferred(t.ctx))
		}
		if err := t.db.outbox.Publisher(t.tx).Publish(h.topic, h.msgs...); err != nil {
			return fmt.Errorf("postgres: publish: %w", err)
		}
	}
	t.held = nil
	return nil
}

// LogEvents writes the events in one statement, a column an array.
func (t *txn) LogEvents(es ...store.LoggedEvent) error {
	if len(es) == 0 {
		return nil
	}
	var c columns
	for _, e := range es {
		c.row()
		c.text(e.ID, e.AccountID, e.ClientID, e.Event, e.Domain)
		c.bytes(e.Payload)
		c.time(e.CreatedAt)
	}
	if err := c.err; err != nil {
		return fmt.Errorf("postgres: log events: %w", err)
	}
	// Nothing in the transaction reads the log: the rows go with its
	// COMMIT, sparing the fan-out's transactions a round trip.
	_, err := t.tx.Exec(deferred(t.ctx), `INSERT INTO event_log (id, account_id, client_id, event, domain, payload, created_at, created_at_ns)
		SELECT * FROM unnest(`+c.params("text", "text", "text", "text", "text", "bytea", "timestamptz", "int2")+`)
		ON CONFLICT (id) DO NOTHING`, c.args()...)
	if err != nil {
		return fmt.Errorf("postgres: log events: %w", err)
	}
	return nil
}

// RecentEvents returns one page of an owner's logged events, newest first.
func (db *DB) RecentEvents(ctx context.Context, f store.EventFilter) ([]store.LoggedEvent, string, error) {
	var w where
	w.and("account_id = ?", f.AccountID)
	if !f.AllClients {
		w.and("client_id = ?", f.ClientID)
	}
	if f.Event != "" {
		w.and("event = ?", f.Event)
	}
	return listPage(ctx, db, "events", `SELECT id, account_id, client_id, event, domain, payload, created_at, created_at_ns FROM event_log`,
		w, "created_at", f.Cursor, f.Limit, func(s scanner) (store.LoggedEvent, error) {
			var e store.LoggedEvent
			var created tcol
			err := s.Scan(&e.ID, &e.AccountID, &e.ClientID, &e.Event, &e.Domain, &e.Payload, &created.t, &created.ns)
			e.CreatedAt = created.time()
			return e, err
		}, func(e store.LoggedEvent) (time.Time, string) { return e.CreatedAt, e.ID })
}
