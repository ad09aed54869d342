package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	bus "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/internal/bustest"
	"github.com/aivis/aivis/internal/testsvc"
)

// pool is a pool of at most maxConns connections on the database at url.
func pool(tb testing.TB, url string, maxConns int32) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = maxConns
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// txPublisher publishes each call in a transaction of its own through the
// outbox, as the store's transactions do.
type txPublisher struct{ o *bus.Outbox }

func (p txPublisher) Publish(topic string, msgs ...*message.Message) error {
	return pgx.BeginFunc(context.Background(), p.o.Pool, func(tx pgx.Tx) error {
		return p.o.Publisher(tx).Publish(topic, msgs...)
	})
}

func (txPublisher) Close() error { return nil }

// TestPubSub runs Watermill's acceptance suite in full on a database of
// its own: every constructor call makes a new Publisher (writing in
// transactions through the outbox, on the store's pool) and Subscriber (on
// the bus's pool), as the processes of a deployment share one database.
func TestPubSub(t *testing.T) {
	db := testsvc.Postgres(t)
	outbox := bus.NewOutbox(pool(t, db, 20), bus.Name)
	// The suite has up to 50 subscribers at once, each holding a
	// connection while it hands a batch over.
	subs := pool(t, db, 60)
	bustest.Suite(t, bustest.Features, func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		sub, err := bus.NewSubscriber(subs, bus.SubscriberConfig{Group: group, PollInterval: 10 * time.Millisecond,
			ResendInterval: 10 * time.Millisecond}, watermill.NopLogger{})
		if err != nil {
			t.Fatal(err)
		}
		return txPublisher{outbox}, sub
	})
}
