package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	bus "github.com/aivis/aivis/core/bus/sqlite"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// Publish writes messages to the bus's table in this transaction; Update
// wakes this process's subscribers once it commits.
func (t *txn) Publish(topic string, msgs ...*message.Message) error {
	if err := bus.PublishTx(bg, t.tx, topic, msgs...); err != nil {
		return fmt.Errorf("sqlite: publish: %w", err)
	}
	t.topics = append(t.topics, topic)
	for _, m := range msgs {
		t.kinds = append(t.kinds, events.KindOf(m))
	}
	return nil
}

// LogEvents writes one statement an event: in process, a statement costs
// no round trip.
func (t *txn) LogEvents(es ...store.LoggedEvent) error {
	for _, e := range es {
		_, err := t.tx.Exec(`INSERT INTO event_log (id, account_id, client_id, event, domain, payload, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			e.ID, e.AccountID, nullStr(e.ClientID), e.Event, e.Domain, e.Payload, stamp(e.CreatedAt))
		if err != nil {
			return fmt.Errorf("sqlite: log event: %w", err)
		}
	}
	return nil
}

// RecentEvents returns one page of an owner's logged events, newest first.
func (db *DB) RecentEvents(ctx context.Context, f store.EventFilter) ([]store.LoggedEvent, string, error) {
	q := `SELECT id, account_id, client_id, event, domain, payload, created_at FROM event_log WHERE account_id = ?`
	args := []any{f.AccountID}
	if !f.AllClients {
		q += ` AND client_id IS ?`
		args = append(args, nullStr(f.ClientID))
	}
	if f.Event != "" {
		q += ` AND event = ?`
		args = append(args, f.Event)
	}
	return listPage(ctx, db.r, "events", q, args, f.Cursor, f.Limit, func(s scanner) (store.LoggedEvent, error) {
		var e store.LoggedEvent
		var client sql.NullString
		var created int64
		err := s.Scan(&e.ID, &e.AccountID, &client, &e.Event, &e.Domain, &e.Payload, &created)
		e.ClientID, e.CreatedAt = client.String, time.Unix(0, created).UTC()
		return e, err
	}, func(e store.LoggedEvent) (time.Time, string) { return e.CreatedAt, e.ID })
}
