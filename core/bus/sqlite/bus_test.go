package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	bus "github.com/aivis/aivis/core/bus/sqlite"
)

func dbPath(t *testing.T) string { return filepath.Join(t.TempDir(), "bus.db") }

// subscriberWith opens its own pools on path, as another process would.
func subscriberWith(t *testing.T, path string, cfg bus.SubscriberConfig) *bus.Subscriber {
	t.Helper()
	w, r := pools(t, path)
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 10 * time.Millisecond
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = time.Second
	}
	s, err := bus.NewSubscriber(w, r, cfg, testLogger{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testLogger shows the subscriber's errors and information in the test log.
type testLogger struct{ t *testing.T }

func (l testLogger) Error(msg string, err error, fields watermill.LogFields) {
	l.t.Logf("%s: %v %v", msg, err, fields)
}
func (l testLogger) Info(msg string, fields watermill.LogFields) { l.t.Logf("%s %v", msg, fields) }
func (l testLogger) Debug(string, watermill.LogFields)           {}
func (l testLogger) Trace(string, watermill.LogFields)           {}
func (l testLogger) With(watermill.LogFields) watermill.LoggerAdapter {
	return l
}

func subscriber(t *testing.T, path, group string) *bus.Subscriber {
	return subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: group})
}

func publisher(t *testing.T, path string) *bus.Publisher {
	t.Helper()
	w, _ := pools(t, path)
	pub, err := bus.NewPublisher(w, bus.PublisherConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func publish(t *testing.T, pub *bus.Publisher, topic string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := pub.Publish(topic, message.NewMessage(strconv.Itoa(i), []byte("p"+strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
}

func receive(t *testing.T, ch <-chan *message.Message, n int) []*message.Message {
	t.Helper()
	var out []*message.Message
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d of %d", len(out), n)
			}
			out = append(out, m)
			m.Ack()
		case <-timeout:
			t.Fatalf("received %d of %d", len(out), n)
		}
	}
	return out
}

func nothing(t *testing.T, ch <-chan *message.Message, d time.Duration) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("unexpected message %s", m.UUID)
	case <-time.After(d):
	}
}

func uuids(msgs []*message.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.UUID
	}
	return out
}

