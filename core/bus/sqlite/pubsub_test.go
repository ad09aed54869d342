package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	_ "github.com/mattn/go-sqlite3"

	bus "github.com/aivis/aivis/core/bus/sqlite"
	"github.com/aivis/aivis/internal/bustest"
)

// pools opens the database file as the product does: one writer
// connection whose transactions are BEGIN IMMEDIATE, and a read-only pool.
func pools(tb testing.TB, path string) (write, read *sql.DB) {
	tb.Helper()
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=10000&_synchronous=NORMAL"
	write, err := sql.Open("sqlite3", dsn+"&_txlock=immediate")
	if err != nil {
		tb.Fatal(err)
	}
	write.SetMaxOpenConns(1)
	read, err = sql.Open("sqlite3", dsn+"&_query_only=true")
	if err != nil {
		tb.Fatal(err)
	}
	read.SetMaxOpenConns(8)
	tb.Cleanup(func() { read.Close(); write.Close() })
	if err := bus.InitializeSchema(context.Background(), write); err != nil {
		tb.Fatal(err)
	}
	return write, read
}

// TestPubSub runs Watermill's acceptance suite in full (its 10,000-message
// cases included; no -short needed), on one database file per run: every
// constructor call makes a new Publisher and Subscriber on it, as the
// processes of a service share one database. No broker to restart.
func TestPubSub(t *testing.T) {
	t.Run("product pools", func(t *testing.T) {
		write, read := pools(t, filepath.Join(t.TempDir(), "bus.db"))
		runSuite(t, write, read, bus.SubscriberConfig{}, bustest.Features)
	})
	// One pool for everything, small batches, an ack deadline far off.
	t.Run("one pool", func(t *testing.T) {
		write, _ := pools(t, filepath.Join(t.TempDir(), "bus.db"))
		runSuite(t, write, nil, bus.SubscriberConfig{BatchSize: 7, AckDeadline: time.Minute}, bustest.Features)
	})
	// Sixteen messages in flight: handled concurrently, so without the
	// order guarantee, and nothing lost.
	t.Run("window", func(t *testing.T) {
		write, read := pools(t, filepath.Join(t.TempDir(), "bus.db"))
		runSuite(t, write, read, bus.SubscriberConfig{MaxInFlight: 16}, bustest.Unordered())
	})
}

func runSuite(t *testing.T, write, read *sql.DB, cfg bus.SubscriberConfig, features tests.Features) {
	logger := watermill.NopLogger{}
	bustest.Suite(t, features, func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := bus.NewPublisher(write, bus.PublisherConfig{InitializeSchema: true}, logger)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.ConsumerGroup, c.PollInterval, c.LeaseDuration, c.InitializeSchema = group, 10*time.Millisecond, 2*time.Second, true
		sub, err := bus.NewSubscriber(write, read, c, logger)
		if err != nil {
			t.Fatal(err)
		}
		return pub, sub
	})
}
