package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/sqlite"
)

// The benchmarks use a durable database file opened as the product opens
// it (WAL, synchronous=NORMAL, one writer connection, a reader pool) and
// report msgs/s. Payloads are 256 bytes with two metadata entries, about
// the size of an aivis event.

var benchPayload = make([]byte, 256)

func benchMessages(n, from int) []*message.Message {
	msgs := make([]*message.Message, n)
	for i := range msgs {
		m := message.NewMessage(strconv.Itoa(from+i), benchPayload)
		m.Metadata.Set("type", "reading.created")
		m.Metadata.Set("account", "acc_0123456789")
		msgs[i] = m
	}
	return msgs
}

func reportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkPublish publishes with Publisher.Publish, each call in its own
// transaction: one message per call, or a batch of messages per call.
func BenchmarkPublish(b *testing.B) {
	for _, batch := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			w, _ := pools(b, filepath.Join(b.TempDir(), "bus.db"))
			pub, err := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
			if err != nil {
				b.Fatal(err)
			}
			msgs := benchMessages(batch, 0)
			for b.Loop() {
				if err := pub.Publish("bench", msgs...); err != nil {
					b.Fatal(err)
				}
			}
			reportRate(b, b.N*batch)
		})
	}
}

// BenchmarkPublishTx publishes one message inside a caller's transaction
// that also writes a row of its own, as the product's outbox does.
func BenchmarkPublishTx(b *testing.B) {
	w, _ := pools(b, filepath.Join(b.TempDir(), "bus.db"))
	ctx := context.Background()
	if _, err := w.Exec(`CREATE TABLE things (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		b.Fatal(err)
	}
	msgs := benchMessages(1, 0)
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
	reportRate(b, b.N)
}

// BenchmarkConsume reads and acknowledges messages published beforehand.
func BenchmarkConsume(b *testing.B) {
	w, r := pools(b, filepath.Join(b.TempDir(), "bus.db"))
	pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	for i := 0; i < b.N; i += 1000 {
		if err := pub.Publish("bench", benchMessages(min(1000, b.N-i), i)...); err != nil {
			b.Fatal(err)
		}
	}
	sub, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: "g"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	b.ResetTimer()
	ch, err := sub.Subscribe(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	consume(b, ch, b.N)
	reportRate(b, b.N)
}

// BenchmarkPublishConsume is the end to end rate: one goroutine publishes
// (one message per transaction, or batches of 10) while a subscriber
// receives and acknowledges every message.
func BenchmarkPublishConsume(b *testing.B) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			w, r := pools(b, filepath.Join(b.TempDir(), "bus.db"))
			pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
			sub, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: "g"}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close()
			ch, err := sub.Subscribe(context.Background(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			n := b.N
			msgs := benchMessages(batch, 0)
			b.ResetTimer()
			errc := make(chan error, 1)
			go func() {
				for i := 0; i < n; i += batch {
					if err := pub.Publish("bench", msgs[:min(batch, n-i)]...); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			consume(b, ch, n)
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
			reportRate(b, n)
		})
	}
}

// BenchmarkRouterConsume is BenchmarkConsume through a Watermill Router,
// as the product consumes: the handler returning nil acks.
func BenchmarkRouterConsume(b *testing.B) {
	w, r := pools(b, filepath.Join(b.TempDir(), "bus.db"))
	pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	for i := 0; i < b.N; i += 1000 {
		if err := pub.Publish("bench", benchMessages(min(1000, b.N-i), i)...); err != nil {
			b.Fatal(err)
		}
	}
	sub, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: "g"}, nil)
	if err != nil {
		b.Fatal(err)
	}
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
	reportRate(b, b.N)
	router.Close()
}

func consume(b *testing.B, ch <-chan *message.Message, n int) {
	timeout := time.After(5 * time.Minute)
	for range n {
		select {
		case m, ok := <-ch:
			if !ok {
				b.Fatal("subscription closed")
			}
			m.Ack()
		case <-timeout:
			b.Fatal("timed out")
		}
	}
}
