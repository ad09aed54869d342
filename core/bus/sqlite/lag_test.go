package sqlite_test

import (
	"context"
	"testing"
	"time"

	bus "github.com/aivis/aivis/core/bus/sqlite"
)

// Lag counts a group's messages not acknowledged yet: every message of the
// topic before the group reads, those after its written offset once it
// has, none once it has acknowledged them all; another topic's messages
// and another group's offset do not count.
func TestLag(t *testing.T) {
	path := dbPath(t)
	_, read := pools(t, path)
	pub := publisher(t, path)
	lag := func(group string) int64 {
		t.Helper()
		n, err := bus.Lag(context.Background(), read, group, "events")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	publish(t, pub, "events", 0, 5)
	publish(t, pub, "other", 0, 3)
	if n := lag("g"); n != 5 {
		t.Fatalf("lag before the group reads: %d, want 5", n)
	}
	sub := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", CommitInterval: time.Millisecond})
	ch, err := sub.Subscribe(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 5)
	deadline := time.Now().Add(10 * time.Second)
	for lag("g") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("lag once every message is acknowledged: %d, want 0", lag("g"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	publish(t, pub, "events", 5, 7)
	if n := lag("g"); n != 2 {
		t.Errorf("lag after two more: %d, want 2", n)
	}
	if n := lag("h"); n != 7 {
		t.Errorf("lag of a group that never read: %d, want 7", n)
	}
}
