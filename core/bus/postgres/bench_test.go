package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	busnats "github.com/aivis/aivis/core/bus/nats"
	bus "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/internal/bustest"
	"github.com/aivis/aivis/internal/testsvc"
)

// The benchmarks use the local PostgreSQL (a database of their own each,
// the server's settings as they are) and report msgs/s, with bustest's
// messages of an aivis event's size. Every Publish is a transaction of its
// own through the outbox, as the store's are.

// pubSub is a publisher through the outbox (the events where bus postgres
// reads them) and a subscriber of the group g on the bus's own pool, as
// the product opens them.
func pubSub(b *testing.B) (message.Publisher, message.Subscriber) {
	db := testsvc.Postgres(b)
	outbox := bus.NewOutbox(pool(b, db, 8), bus.Name)
	subs, err := bus.OpenPool(b.Context(), outbox)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(subs.Close)
	sub, err := bus.NewSubscriber(subs, bus.SubscriberConfig{Group: "g"}, watermill.NopLogger{})
	if err != nil {
		b.Fatal(err)
	}
	return txPublisher{outbox}, sub
}

func BenchmarkPublish(b *testing.B) { bustest.BenchmarkPublish(b, pubSub) }

func BenchmarkConsume(b *testing.B) { bustest.BenchmarkConsume(b, pubSub) }

func BenchmarkPublishConsume(b *testing.B) { bustest.BenchmarkPublishConsume(b, pubSub) }

// BenchmarkPublishTx publishes one event inside a transaction that also
// writes a row of its own, as the store's do: to the topic's table (bus
// postgres), or enveloped to the forwarder's (bus nats).
func BenchmarkPublishTx(b *testing.B) {
	for _, to := range []string{bus.Name, "nats"} {
		b.Run("bus="+to, func(b *testing.B) {
			p := pool(b, testsvc.Postgres(b), 8)
			ctx := context.Background()
			if _, err := p.Exec(ctx, `CREATE TABLE things (id BIGSERIAL PRIMARY KEY, v TEXT)`); err != nil {
				b.Fatal(err)
			}
			outbox := bus.NewOutbox(p, to)
			for b.Loop() {
				err := pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO things (v) VALUES ('x')`); err != nil {
						return err
					}
					return outbox.Publisher(tx).Publish("bench", bustest.Messages(1)...)
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			bustest.ReportRate(b, b.N)
		})
	}
}

// BenchmarkForward is the rate of bus nats end to end: one goroutine
// publishes through the outbox (one event per transaction, then batches of
// 10) while the forwarders move them to NATS, where a subscriber of 256 in
// flight receives and acknowledges every one; with one forwarder, and with
// two on the database, as two instances run them (they take turns).
func BenchmarkForward(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("forwarders=%d", n), func(b *testing.B) {
			bustest.BenchmarkPublishConsume(b, func(b *testing.B) (message.Publisher, message.Subscriber) { return forwarded(b, n) })
		})
	}
}

// BenchmarkForwardBacklog is the forwarders' own rate: they move b.N
// events published to the outbox beforehand (100 a transaction) to NATS,
// where a subscriber of 256 in flight receives and acknowledges every one;
// one forwarder, and two on the database.
func BenchmarkForwardBacklog(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("forwarders=%d", n), func(b *testing.B) {
			pub, sub := forwarded(b, n)
			bustest.Prefill(b, pub, b.N)
			b.ResetTimer()
			ch, err := sub.Subscribe(context.Background(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			bustest.Consume(b, ch, b.N)
			bustest.ReportRate(b, b.N)
		})
	}
}

// forwarded is a publisher through the outbox, enveloped for the
// forwarder, and a subscriber of NATS, 256 in flight, fed by n forwarders,
// each on a pool and a NATS connection of its own: bus nats as n instances
// of the product open it.
func forwarded(b *testing.B, n int) (message.Publisher, message.Subscriber) {
	f := newForwardTo(b, 8)
	f.forwarders(b, n, nil)
	sub, err := f.nb.Subscriber(busnats.SubscriberConfig{Group: "g", InFlight: 256, Batch: 1024})
	if err != nil {
		b.Fatal(err)
	}
	return txPublisher{f.outbox}, sub
}
