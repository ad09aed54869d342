package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	busnats "github.com/aivis/aivis/core/bus/nats"
	bus "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/internal/bustest"
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
	if _, err := bus.Forward(bp, pub, watermill.NopLogger{}); err != nil {
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

// TestForwarderLosesNothing: events published in committed transactions
// reach NATS's subscribers, in commit order; those of transactions rolled
// back never do; a forwarder killed (SIGKILL) while it forwards and started
// again loses none.
func TestForwarderLosesNothing(t *testing.T) {
	db := testsvc.Postgres(t)
	url, cluster := testsvc.NATS(t)
	p := pool(t, db, 8)
	outbox := bus.NewOutbox(p, "nats")
	nb, err := busnats.Open(t.Context(), url, cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	// One in flight: what NATS stored, in its order.
	sub, err := nb.Subscriber(busnats.SubscriberConfig{Group: "g", Batch: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ch, err := sub.Subscribe(t.Context(), "aivis.events")
	if err != nil {
		t.Fatal(err)
	}
	fwd := startForwarder(t, db, url, cluster)

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
	startForwarder(t, db, url, cluster)
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