func seqUUIDs(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

func offset(t *testing.T, db *sql.DB, group, topic string) int64 {
	t.Helper()
	var acked int64
	err := db.QueryRow(`SELECT acked FROM bus_offsets WHERE consumer_group = ? AND topic = ?`, group, topic).Scan(&acked)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	return acked
}

func count(t *testing.T, db *sql.DB, topic string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM bus_messages WHERE topic = ?`, topic).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInitializeSchemaIsIdempotent(t *testing.T) {
	w, _ := pools(t, dbPath(t)) // pools initializes once
	for range 2 {
		if err := bus.InitializeSchema(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPublishTxFollowsTheTransaction(t *testing.T) {
	path := dbPath(t)
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
	if n := count(t, w, "t"); n != 1 {
		t.Fatalf("%d messages stored, want 1", n)
	}
	ch, err := subscriber(t, path, "g").Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch, 1)
	if got[0].UUID != "m-true" || got[0].Metadata.Get("k") != "v" || string(got[0].Payload) != "x" {
		t.Fatalf("received %s %v %q", got[0].UUID, got[0].Metadata, got[0].Payload)
	}
	nothing(t, ch, 100*time.Millisecond)
}

// TestNotifyWakesAtOnce: with a poll interval of an hour, a message written
// by PublishTx waits for Notify.
func TestNotifyWakesAtOnce(t *testing.T) {
	path := dbPath(t)
	w, _ := pools(t, path)
	ctx := context.Background()
	sub := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", PollInterval: time.Hour})
	ch, _ := sub.Subscribe(ctx, "t")
	time.Sleep(50 * time.Millisecond) // the subscription has looked and found nothing
	if err := bus.PublishTx(ctx, w, "t", message.NewMessage("a", nil)); err != nil {
		t.Fatal(err)
	}
	nothing(t, ch, 200*time.Millisecond)
	bus.Notify("t")
	if got := receive(t, ch, 1); got[0].UUID != "a" {
		t.Fatalf("got %s", got[0].UUID)
	}
}

func TestMessagesRoundTripExactly(t *testing.T) {
	path := dbPath(t)
	pub := publisher(t, path)
	binary := []byte{0, 1, 2, 0xff, 0xfe, 0, '\n'}
	in := []*message.Message{
		message.NewMessage("ünïcødé-🙂-\x00-uuid", binary),
		message.NewMessage("", nil),
		message.NewMessage("empty-payload", []byte{}),
	}
	in[0].Metadata.Set("", "empty key")
	in[0].Metadata.Set("empty value", "")
	in[0].Metadata.Set("json", `{"a":[1,"<&>"]}`+"\u2028\t\\\"")
	in[0].Metadata.Set("nul", "a\x00b")
	in[0].Metadata.Set("😀", "日本語")
	if err := pub.Publish("t", in...); err != nil {
		t.Fatal(err)
	}
	ch, _ := subscriber(t, path, "g").Subscribe(context.Background(), "t")
	got := receive(t, ch, len(in))
	for i := range in {
		if got[i].UUID != in[i].UUID || !bytes.Equal(got[i].Payload, in[i].Payload) || len(got[i].Metadata) != len(in[i].Metadata) {
			t.Fatalf("message %d: got %q %q %v, want %q %q %v", i, got[i].UUID, got[i].Payload, got[i].Metadata,
				in[i].UUID, in[i].Payload, in[i].Metadata)
		}
		for k, v := range in[i].Metadata {
			if got[i].Metadata[k] != v {
				t.Fatalf("message %d metadata %q = %q, want %q", i, k, got[i].Metadata[k], v)
			}
		}
		if got[i].Metadata == nil {
			t.Fatalf("message %d has nil metadata", i)
		}
	}

	bad := message.NewMessage("bad", nil)
	bad.Metadata.Set("k", "\xff\xfe")
	if err := pub.Publish("t", bad); err == nil {
		t.Fatal("metadata that is not UTF-8 was accepted")
	}
}

// A redelivered message is what was stored, whatever the handler did to
// the one it was given.
func TestNackRedeliversTheStoredMessage(t *testing.T) {
	path := dbPath(t)
	pub := publisher(t, path)
	a := message.NewMessage("a", []byte("payload"))
	a.Metadata.Set("k", "v")
	pub.Publish("t", a, message.NewMessage("b", nil))
	ch, _ := subscriber(t, path, "g").Subscribe(context.Background(), "t")
	m := <-ch
	m.Payload[0] = 'X'
	m.Metadata.Set("k", "changed")
	m.Metadata.Set("extra", "1")
	m.Nack()
	select {
	case <-m.Context().Done():
	case <-time.After(time.Second):
		t.Error("the context of a nacked message is not cancelled")
	}
	again := <-ch
	if again.UUID != "a" || string(again.Payload) != "payload" || again.Metadata.Get("k") != "v" || len(again.Metadata) != 1 {
		t.Fatalf("after a nack got %s %q %v", again.UUID, again.Payload, again.Metadata)
	}
	again.Ack()
	next := <-ch
	next.Ack()
	if next.UUID != "b" {
		t.Fatalf("then %s, want b", next.UUID)
	}
}

func TestAckDeadlineRedelivers(t *testing.T) {
	path := dbPath(t)
	pub := publisher(t, path)
	publish(t, pub, "t", 0, 2)
	sub := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", AckDeadline: 50 * time.Millisecond})
	ch, _ := sub.Subscribe(context.Background(), "t")
	first := <-ch // never acked
	start := time.Now()
	again := <-ch
	if again.UUID != first.UUID || time.Since(start) < 40*time.Millisecond {
		t.Fatalf("got %s after %v, want %s again after the deadline", again.UUID, time.Since(start), first.UUID)
	}
	first.Ack() // too late: ignored
	again.Ack()
	if got := receive(t, ch, 1); got[0].UUID != "1" {
		t.Fatalf("then %s", got[0].UUID)
	}
}

func TestOffsetsSurviveReopening(t *testing.T) {
	path := dbPath(t)
	publish(t, publisher(t, path), "t", 0, 10)
	ctx, cancel := context.WithCancel(context.Background())
	s1 := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", CloseGrace: 20 * time.Millisecond})
	ch, _ := s1.Subscribe(ctx, "t")
	receive(t, ch, 4)
	m := <-ch // in flight when the subscriber closes: not acked, sent again
	cancel()
	s1.Close()
	if _, ok := <-ch; ok {
		t.Fatal("the channel is open after Close")
	}
	if m.UUID != "4" {
		t.Fatalf("fifth message %s", m.UUID)
	}

	ch2, _ := subscriber(t, path, "g").Subscribe(context.Background(), "t")
	if got := uuids(receive(t, ch2, 6)); fmt.Sprint(got) != fmt.Sprint(seqUUIDs(4, 10)) {
		t.Fatalf("after reopening: %v", got)
	}
	// A new group reads from the oldest message.
	ch3, _ := subscriber(t, path, "other").Subscribe(context.Background(), "t")
	if got := uuids(receive(t, ch3, 10)); fmt.Sprint(got) != fmt.Sprint(seqUUIDs(0, 10)) {
		t.Fatalf("a new group got %v", got)
	}
}

// TestCloseGraceCountsALateAck: a handler that acks soon after its
// subscription ended (its message's context cancelled) has its ack counted.
func TestCloseGraceCountsALateAck(t *testing.T) {
	path := dbPath(t)
	publish(t, publisher(t, path), "t", 0, 3)
	ctx, cancel := context.WithCancel(context.Background())
	s1 := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", CloseGrace: 5 * time.Second})
	ch, _ := s1.Subscribe(ctx, "t")
	m := <-ch
	go func() {
		<-m.Context().Done()
		time.Sleep(20 * time.Millisecond)
		m.Ack()
	}()
	cancel()
	s1.Close()
	ch2, _ := subscriber(t, path, "g").Subscribe(context.Background(), "t")
	if got := uuids(receive(t, ch2, 2)); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("after a late ack: %v", got)
	}
}

// TestOffsetIsWrittenWhileRunning: without Close, the offset reaches the
// database within CommitInterval of the last ack.
func TestOffsetIsWrittenWhileRunning(t *testing.T) {
	path := dbPath(t)
	w, _ := pools(t, path)
	publish(t, publisher(t, path), "t", 0, 250)
	sub := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", CommitInterval: 50 * time.Millisecond, BatchSize: 20})
	ch, _ := sub.Subscribe(context.Background(), "t")
	receive(t, ch, 250)
	deadline := time.Now().Add(2 * time.Second)
	for offset(t, w, "g", "t") != 250 {
		if time.Now().After(deadline) {
			t.Fatalf("offset %d, want 250", offset(t, w, "g", "t"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCrashedHolderIsTakenOver: a process that dies holding the lease
// (its database closed under it, so it neither writes its offset nor gives
// the lease up) is replaced once the lease expires, from the last offset it
// wrote: what it acked since is delivered again.
func TestCrashedHolderIsTakenOver(t *testing.T) {
	path := dbPath(t)
	w, r := pools(t, path)
	publish(t, publisher(t, path), "t", 0, 10)
	crashing, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: "g", PollInterval: 10 * time.Millisecond,
		LeaseDuration: 600 * time.Millisecond, CommitInterval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := crashing.Subscribe(context.Background(), "t")
	receive(t, ch, 3)
	m := <-ch
	w.Close() // the crash
	r.Close()
	m.Ack()
	defer crashing.Close()

	start := time.Now()
	next := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", LeaseDuration: 600 * time.Millisecond})
	ch2, _ := next.Subscribe(context.Background(), "t")
	got := receive(t, ch2, 1)
	if got[0].UUID != "0" {
		// CommitInterval is an hour and the subscription was never caught
		// up: no offset was written before the crash.
		t.Fatalf("the new holder starts at %s, want 0", got[0].UUID)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took over after %v", time.Since(start))
	}
	receive(t, ch2, 9)
}

// TestCompetingSubscribersShareTheGroup: subscriptions of one group in
// several "processes" (pools of their own) and in one subscriber, handlers
// that nack now and then, subscribers that leave midway: every message is
// acked exactly once, in order, and never two are in flight at once.
func TestCompetingSubscribersShareTheGroup(t *testing.T) {
	path := dbPath(t)
	pub := publisher(t, path)
	const n = 600
	var (
		mu          sync.Mutex
		acked       []string
		inFlight    int
		maxInFlight int
		nacks       int
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	consume := func(ch <-chan *message.Message, leaveAfter int) {
		wg.Go(func() {
			handled := 0
			for m := range ch {
				mu.Lock()
				inFlight++
				maxInFlight = max(maxInFlight, inFlight)
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				mu.Lock()
				inFlight--
				nack := rand.IntN(10) == 0
				if nack {
					nacks++
				} else {
					acked = append(acked, m.UUID)
				}
				mu.Unlock()
				if nack {
					m.Nack()
				} else {
					m.Ack()
				}
				if handled++; handled == leaveAfter {
					return // the subscriber is closed below
				}
			}
		})
	}
	var leaving []*bus.Subscriber
	for i := range 3 {
		s := subscriber(t, path, "g")
		ch, err := s.Subscribe(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			consume(ch, 100)
			leaving = append(leaving, s)
		} else {
			consume(ch, -1)
		}
	}
	shared := subscriber(t, path, "g")
	for range 2 {
		ch, err := shared.Subscribe(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		consume(ch, -1)
	}
	for i := 0; i < n; i += 20 {
		publish(t, pub, "t", i, i+20)
		if i == n/2 {
			for _, s := range leaving {
				go s.Close()
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		got := len(acked)
		mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acked %d of %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if fmt.Sprint(acked) != fmt.Sprint(seqUUIDs(0, n)) {
		t.Errorf("acked out of order or twice: %v", acked)
	}
	if maxInFlight != 1 {
		t.Errorf("%d messages of one group were in flight at once", maxInFlight)
	}
	t.Logf("%d nacks", nacks)
}

func TestConsumerGroupsEachGetEveryMessage(t *testing.T) {
	path := dbPath(t)
	pub := publisher(t, path)
	publish(t, pub, "t", 0, 50)
	publish(t, pub, "other-topic", 0, 5)
	for _, g := range []string{"a", "b", ""} {
		ch, _ := subscriber(t, path, g).Subscribe(context.Background(), "t")
		if got := uuids(receive(t, ch, 50)); fmt.Sprint(got) != fmt.Sprint(seqUUIDs(0, 50)) {
			t.Fatalf("group %q got %v", g, got)
		}
		nothing(t, ch, 30*time.Millisecond)
	}
}

func TestCleanup(t *testing.T) {
	path := dbPath(t)
	w, _ := pools(t, path)
	pub := publisher(t, path)
	ctx := context.Background()
	publish(t, pub, "read", 0, 10)
	publish(t, pub, "unread", 0, 1)
	var msgs []*message.Message
	for i := range 2500 {
		msgs = append(msgs, message.NewMessage(strconv.Itoa(i), nil))
	}
	if err := pub.Publish("big", msgs...); err != nil {
		t.Fatal(err)
	}

	readSome := func(group, topic string, n int) {
		cctx, cancel := context.WithCancel(ctx)
		s := subscriber(t, path, group)
		ch, _ := s.Subscribe(cctx, topic)
		receive(t, ch, n)
		cancel()
		s.Close()
	}
	readSome("g", "read", 6)
	readSome("slow", "read", 3)
	readSome("g", "big", 2500)

	// Nothing is old enough yet.
	if n, err := bus.Cleanup(ctx, w, time.Now().Add(-time.Hour)); n != 0 || err != nil {
		t.Fatalf("young messages deleted: %d, %v", n, err)
	}
	// The slow group holds "read" back at 3; "unread" has no group; "big"
	// is all read, deleted in chunks.
	n, err := bus.Cleanup(ctx, w, time.Now().Add(time.Minute))
	if err != nil || n != 3+1+2500 {
		t.Fatalf("Cleanup = %d, %v; want %d", n, err, 3+1+2500)
	}
	if c := count(t, w, "read"); c != 7 {
		t.Fatalf("%d messages of read left, want 7", c)
	}
	// A retired group no longer holds messages back.
	if err := bus.DropConsumerGroup(ctx, w, "slow"); err != nil {
		t.Fatal(err)
	}
	if n, _ := bus.Cleanup(ctx, w, time.Now().Add(time.Minute)); n != 3 {
		t.Fatalf("after dropping the slow group: %d deleted, want 3", n)
	}
	// Deleting the newest messages does not reuse their numbers: the
	// group's offset still points before what comes next.
	publish(t, pub, "big", 2500, 2501)
	ch, _ := subscriber(t, path, "g").Subscribe(ctx, "big")
	if got := receive(t, ch, 1); got[0].UUID != "2500" {
		t.Fatalf("after cleanup got %s", got[0].UUID)
	}
}

func TestRetentionOption(t *testing.T) {
	path := dbPath(t)
	w, _ := pools(t, path)
	sub := subscriberWith(t, path, bus.SubscriberConfig{ConsumerGroup: "g", Retention: 20 * time.Millisecond,
		RetentionInterval: 20 * time.Millisecond})
	ch, _ := sub.Subscribe(context.Background(), "t")
	receive(t, ch, 0)
	// The group's offset exists once the subscription has taken its lease.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		w.QueryRow(`SELECT count(*) FROM bus_offsets WHERE consumer_group = 'g'`).Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no offset")
		}
		time.Sleep(5 * time.Millisecond)
	}
	publish(t, publisher(t, path), "t", 0, 5)
	receive(t, ch, 5)
	for count(t, w, "t") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages left", count(t, w, "t"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestErrors(t *testing.T) {
	path := dbPath(t)
	pub := publisher(t, path)
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
	if _, err := bus.NewPublisher(nil, bus.PublisherConfig{}, nil); err == nil {
		t.Error("a publisher without a database")
	}
	s := subscriber(t, path, "g")
	if _, err := s.Subscribe(context.Background(), ""); err == nil {
		t.Error("subscribed to an empty topic")
	}
	s.Close()
	if _, err := s.Subscribe(context.Background(), "t"); err == nil {
		t.Error("subscribed after close")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// TestOpenDB: the bus's own connections to a file, whatever its path: a
// writer that leaves checkpoints to the file's owner, and readers that
// cannot write; a subscriber on them gets what a publisher on other
// connections wrote.
func TestOpenDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a%20b?c#d.db")
	w, r, err := bus.OpenDB(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Close(); w.Close() }()
	if err := bus.InitializeSchema(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	var auto int
	if err := w.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Errorf("the writer's wal_autocheckpoint is %d (%v), want 0", auto, err)
	}
	if _, err := r.Exec(`DELETE FROM bus_messages`); err == nil {
		t.Error("a reader wrote")
	}

	pw, pr, err := bus.OpenDB(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { pr.Close(); pw.Close() }()
	pub, err := bus.NewPublisher(pw, bus.PublisherConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := bus.NewSubscriber(w, r, bus.SubscriberConfig{ConsumerGroup: "g"}, testLogger{t})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, err := sub.Subscribe(t.Context(), "topic")
	if err != nil {
		t.Fatal(err)
	}
	publish(t, pub, "topic", 0, 3)
	for i, m := range receive(t, ch, 3) {
		if m.UUID != strconv.Itoa(i) {
			t.Errorf("message %d is %s", i, m.UUID)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file is not at its path: %v", err)
	}
}
