package nats_test

import (
	"testing"
	"time"

	bus "github.com/aivis/aivis/core/bus/nats"
	"github.com/aivis/aivis/internal/bustest"
)

// TestLag: a group's lag is what its consumer has not had acknowledged,
// delivered or not; none once every message is.
func TestLag(t *testing.T) {
	b := open(t)
	pub := publisher(t, b)
	if err := pub.Publish("t", bustest.Messages(5)...); err != nil {
		t.Fatal(err)
	}
	ch := subscribe(t, b, bus.SubscriberConfig{Group: "g", InFlight: 2, Batch: 2}, "t")
	lag := func() int64 {
		t.Helper()
		n, err := b.Lag(t.Context(), "g", "t")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	m := receive(t, ch)
	if n := lag(); n != 5 {
		t.Errorf("lag with none acknowledged: %d, want 5", n)
	}
	m.Ack()
	for range 4 {
		receive(t, ch).Ack()
	}
	deadline := time.Now().Add(10 * time.Second)
	for lag() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("lag once every message is acknowledged: %d, want 0", lag())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := b.Lag(t.Context(), "nobody", "t"); err == nil {
		t.Error("the lag of a group without a consumer: no error")
	}
}
