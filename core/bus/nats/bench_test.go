package nats_test

import (
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/nats"
	"github.com/aivis/aivis/internal/bustest"
)

// The benchmarks use the local NATS server (file storage), a stream of
// their own each, and report msgs/s, with bustest's messages of an aivis
// event's size. Publish sends the messages of a call without waiting for
// each one's acknowledgement, then waits for all.

// pubSub is a publisher and a subscriber of the group g, as many in flight
// as the delivery engine's fan-out takes (256, pushed 1024 ahead) unless
// said.
func pubSub(inFlight int) bustest.PubSub {
	return func(b *testing.B) (message.Publisher, message.Subscriber) {
		bb := open(b)
		pub, err := bb.Publisher()
		if err != nil {
			b.Fatal(err)
		}
		sub, err := bb.Subscriber(bus.SubscriberConfig{Group: "g", InFlight: inFlight, Batch: 1024})
		if err != nil {
			b.Fatal(err)
		}
		return pub, sub
	}
}

func BenchmarkPublish(b *testing.B) { bustest.BenchmarkPublish(b, pubSub(1)) }

// BenchmarkConsume: one message in flight, then 256.
func BenchmarkConsume(b *testing.B) {
	for _, inFlight := range []int{1, 256} {
		b.Run(fmt.Sprintf("inflight=%d", inFlight), func(b *testing.B) { bustest.BenchmarkConsume(b, pubSub(inFlight)) })
	}
}

func BenchmarkPublishConsume(b *testing.B) { bustest.BenchmarkPublishConsume(b, pubSub(256)) }
