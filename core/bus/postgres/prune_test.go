package postgres_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/internal/testsvc"
)

// TestPrune: what every consumer group has read past goes once old enough;
// what one group has not read stays, however old; a topic nobody reads
// loses what is old enough.
func TestPrune(t *testing.T) {
	p := pool(t, testsvc.Postgres(t), 8)
	ctx := t.Context()
	pub := txPublisher{bus.NewOutbox(p, bus.Name)}
	for _, id := range []string{"m1", "m2", "m3"} {
		if err := pub.Publish("t", message.NewMessage(id, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Publish("unread", message.NewMessage("u1", nil)); err != nil {
		t.Fatal(err)
	}
	// Group a reads all three, group b m1 alone: b's next batch (m2)
	// comes once m1's offset is written.
	read := func(group string, n int) {
		t.Helper()
		sub, err := bus.NewSubscriber(p, bus.SubscriberConfig{Group: group, Batch: 1, PollInterval: 10 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		ch, err := sub.Subscribe(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		for i := range n + 1 {
			select {
			case m := <-ch:
				if i < n {
					m.Ack()
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("group %s: message %d not received", group, i+1)
			}
		}
	}
	read("b", 1)
	if err := pub.Publish("t", message.NewMessage("m4", nil)); err != nil {
		t.Fatal(err)
	}
	read("a", 3) // the fourth is m4, once m3's offset is written

	count := func(table string) (n int) {
		t.Helper()
		if err := p.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, err := bus.Prune(ctx, p, "t", time.Hour); err != nil || n != 0 {
		t.Fatalf("Prune of what is younger than an hour: %d, %v", n, err)
	}
	// Older than -1h: everything is old enough.
	if n, err := bus.Prune(ctx, p, "t", -time.Hour); err != nil || n != 1 {
		t.Fatalf("Prune: %d deleted, %v; want m1 alone, which both groups read", n, err)
	}
	var left []string
	rows, _ := p.Query(ctx, `SELECT uuid FROM "watermill_t" ORDER BY "offset"`)
	for rows.Next() {
		var id string
		rows.Scan(&id)
		left = append(left, id)
	}
	if len(left) != 3 || left[0] != "m2" {
		t.Errorf("left %v, want m2, m3, m4", left)
	}
	if n, err := bus.Prune(ctx, p, "unread", -time.Hour); err != nil || n != 1 || count(`"watermill_unread"`) != 0 {
		t.Fatalf("Prune of a topic nobody reads: %d, %v", n, err)
	}
}
