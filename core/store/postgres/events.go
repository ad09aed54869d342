package postgres

import (
	"context"
	"fmt"
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

// Publish writes messages to the outbox in this transaction.
func (t *txn) Publish(topic string, msgs ...*message.Message) error {
	// The publisher writes under the first message's context: the
	// transaction's, so that a conflict there is seen as one.
	// Nothing reads the outbox's rows in the transaction: they go with
	// its COMMIT.
	for _, m := range msgs {
		m.SetContext(deferred(t.ctx))
	}
	if err := t.db.outbox.Publisher(t.tx).Publish(topic, msgs...); err != nil {
		return fmt.Errorf("postgres: publish: %w", err)
	}
	for _, m := range msgs {
		t.kinds = append(t.kinds, events.KindOf(m))
	}
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
