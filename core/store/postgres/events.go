package postgres

import (
	"context"
	"fmt"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aivis/aivis/core/store"
)

// The outbox is Watermill SQL's PostgreSQL pub/sub: a table per topic
// (OutboxSchema) into which Tx.Publish writes, in the transaction, the
// messages it is given, through Watermill's own publisher on that
// transaction; a Watermill SQL subscriber (or a forwarder to another bus)
// reads each one once its transaction has committed, in the order of the
// transactions' ids.

// OutboxSchema is the outbox's Watermill schema: Watermill's default for
// PostgreSQL, the payload in a bytea (an event's body is any bytes).
// Whatever reads the outbox uses this same schema.
func OutboxSchema() wsql.DefaultPostgreSQLSchema {
	return wsql.DefaultPostgreSQLSchema{GeneratePayloadType: func(string) string { return "BYTEA" }}
}

// Outbox is where the store's transactions publish events: the database
// the pool is on, in OutboxSchema's tables.
type Outbox struct {
	Pool *pgxpool.Pool
}

// Outbox is this database's outbox.
func (db *DB) Outbox() Outbox { return Outbox{Pool: db.pool} }

// Publish writes messages to a topic's table in this transaction.
func (t *txn) Publish(topic string, msgs ...*message.Message) error {
	if err := t.db.outboxTable(t.ctx, topic); err != nil {
		return err
	}
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(t.tx), wsql.PublisherConfig{SchemaAdapter: OutboxSchema()}, nil)
	if err != nil {
		return fmt.Errorf("postgres: publish: %w", err)
	}
	// The publisher writes under the first message's context: the
	// transaction's, so that a conflict there is seen as one.
	for _, m := range msgs {
		m.SetContext(t.ctx)
	}
	if err := pub.Publish(topic, msgs...); err != nil {
		return fmt.Errorf("postgres: publish: %w", err)
	}
	return nil
}

// outboxTable makes sure a topic's table exists, once per process and
// topic: Watermill's own statements, in a transaction of their own under
// its advisory lock (DDL has no place in the caller's transaction), on a
// connection of their own: taking one from the pool could wait forever
// while every pooled connection is held by an Update publishing for the
// first time.
func (db *DB) outboxTable(ctx context.Context, topic string) error {
	if _, ok := db.topics.Load(topic); ok {
		return nil
	}
	qs, err := OutboxSchema().SchemaInitializingQueries(wsql.SchemaInitializingQueriesParams{Topic: topic})
	if err != nil {
		return fmt.Errorf("postgres: outbox table of %s: %w", topic, err)
	}
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig)
	if err == nil {
		defer conn.Close(context.WithoutCancel(ctx))
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, q := range qs {
				if _, err := tx.Exec(ctx, q.Query, q.Args...); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("postgres: outbox table of %s: %w", topic, err)
	}
	db.topics.Store(topic, true)
	return nil
}

func (t *txn) LogEvent(e store.LoggedEvent) error {
	_, err := t.tx.Exec(t.ctx, `INSERT INTO event_log (id, account_id, client_id, event, domain, payload, created_at, created_at_ns)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.AccountID, e.ClientID, e.Event, e.Domain, e.Payload, ts(e.CreatedAt), ns(e.CreatedAt))
	if err != nil {
		return fmt.Errorf("postgres: log event: %w", err)
	}
	return nil
}

// RecentEvents lists an owner's logged events, newest first.
func (db *DB) RecentEvents(ctx context.Context, f store.EventFilter) ([]store.LoggedEvent, error) {
	var w where
	w.and("account_id = ?", f.AccountID)
	if !f.AllClients {
		w.and("client_id = ?", f.ClientID)
	}
	if f.Event != "" {
		w.and("event = ?", f.Event)
	}
	out, err := collect(ctx, db.pool, func(s scanner) (store.LoggedEvent, error) {
		var e store.LoggedEvent
		var created tcol
		err := s.Scan(&e.ID, &e.AccountID, &e.ClientID, &e.Event, &e.Domain, &e.Payload, &created.t, &created.ns)
		e.CreatedAt = created.time()
		return e, err
	}, `SELECT id, account_id, client_id, event, domain, payload, created_at, created_at_ns FROM event_log WHERE `+w.String()+
		fmt.Sprintf(` ORDER BY created_at DESC, created_at_ns DESC, id DESC LIMIT %d`, max(f.Limit, 1)), w.args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: recent events: %w", err)
	}
	return out, nil
}
