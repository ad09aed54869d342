package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/sqlite"
	"github.com/aivis/aivis/internal/bustest"
)

// The benchmarks use a durable database file opened as the product opens
// it (WAL, synchronous=NORMAL, one writer connection, a reader pool) and
// report msgs/s, with bustest's messages of an aivis event's size (256
// bytes, two metadata entries).

// pubSub is a publisher and a subscriber of the group g on a file of
// their own.
func pubSub(b *testing.B) (message.Publisher, message.Subscriber) {
	w, r := pools(b, filepath.Join(b.TempDir(), "bus.db"))
	pub, err := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	sub, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: "g"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return pub, sub
}

// BenchmarkPublish publishes with Publisher.Publish, each call in its own
// transaction.
func BenchmarkPublish(b *testing.B) { bustest.BenchmarkPublish(b, pubSub) }

// BenchmarkPublishTx publishes one message inside a caller's transaction
// that also writes a row of its own, as the product's outbox does.
func BenchmarkPublishTx(b *testing.B) {
	w, _ := pools(b, filepath.Join(b.TempDir(), "bus.db"))
	ctx := context.Background()
	if _, err := w.Exec(`CREATE TABLE things (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		b.Fatal(err)
	}
	msgs := bustest.Messages(1)
	for b.Loop() {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO things (v) VALUES ('x')`); err != nil {
			b.Fatal(err)
		}
		if err := bus.PublishTx(ctx, tx, "bench", msgs...); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		bus.Notify("bench")
	}
	bustest.ReportRate(b, b.N)
}

func BenchmarkConsume(b *testing.B) { bustest.BenchmarkConsume(b, pubSub) }

func BenchmarkPublishConsume(b *testing.B) { bustest.BenchmarkPublishConsume(b, pubSub) }

// BenchmarkRouterConsume is BenchmarkConsume through a Watermill Router,
// as the product consumes: the handler returning nil acks.
func BenchmarkRouterConsume(b *testing.B) {
	pub, sub := pubSub(b)
	bustest.Prefill(b, pub, b.N)
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	n := 0
	router.AddConsumerHandler("bench", "bench", sub, func(*message.Message) error {
		if n++; n == b.N {
			close(done)
		}
		return nil
	})
	b.ResetTimer()
	go router.Run(context.Background())
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatal("timed out")
	}
	b.StopTimer()
	bustest.ReportRate(b, b.N)
	router.Close()
}
