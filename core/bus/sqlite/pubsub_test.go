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
)

// pools opens the database as the product does: one writer connection with
// immediate transactions, and a read-only pool.
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

// TestPubSub runs Watermill's acceptance suite. Every constructor call
// makes a new Publisher and Subscriber on one shared database file, as
// several instances of a service share one database.
func TestPubSub(t *testing.T) {
	write, read := pools(t, filepath.Join(t.TempDir(), "bus.db"))
	logger := watermill.NopLogger{}
	make := func(t *testing.T, group string) (message.Publisher, message.Subscriber) {
		pub, err := bus.NewPublisher(write, bus.PublisherConfig{}, logger)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := bus.NewSubscriber(write, read, bus.SubscriberConfig{ConsumerGroup: group, PollInterval: 10 * time.Millisecond,
			LeaseDuration: 2 * time.Second, InitializeSchema: true}, logger)
		if err != nil {
			t.Fatal(err)
		}
		return pub, sub
	}
	tests.TestPubSub(t, tests.Features{
		ConsumerGroups:                      true,
		ExactlyOnceDelivery:                 false,
		GuaranteedOrder:                     true,
		GuaranteedOrderWithSingleSubscriber: true,
		Persistent:                          true,
	},
		func(t *testing.T) (message.Publisher, message.Subscriber) { return make(t, "default") },
		make,
	)
}
