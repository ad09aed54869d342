package nats_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"

	bus "github.com/aivis/aivis/core/bus/nats"
	"github.com/aivis/aivis/internal/bustest"
	"github.com/aivis/aivis/internal/testsvc"
)

// open opens the bus of a cluster of the test's own.
func open(tb testing.TB) *bus.Bus {
	tb.Helper()
	url, cluster := testsvc.NATS(tb)
	b, err := bus.Open(tb.Context(), url, cluster, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// TestPubSub runs Watermill's acceptance suite in full on a stream of its
// own per run: every constructor call makes a new Publisher and Subscriber
// (each its own connection), as the processes of a deployment share one
// NATS.
func TestPubSub(t *testing.T) {
	t.Run("one in flight", func(t *testing.T) {
		runSuite(t, open(t), bus.SubscriberConfig{Batch: 64}, bustest.Features)
	})
	t.Run("sixteen in flight", func(t *testing.T) {
		runSuite(t, open(t), bus.SubscriberConfig{InFlight: 16, Batch: 256}, bustest.Unordered())
	})
}

func runSuite(t *testing.T, b *bus.Bus, cfg bus.SubscriberConfig, features tests.Features) {
	bustest.Suite(t, features, func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := b.Publisher()
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		// What the suite's closed subscriptions were pushed and did not
		// give back goes to the other members after AckWait.
		c.Group, c.AckWait = group, 2*time.Second
		sub, err := b.Subscriber(c)
		if err != nil {
			t.Fatal(err)
		}
		return pub, sub
	})
}
