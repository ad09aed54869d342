package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	busnats "github.com/aivis/aivis/core/bus/nats"
	bus "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/internal/bustest"
	"github.com/aivis/aivis/internal/syncbuf"
	"github.com/aivis/aivis/internal/testsvc"
)

// The forwarder's process in TestForwarderLosesNothing: this test binary,
// run with these variables, forwards the outbox of the database to NATS
// until it is killed.
const (
	envDB      = "AIVIS_TEST_FORWARDER_DB"
	envNATS    = "AIVIS_TEST_FORWARDER_NATS"
	envCluster = "AIVIS_TEST_FORWARDER_CLUSTER"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(envDB); db != "" {
		if err := forward(db, os.Getenv(envNATS), os.Getenv(envCluster)); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// forward runs a forwarder as the NATS bus does, says so on its standard
// output and waits to be killed.
func forward(db, url, cluster string) error {
	ctx := context.Background()
	p, err := pgxpool.New(ctx, db)
	if err != nil {
		return err
	}
	nb, err := busnats.Open(ctx, url, cluster, nil)
	if err != nil {
		return err
	}
	pub, err := nb.Publisher()
	if err != nil {
		return err
	}
	bp, err := bus.OpenPool(ctx, bus.NewOutbox(p, "nats"))
	if err != nil {
		return err
	}
	if _, err := bus.Forward(bp, pub, nil); err != nil {
		return err
	}
	fmt.Println("forwarding")
	select {}
}

// startForwarder starts a forwarder's process and waits until it forwards.
func startForwarder(t *testing.T, db, url, cluster string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envDB+"="+db, envNATS+"="+url, envCluster+"="+cluster)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "forwarding" {
		t.Fatalf("the forwarder's process said %q, %v", line, err)
	}
	return cmd
}

var errRollback = errors.New("rolled back")

// forwardTo is the outbox of a new database, enveloped for a forwarder,
// and bus nats on a new stream.
type forwardTo struct {
	db, url, cluster string
	p                *pgxpool.Pool
	outbox           *bus.Outbox
	nb               *busnats.Bus
}

// newForwardTo makes a forwardTo whose outbox is on a pool of maxConns,
// closed when tb ends.
func newForwardTo(tb testing.TB, maxConns int32) forwardTo {
	tb.Helper()
	f := forwardTo{db: testsvc.Postgres(tb)}
	f.url, f.cluster = testsvc.NATS(tb)
	f.p = pool(tb, f.db, maxConns)
	f.outbox = bus.NewOutbox(f.p, "nats")
	var err error
	if f.nb, err = busnats.Open(tb.Context(), f.url, f.cluster, nil); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.nb.Close() })
	return f
}

// subscribe is a subscription of the group g to aivis.events.
func (f forwardTo) subscribe(tb testing.TB, c busnats.SubscriberConfig) <-chan *message.Message {
	tb.Helper()
	c.Group = "g"
	sub, err := f.nb.Subscriber(c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sub.Close() })
	ch, err := sub.Subscribe(tb.Context(), "aivis.events")
	if err != nil {
		tb.Fatal(err)
	}
	return ch
}

// forwarders starts n forwarders of the outbox, each with its pool and its
// bus nats (which makes the stream if it is missing), as n instances run
// them, logging to log (nil: nowhere); they stop when tb ends.
func (f forwardTo) forwarders(tb testing.TB, n int, log *slog.Logger) {
	tb.Helper()
	for range n {
		instance, err := busnats.Open(tb.Context(), f.url, f.cluster, log)
		if err != nil {
			tb.Fatal(err)
		}
		pub, err := instance.Publisher()
		if err != nil {
			tb.Fatal(err)
		}
		bp, err := bus.OpenPool(tb.Context(), f.outbox)
		if err != nil {
			tb.Fatal(err)
		}
		fwd, err := bus.Forward(bp, pub, log)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { fwd.Close(); bp.Close(); pub.Close(); instance.Close() })
	}
}

// publish commits msgs to the outbox in a transaction of their own.
func (f forwardTo) publish(msgs ...*message.Message) error {
	return pgx.BeginFunc(context.Background(), f.p, func(tx pgx.Tx) error {
		return f.outbox.Publisher(tx).Publish("aivis.events", msgs...)
	})
}

