// Package engines is the registry of aivis's engines: the store, the event
// bus and the rate-limit counter, each chosen by a setting (store, bus,
// counter). An engine is an entry in Stores, Buses or Counters: a factory
// that takes the configuration and what it needs of the engines opened
// before it. The server and every CLI command open their engines through
// this registry alone, so a new engine is a new entry, not new wiring.
//
// The order of opening: the store (given the master key that seals the
// secrets it keeps), then the bus (given the store's outbox, where
// store.Tx.Publish writes events), then the counter (given the store's
// store.Counters, to persist behind or to count in).
package engines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/schema"
)

// StoreFactory opens a store. box seals the secrets the store keeps (webhook
// signing secrets, connections' secret settings). policy is what opening
// may do with the schema (none: schema.Apply, apply what is pending).
type StoreFactory func(ctx context.Context, cfg config.Config, box *secrets.Box, policy ...schema.Policy) (Opened, error)

// Opened is an opened store.
type Opened struct {
	// Store is the store with its hot reads cached (core/store/cache),
	// validated by the engine's signal.
	Store store.Store
	// Outbox is where Store's transactions publish events, for the bus.
	Outbox Outbox
	// Holder names this process in the work it claims in the store (the
	// holder of its scans and content requests, the prefix of its
	// deliveries' leases).
	Holder string
	// Instrument gives the store the metrics it counts in and reports
	// (nil: it has none).
	Instrument func(m *metrics.Metrics)
}

// Outbox says where a store's transactions write the events they publish
// (store.Tx.Publish), for the bus that delivers them: each store has a type
// of its own (SQLiteOutbox, PostgreSQL's *buspg.Outbox), which the buses
// that read it, or forward from it, recognise; a bus refuses an outbox it
// cannot read.
type Outbox any

// BusFactory opens the event bus that delivers what outbox holds. log
// (nil: none) is given Watermill's messages, through buslog, and the bus's
// own.
type BusFactory func(ctx context.Context, cfg config.Config, outbox Outbox, log *slog.Logger) (Bus, error)

// Bus is an opened event bus.
type Bus interface {
	// Subscriber is a Watermill subscriber of one consumer group: every
	// group receives every event of a topic, at least once; the
	// subscribers of one group, in this process or another, share them.
	Subscriber(c Consumer) (message.Subscriber, error)
	// Ping reaches what carries the events within ctx: an error says it
	// does not answer now (readiness).
	Ping(ctx context.Context) error
	// Lag is how many events of topic the consumer group has yet to
	// acknowledge, as the bus tells it (the metrics' consumer lag).
	Lag(ctx context.Context, group, topic string) (int64, error)
	// Instrument reports what the bus has of its own (a PostgreSQL pool)
	// in m.
	Instrument(m *metrics.Metrics)
	// Close closes the bus; its subscribers are closed first.
	Close() error
}

// Consumer is a consumer group and how it takes events.
type Consumer struct {
	Group string
	// InFlight is how many events may be unacknowledged at once: they are
	// handled concurrently and acknowledged in order.
	InFlight int
	// Batch is how many events one read may fetch.
	Batch int
}

// CounterFactory opens the rate-limit engine: the counter of requests
// against the tiers' windows and the guards of failed authentications,
// which keep their windows where it keeps its own. st is the store's
// counts: the memory counter persists its windows to st between writes,
// the store counter counts in st itself, the Redis counter writes its
// keys' usage to it.
type CounterFactory func(ctx context.Context, cfg config.Config, st store.Counters, log *slog.Logger) (Limiter, error)

// Limiter is an opened rate-limit engine.
type Limiter struct {
	Counter limits.Counter
	// Guards makes the guards of failed authentications, which keep
	// their windows where the counter keeps its own: in this process's
	// memory, in the store, or on Redis.
	Guards limits.Guards
	// Close releases the engine, once Counter's Run has returned and no
	// guard is in use.
	Close func() error
	// Ping reaches where the counts are kept within ctx (nil: in this
	// process, or in the store, which readiness asks already).
	Ping func(ctx context.Context) error
	// Instrument times the round trips to the counter's server in m
	// (nil: it has none).
	Instrument func(m *metrics.Metrics)
}

// The engines, by the name their setting takes.
var (
	Stores   = map[string]StoreFactory{"sqlite": openSQLite, "postgres": openPostgres}
	Buses    = map[string]BusFactory{"sqlite": openSQLiteBus, "postgres": openPostgresBus, "nats": openNATSBus}
	Counters = map[string]CounterFactory{"memory": newMemoryCounter, "store": newStoreCounter, "redis": newRedisCounter}
)

// storeNeeds, busNeeds and counterNeeds check, per engine, the settings it
// cannot go without.
var (
	storeNeeds   = map[string]func(config.Config) error{"postgres": checkPostgres}
	busNeeds     = map[string]func(config.Config) error{"nats": checkNATS}
	counterNeeds = map[string]func(config.Config) error{"redis": checkRedis}
)

// Check refuses a setting that names no engine of the registry, naming the
// ones there are, and a store, a bus or a counter without the settings it
// needs.
func Check(cfg config.Config) error {
	errs := []error{
		known("store", cfg.Store, Stores),
		known("bus", cfg.Bus, Buses),
		known("counter", cfg.Counter, Counters),
	}
	for _, needs := range []func(config.Config) error{storeNeeds[cfg.Store], busNeeds[cfg.Bus], counterNeeds[cfg.Counter]} {
		if needs != nil {
			errs = append(errs, needs(cfg))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", config.ErrInvalid, err)
	}
	return nil
}

// CheckServe is Check, and refuses what only a server cannot run with:
// counter memory serving the API of store postgres. The memory counter's
// counts, its guards of failed authentications included, are its
// process's, and one process at a time serves with it only on one data
// directory (its api.lock); the instances of a PostgreSQL store each have a
// data directory of their own, so each would serve and count alone,
// multiplying every limit by the number of instances. The commands other
// than serve count nothing, and are not refused.
func CheckServe(cfg config.Config) error {
	if err := Check(cfg); err != nil {
		return err
	}
	if cfg.API && cfg.Store == "postgres" && cfg.Counter == "memory" {
		return fmt.Errorf("%w: counter memory cannot serve the API of store postgres: its counts (the rate limits' windows "+
			"and the guards of failed authentications) are this process's alone, and every instance would serve with its own, "+
			"multiplying each limit by the number of instances; choose counter redis (or store), or api false for an instance "+
			"that runs the workers alone", config.ErrInvalid)
	}
	return nil
}

func known[F any](setting, name string, m map[string]F) error {
	if _, ok := m[name]; ok {
		return nil
	}
	return fmt.Errorf("%s %q is not an engine of aivis (known: %s)", setting, name, strings.Join(slices.Sorted(maps.Keys(m)), ", "))
}
