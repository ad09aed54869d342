package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/sqlite"
)

func subscriber(t *testing.T, path, group string) *bus.Subscriber {
	t.Helper()
	w, r := pools(t, path)
	s, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: group, PollInterval: 10 * time.Millisecond,
		LeaseDuration: time.Second}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func receive(t *testing.T, ch <-chan *message.Message, n int) []*message.Message {
	t.Helper()
	var out []*message.Message
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case m := <-ch:
			out = append(out, m)
			m.Ack()
		case <-timeout:
			t.Fatalf("received %d of %d", len(out), n)
		}
	}
	return out
}

func TestPublishTxFollowsTheTransaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.db")
	w, _ := pools(t, path)
	ctx := context.Background()
	for _, commit := range []bool{false, true} {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := message.NewMessage(fmt.Sprintf("m-%v", commit), []byte("x"))
		m.Metadata.Set("k", "v")
		if err := bus.PublishTx(ctx, tx, "t", m); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ch, err := subscriber(t, path, "g").Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch, 1)
	if got[0].UUID != "m-true" || got[0].Metadata.Get("k") != "v" || string(got[0].Payload) != "x" {
		t.Fatalf("received %s %v %q", got[0].UUID, got[0].Metadata, got[0].Payload)
	}
	select {
	case m := <-ch:
		t.Fatalf("a rolled-back message was delivered: %s", m.UUID)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestOffsetsSurviveReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.db")
	w, _ := pools(t, path)
	pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	for i := range 10 {
		if err := pub.Publish("t", message.NewMessage(fmt.Sprint(i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s1 := subscriber(t, path, "g")
	ch, _ := s1.Subscribe(ctx, "t")
	receive(t, ch, 4)
	cancel()
	s1.Close()

	ch2, _ := subscriber(t, path, "g").Subscribe(context.Background(), "t")
	got := receive(t, ch2, 6)
	if got[0].UUID != "4" || got[5].UUID != "9" {
		t.Fatalf("after reopening: %s..%s, want 4..9", got[0].UUID, got[5].UUID)
	}
	// Another group reads from the start.
	ch3, _ := subscriber(t, path, "other").Subscribe(context.Background(), "t")
	if got := receive(t, ch3, 10); got[0].UUID != "0" {
		t.Fatalf("a new group starts at %s", got[0].UUID)
	}
}

func TestCompetingSubscribersShareTheGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.db")
	w, _ := pools(t, path)
	pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	const n = 300
	var mu sync.Mutex
	seen := map[string]int{}
	inFlight, maxInFlight := 0, 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		ch, err := subscriber(t, path, "g").Subscribe(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for m := range ch {
				mu.Lock()
				seen[m.UUID]++
				inFlight++
				maxInFlight = max(maxInFlight, inFlight)
				mu.Unlock()
				time.Sleep(50 * time.Microsecond)
				mu.Lock()
				inFlight--
				mu.Unlock()
				m.Ack()
			}
		})
	}
	for i := range n {
		if err := pub.Publish("t", message.NewMessage(fmt.Sprint(i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	for id, c := range seen {
		if c != 1 {
			t.Errorf("message %s delivered %d times", id, c)
		}
	}
	if maxInFlight != 1 {
		t.Errorf("%d messages of one group were in flight at once", maxInFlight)
	}
}

func TestNackRedelivers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.db")
	w, _ := pools(t, path)
	pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	pub.Publish("t", message.NewMessage("a", nil), message.NewMessage("b", nil))
	ch, _ := subscriber(t, path, "g").Subscribe(context.Background(), "t")
	m := <-ch
	m.Nack()
	again := <-ch
	if again.UUID != "a" {
		t.Fatalf("after a nack got %s, want a again", again.UUID)
	}
	again.Ack()
	if next := <-ch; next.UUID != "b" {
		t.Fatalf("then %s, want b", next.UUID)
	}
}

func TestCleanup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.db")
	w, r := pools(t, path)
	pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	for i := range 10 {
		pub.Publish("read", message.NewMessage(fmt.Sprint(i), nil))
	}
	pub.Publish("unread", message.NewMessage("u", nil))
	ctx, cancel := context.WithCancel(context.Background())
	s := subscriber(t, path, "g")
	ch, _ := s.Subscribe(ctx, "read")
	receive(t, ch, 6)
	cancel()
	s.Close()
	n, err := bus.Cleanup(context.Background(), w, time.Now().Add(time.Minute))
	if err != nil || n != 7 { // 6 acknowledged + the topic nobody reads
		t.Fatalf("Cleanup = %d, %v; want 7", n, err)
	}
	var left int
	r.QueryRow(`SELECT count(*) FROM bus_messages`).Scan(&left)
	if left != 4 {
		t.Fatalf("%d messages left, want 4", left)
	}
	if n, _ := bus.Cleanup(context.Background(), w, time.Now().Add(-time.Hour)); n != 0 {
		t.Fatalf("young messages deleted: %d", n)
	}
}

func TestPublishErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bus.db")
	w, _ := pools(t, path)
	pub, _ := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	if err := pub.Publish("", message.NewMessage("x", nil)); err == nil {
		t.Error("an empty topic accepted")
	}
	pub.Close()
	if err := pub.Publish("t", message.NewMessage("x", nil)); err == nil {
		t.Error("publish after close")
	}
	if _, err := bus.NewSubscriber(nil, nil, bus.SubscriberConfig{}, nil); err == nil {
		t.Error("a subscriber without a database")
	}
}
