package engines

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/bus/buslog"
	bus "github.com/aivis/aivis/core/bus/sqlite"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/sqlite"
)

// DBFile is the SQLite database's file name inside the data directory.
const DBFile = "aivis.db"

// SQLiteOutbox is the outbox of the SQLite store: the bus's table in the
// database file at Path, which the SQLite bus reads on connections of its
// own.
type SQLiteOutbox struct{ Path string }

// openSQLite opens the data directory's database file, its reads cached
// under the file's signal; this process is one of the file's holders.
func openSQLite(ctx context.Context, cfg config.Config, box *secrets.Box, policy ...schema.Policy) (Opened, error) {
	path := filepath.Join(cfg.DataDir, DBFile)
	db, err := sqlite.OpenWith(ctx, path, schema.Of(policy))
	if err != nil {
		return Opened{}, err
	}
	db.SetSecrets(box)
	return Opened{Store: cache.Wrap(db, db.Signal()), Outbox: SQLiteOutbox{Path: path}, Holder: db.Holder(),
		Instrument: func(m *metrics.Metrics) { db.SetMetrics(m.Store) }}, nil
}

// How the SQLite bus keeps events, writes its consumer groups' offsets
// and hands a group's topic over.
const (
	// busRetention keeps an event this long once every group has acked it.
	busRetention = 7 * 24 * time.Hour
	// busCommit is how often a group's offset is written while events
	// flow. The write waits for the file's write lock, which the store's
	// writer holds most of the time under load, with SQLite's busy handler
	// (sleeps of 1, 2, 5, 10 ms and more between tries): about 17 ms
	// against 2 to 5 for a turn on the store's own connection, during
	// which the group is handed no event. At the bus's default of 100 ms
	// that cost the event path up to a quarter of its throughput. Once a
	// second, a crash has at most the last second's events handled again,
	// which the fan-out turns into nothing (one delivery per target and
	// event).
	busCommit = time.Second
	// busLease is how long a restarted server waits, after a crash, for
	// the dead one's lease on a group's topic.
	busLease = 5 * time.Second
)

// sqliteBus is the SQLite bus on the store's database file.
type sqliteBus struct {
	write, read *sql.DB
	log         watermill.LoggerAdapter
}

func openSQLiteBus(ctx context.Context, cfg config.Config, outbox Outbox, log *slog.Logger) (Bus, error) {
	ob, ok := outbox.(SQLiteOutbox)
	if !ok {
		return nil, fmt.Errorf("bus sqlite delivers the events of store sqlite, not of store %q", cfg.Store)
	}
	w, r, err := bus.OpenDB(ctx, ob.Path)
	if err != nil {
		return nil, err
	}
	return &sqliteBus{write: w, read: r, log: buslog.New(log)}, nil
}

func (b *sqliteBus) Subscriber(c Consumer) (message.Subscriber, error) {
	return bus.NewSubscriber(b.write, b.read, bus.SubscriberConfig{ConsumerGroup: c.Group,
		MaxInFlight: c.InFlight, BatchSize: c.Batch, Retention: busRetention, CommitInterval: busCommit, LeaseDuration: busLease}, b.log)
}

// Ping reads the file on the bus's own connections.
func (b *sqliteBus) Ping(ctx context.Context) error {
	var v int
	return b.read.QueryRowContext(ctx, `SELECT 1`).Scan(&v)
}

// Lag counts what follows the group's offset in the bus's table.
func (b *sqliteBus) Lag(ctx context.Context, group, topic string) (int64, error) {
	return bus.Lag(ctx, b.read, group, topic)
}

func (b *sqliteBus) Instrument(*metrics.Metrics) {}

func (b *sqliteBus) Close() error { return errors.Join(b.read.Close(), b.write.Close()) }
