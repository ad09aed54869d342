// Package bustest is what the buses' tests and benchmarks share: the
// features they claim in Watermill's acceptance suite, and messages the
// size of an aivis event to publish and consume.
package bustest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
)

// Features are what the buses honestly support, for Watermill's
// acceptance suite: consumer groups, messages kept beyond the Publisher and
// Subscriber values (in the database, on the server), delivery in
// publication order within a topic and group (with one message in
// flight), at least once (not exactly once). NewSubscriberReceivesOldMessages
// is false: a new subscriber of an existing group goes on from the group's
// position (a new group does start from the oldest message).
// RestartServiceCommand is nil: the suite would restart a server others
// share, or there is none.
var Features = tests.Features{
	ConsumerGroups:                      true,
	ExactlyOnceDelivery:                 false,
	GuaranteedOrder:                     true,
	GuaranteedOrderWithSingleSubscriber: true,
	Persistent:                          true,
	RestartServiceCommand:               nil,
	NewSubscriberReceivesOldMessages:    false,
	ContextPreserved:                    false,
}

// Unordered are Features with several messages in flight: handled
// concurrently, so without the order guarantee.
func Unordered() tests.Features {
	f := Features
	f.GuaranteedOrder, f.GuaranteedOrderWithSingleSubscriber = false, false
	return f
}

// Suite runs Watermill's acceptance suite in full, every constructor call
// making a new Publisher and Subscriber of its group (the suite's
// ungrouped constructor: the group "default"), and logs how long it took.
func Suite(t *testing.T, features tests.Features, constructor tests.ConsumerGroupPubSubConstructor) {
	start := time.Now()
	t.Cleanup(func() { t.Logf("acceptance suite: %v", time.Since(start).Round(time.Millisecond)) })
	tests.TestPubSub(t, features,
		func(t *testing.T) (message.Publisher, message.Subscriber) { return constructor(t, "default") },
		constructor,
	)
}

// Payload is a message's payload the size of an aivis event.
var Payload = make([]byte, 256)

// Messages are n messages of Payload with two metadata entries, about an
// aivis event, each with a UUID of its own.
func Messages(n int) []*message.Message {
	msgs := make([]*message.Message, n)
	for i := range msgs {
		m := message.NewMessage(watermill.NewUUID(), Payload)
		m.Metadata.Set("type", "reading.created")
		m.Metadata.Set("account", "acc_0123456789")
		msgs[i] = m
	}
	return msgs
}

// ReportRate reports n messages over the benchmark's time as msgs/s.
func ReportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// PubSub makes a publisher and a subscriber of the bus under benchmark,
// on a store or a stream of their own; both are closed when the benchmark
// ends.
type PubSub func(b *testing.B) (message.Publisher, message.Subscriber)

func open(b *testing.B, pubSub PubSub) (message.Publisher, message.Subscriber) {
	pub, sub := pubSub(b)
	b.Cleanup(func() { sub.Close(); pub.Close() })
	return pub, sub
}

// BenchmarkPublish publishes one message per Publish, then batches of 10
// and 100.
func BenchmarkPublish(b *testing.B, pubSub PubSub) {
	for _, batch := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			pub, _ := open(b, pubSub)
			for b.Loop() {
				if err := pub.Publish("bench", Messages(batch)...); err != nil {
					b.Fatal(err)
				}
			}
			ReportRate(b, b.N*batch)
		})
	}
}

// BenchmarkConsume reads and acknowledges b.N messages published
// beforehand (100 a call).
func BenchmarkConsume(b *testing.B, pubSub PubSub) {
	pub, sub := open(b, pubSub)
	Prefill(b, pub, b.N)
	b.ResetTimer()
	ch, err := sub.Subscribe(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	Consume(b, ch, b.N)
	ReportRate(b, b.N)
}

// Prefill publishes n messages with pub, 100 a call, before a benchmark
// consumes them.
func Prefill(b *testing.B, pub message.Publisher, n int) {
	for i := 0; i < n; i += 100 {
		if err := pub.Publish("bench", Messages(min(100, n-i))...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishConsume is the end to end rate: one goroutine publishes
// (one message per call, then batches of 10) while the subscriber receives
// and acknowledges every message.
func BenchmarkPublishConsume(b *testing.B, pubSub PubSub) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			pub, sub := open(b, pubSub)
			ch, err := sub.Subscribe(context.Background(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			n := b.N
			b.ResetTimer()
			errc := make(chan error, 1)
			go func() {
				for i := 0; i < n; i += batch {
					if err := pub.Publish("bench", Messages(min(batch, n-i))...); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			Consume(b, ch, n)
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
			ReportRate(b, n)
		})
	}
}

// Consume receives and acks n messages of ch, within 5 minutes.
func Consume(b *testing.B, ch <-chan *message.Message, n int) {
	b.Helper()
	timeout := time.After(5 * time.Minute)
	for i := range n {
		select {
		case m, ok := <-ch:
			if !ok {
				b.Fatalf("subscription closed after %d messages", i)
			}
			m.Ack()
		case <-timeout:
			b.Fatalf("timed out after %d messages", i)
		}
	}
}