// TestForwarderLosesNothing: events published in committed transactions
// reach NATS's subscribers, in commit order; those of transactions rolled
// back never do; a forwarder killed (SIGKILL) while it forwards and started
// again loses none.
func TestForwarderLosesNothing(t *testing.T) {
	f := newForwardTo(t, 8)
	p, outbox := f.p, f.outbox
	// One in flight: what NATS stored, in its order.
	ch := f.subscribe(t, busnats.SubscriberConfig{Batch: 64})
	fwd := startForwarder(t, f.db, f.url, f.cluster)

	// 300 transactions of 10 events; every tenth is rolled back after it
	// published.
	publish := func(ctx context.Context, msgs []*message.Message, rollback bool) error {
		return pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
				return err
			}
			if err := outbox.Publisher(tx).Publish("aivis.events", msgs...); err != nil {
				return err
			}
			if rollback {
				return errRollback
			}
			return nil
		})
	}
	committed, rolledBack := map[string]int{}, map[string]bool{}
	var order []string
	batches := make([][]*message.Message, 300)
	for i := range batches {
		batches[i] = bustest.Messages(10)
		for _, m := range batches[i] {
			if i%10 == 9 {
				rolledBack[m.UUID] = true
			} else {
				committed[m.UUID] = len(order)
				order = append(order, m.UUID)
			}
		}
	}
	published := make(chan error, 1)
	go func() {
		for i, msgs := range batches {
			if err := publish(context.Background(), msgs, i%10 == 9); err != nil && !errors.Is(err, errRollback) {
				published <- err
				return
			}
		}
		published <- nil
	}()

	received := map[string]int{}
	last := -1
	next := func() *message.Message {
		t.Helper()
		select {
		case m := <-ch:
			m.Ack()
			if received[m.UUID]++; rolledBack[m.UUID] {
				t.Fatalf("event %s of a rolled back transaction reached NATS", m.UUID)
			}
			if i, ok := committed[m.UUID]; ok && received[m.UUID] == 1 {
				if i < last {
					t.Errorf("event %d came after event %d", i, last)
				}
				last = i
			} else if !ok && m.UUID != "fence" {
				t.Fatalf("unknown event %s", m.UUID)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no event in 30 s; %d of %d received", len(received), len(committed))
			return nil
		}
	}
	for len(received) < 700 {
		next()
	}
	if err := fwd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	fwd.Wait()
	startForwarder(t, f.db, f.url, f.cluster)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	fence := message.NewMessage("fence", nil)
	if err := publish(t.Context(), []*message.Message{fence}, false); err != nil {
		t.Fatal(err)
	}
	for next().UUID != "fence" {
	}
	dup := 0
	for id := range committed {
		if received[id] == 0 {
			t.Errorf("event %s was lost", id)
		}
		dup += received[id] - 1
	}
	t.Logf("%d events, %d received twice", len(committed), dup)
}

// TestTwoForwardersTakeTurnsQuietly: two forwarders on one database, each
// with its pool and its NATS connection as each instance has them, move
// the events of transactions committed at once by 8 writers to NATS, every
// one exactly once, and log no error: one forwards while the other waits
// its turn, where each one's reads failed with a serialization failure
// (SQLSTATE 40001) whenever the other had moved the offset since its
// snapshot.
func TestTwoForwardersTakeTurnsQuietly(t *testing.T) {
	f := newForwardTo(t, 16)
	ch := f.subscribe(t, busnats.SubscriberConfig{InFlight: 64, Batch: 256})
	var logs syncbuf.Buffer
	f.forwarders(t, 2, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	const writers, txs, each = 8, 60, 5
	sent := map[string]bool{}
	batches := make([][][]*message.Message, writers)
	for w := range batches {
		for range txs {
			msgs := bustest.Messages(each)
			for _, m := range msgs {
				sent[m.UUID] = true
			}
			batches[w] = append(batches[w], msgs)
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, msgs := range batches[w] {
				if err := f.publish(msgs...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	received := map[string]int{}
	receive := func() string {
		t.Helper()
		select {
		case m := <-ch:
			m.Ack()
			received[m.UUID]++
			return m.UUID
		case <-time.After(30 * time.Second):
			t.Fatalf("no event in 30 s; %d of %d received", len(received), len(sent))
			return ""
		}
	}
	for len(received) < len(sent) {
		receive()
	}
	wg.Wait()
	// The fence: an event committed after all the others, whose arrival
	// says that any copy of theirs would have come before it.
	if err := f.publish(message.NewMessage("fence", nil)); err != nil {
		t.Fatal(err)
	}
	for receive() != "fence" {
	}
	for id, n := range received {
		if id != "fence" && (!sent[id] || n != 1) {
			t.Errorf("event %s received %d times (sent: %v), want once", id, n, sent[id])
		}
	}
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") || strings.Contains(line, "cannot forward") {
			t.Errorf("the forwarders logged: %s", line)
		}
	}
}

// TestForwarderLogsARunOfFailuresOnce: while NATS has no stream for the
// events (deleted under the forwarder), every read's publication fails;
// the first failure is logged as an error and the others at debug level,
// and once the stream is made again the events go out and the log says so
// once.
func TestForwarderLogsARunOfFailuresOnce(t *testing.T) {
	f := newForwardTo(t, 8)
	var logs syncbuf.Buffer
	f.forwarders(t, 1, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	nc, err := nats.Connect(f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	if err := js.DeleteStream(f.cluster); err != nil {
		t.Fatal(err)
	}
	msgs := bustest.Messages(3)
	if err := f.publish(msgs...); err != nil {
		t.Fatal(err)
	}
	const failed, again = "cannot forward the outbox's events", "the outbox's events are forwarded again"
	logs.WaitFor(t, "failures=2", 30*time.Second)                   // the second failure
	remade, err := busnats.Open(t.Context(), f.url, f.cluster, nil) // makes the stream again
	if err != nil {
		t.Fatal(err)
	}
	defer remade.Close()
	ch := f.subscribe(t, busnats.SubscriberConfig{})
	for _, want := range msgs {
		select {
		case m := <-ch:
			m.Ack()
			if m.UUID != want.UUID {
				t.Fatalf("received %s, want %s", m.UUID, want.UUID)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s not received in 30 s once the stream is back:\n%s", want.UUID, logs.String())
		}
	}
	logs.WaitFor(t, again, 30*time.Second)
	levels := map[string]int{}
	for line := range strings.Lines(logs.String()) {
		for _, level := range []string{"ERROR", "DEBUG", "INFO"} {
			if strings.Contains(line, "level="+level) && strings.Contains(line, failed) || level == "INFO" && strings.Contains(line, again) {
				levels[level]++
			}
		}
	}
	if levels["ERROR"] != 1 || levels["DEBUG"] < 1 || levels["INFO"] != 1 {
		t.Errorf("failures logged %v; want one error, the rest at debug level, and one line once forwarding again:\n%s", levels, logs.String())
	}
}
