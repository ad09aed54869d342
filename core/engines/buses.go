package engines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/bus/buslog"
	busnats "github.com/aivis/aivis/core/bus/nats"
	buspg "github.com/aivis/aivis/core/bus/postgres"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/store/postgres"
)

// The buses of the PostgreSQL store's outbox (*buspg.Outbox): postgres
// reads it where it is; nats is fed from it by the forwarder.

// pgOutbox is the PostgreSQL store's outbox, or the error of a bus that
// cannot read another store's.
func pgOutbox(bus string, cfg config.Config, outbox Outbox, forward bool) (*buspg.Outbox, error) {
	ob, ok := outbox.(*buspg.Outbox)
	if !ok {
		return nil, fmt.Errorf("bus %s delivers the events of store postgres, not of store %q", bus, cfg.Store)
	}
	if ob.Forward != forward {
		return nil, fmt.Errorf("bus %s: the store's outbox was opened for another bus", bus)
	}
	return ob, nil
}

// postgresBus is Watermill's SQL pub/sub on the store's database, on a
// pool of its own.
type postgresBus struct {
	pool *pgxpool.Pool
	log  watermill.LoggerAdapter
}

func openPostgresBus(ctx context.Context, cfg config.Config, outbox Outbox, log *slog.Logger) (Bus, error) {
	ob, err := pgOutbox(buspg.Name, cfg, outbox, false)
	if err != nil {
		return nil, err
	}
	pool, err := buspg.OpenPool(ctx, ob)
	if err != nil {
		return nil, err
	}
	return &postgresBus{pool: pool, log: buslog.New(log)}, nil
}

// Subscriber is a subscriber of the group, reading Batch events at a time
// and handing them over one at a time: the SQL pub/sub has one in flight,
// whatever InFlight says.
func (b *postgresBus) Subscriber(c Consumer) (message.Subscriber, error) {
	return buspg.NewSubscriber(b.pool, buspg.SubscriberConfig{Group: c.Group, Batch: c.Batch}, b.log)
}

func (b *postgresBus) Ping(ctx context.Context) error { return b.pool.Ping(ctx) }

// Lag counts what follows the group's position in the topic's table.
func (b *postgresBus) Lag(ctx context.Context, group, topic string) (int64, error) {
	return buspg.Lag(ctx, b.pool, group, topic)
}

func (b *postgresBus) Instrument(m *metrics.Metrics) {
	m.WatchPool("bus", func() metrics.PoolStats { return postgres.PoolStats(b.pool) })
}

func (b *postgresBus) Close() error {
	b.pool.Close()
	return nil
}

// natsBus is NATS JetStream, fed by the forwarder from the store's outbox.
type natsBus struct {
	bus  *busnats.Bus
	pub  message.Publisher
	pool *pgxpool.Pool
	fwd  *buspg.Forwarder
}

func openNATSBus(ctx context.Context, cfg config.Config, outbox Outbox, log *slog.Logger) (Bus, error) {
	ob, err := pgOutbox("nats", cfg, outbox, true)
	if err != nil {
		return nil, err
	}
	if err := checkNATS(cfg); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &natsBus{}
	if b.bus, err = busnats.Open(ctx, cfg.NATSURL, cfg.ClusterName, log); err == nil {
		if b.pub, err = b.bus.Publisher(); err == nil {
			if b.pool, err = buspg.OpenPool(ctx, ob); err == nil {
				b.fwd, err = buspg.Forward(b.pool, dropInvalid{b.pub, log}, log)
			}
		}
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// checkNATS refuses bus nats without its server.
func checkNATS(cfg config.Config) error {
	if cfg.NATSURL == "" {
		return errors.New("bus nats needs nats_url (AIVIS_NATS_URL, --nats-url)")
	}
	return nil
}

// Subscriber is a member of the group's queue group: InFlight events
// handed over at once, Batch pushed ahead.
func (b *natsBus) Subscriber(c Consumer) (message.Subscriber, error) {
	return b.bus.Subscriber(busnats.SubscriberConfig{Group: c.Group, InFlight: c.InFlight, Batch: c.Batch})
}

// Ping reaches NATS and the database the forwarder reads.
func (b *natsBus) Ping(ctx context.Context) error {
	if err := b.bus.Ping(ctx); err != nil {
		return err
	}
	return b.pool.Ping(ctx)
}

// Lag is what the group's consumer has yet to have acknowledged, and
// what waits in the outbox for the forwarder.
func (b *natsBus) Lag(ctx context.Context, group, topic string) (int64, error) {
	n, err := b.bus.Lag(ctx, group, topic)
	if err != nil {
		return 0, err
	}
	waiting, err := buspg.ForwarderLag(ctx, b.pool)
	return n + waiting, err
}

func (b *natsBus) Instrument(m *metrics.Metrics) {
	m.WatchPool("forwarder", func() metrics.PoolStats { return postgres.PoolStats(b.pool) })
}

// Close stops the forwarder, then closes what it used.
func (b *natsBus) Close() error {
	var errs []error
	if b.fwd != nil {
		errs = append(errs, b.fwd.Close())
	}
	if b.pool != nil {
		b.pool.Close()
	}
	if b.pub != nil {
		errs = append(errs, b.pub.Close())
	}
	if b.bus != nil {
		errs = append(errs, b.bus.Close())
	}
	return errors.Join(errs...)
}

// dropInvalid drops, with an error in the log, an event NATS cannot carry
// as it is (busnats.ErrInvalid): sent again, it would fail again and hold
// up every event behind it. A call that holds one is sent again event by
// event, so that only those are dropped.
type dropInvalid struct {
	message.Publisher
	log *slog.Logger
}

func (p dropInvalid) Publish(topic string, msgs ...*message.Message) error {
	err := p.Publisher.Publish(topic, msgs...)
	if !errors.Is(err, busnats.ErrInvalid) {
		return err
	}
	if len(msgs) > 1 {
		for _, m := range msgs {
			if err := p.Publish(topic, m); err != nil {
				return err
			}
		}
		return nil
	}
	p.log.Error("bus nats: an event NATS cannot carry was dropped", "topic", topic, "err", err)
	return nil
}
