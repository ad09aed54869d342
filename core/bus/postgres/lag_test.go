package postgres_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/internal/testsvc"
)

// TestLag: a group's lag is every message of the topic before it reads,
// what follows its acknowledged offset once it has, and none once it has
// acknowledged them all.
func TestLag(t *testing.T) {
	p := pool(t, testsvc.Postgres(t), 8)
	ctx := t.Context()
	pub := txPublisher{bus.NewOutbox(p, bus.Name)}
	publish := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if err := pub.Publish("t", message.NewMessage(id, nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	lag := func(group string) int64 {
		t.Helper()
		n, err := bus.Lag(ctx, p, group, "t")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	publish("m1", "m2", "m3")
	sub, err := bus.NewSubscriber(p, bus.SubscriberConfig{Group: "g", Batch: 1, PollInterval: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, err := sub.Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if n := lag("g"); n != 3 {
		t.Errorf("lag before the group acknowledged any: %d, want 3", n)
	}
	for i := range 3 {
		select {
		case m := <-ch:
			m.Ack()
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d not received", i+1)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for lag("g") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("lag once every message is acknowledged: %d, want 0", lag("g"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	publish("m4", "m5")
	if n := lag("g"); n != 2 {
		t.Errorf("lag after two more: %d, want 2", n)
	}
	if n := lag("never"); n != 5 {
		t.Errorf("lag of a group that never read: %d, want 5", n)
	}
}
