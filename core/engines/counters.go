package engines

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/store"
)

// newMemoryCounter makes the embedded counter: the windows in this
// process's memory, written behind to the store every
// counter_flush_interval, starting from the counts the store saved last.
func newMemoryCounter(ctx context.Context, cfg config.Config, st store.Counters, log *slog.Logger) (Limiter, error) {
	m := limits.NewMemory(st, log)
	m.Interval = time.Duration(cfg.CounterFlushInterval)
	if err := m.Load(ctx, time.Now()); err != nil {
		return Limiter{}, fmt.Errorf("load request counts: %w", err)
	}
	return Limiter{Counter: m, Guards: limits.MemoryGuards, Close: func() error { return nil }}, nil
}

// newStoreCounter makes the shared counter: the windows counted in the
// store, one write transaction a request, and the guards' windows kept
// there too, shared exactly by every process on the store.
func newStoreCounter(_ context.Context, _ config.Config, st store.Counters, log *slog.Logger) (Limiter, error) {
	c := limits.NewStoreCounter(st, log)
	return Limiter{Counter: c, Guards: c.Guard, Close: func() error { return nil }}, nil
}

// newRedisCounter counts requests, and keeps the guards' windows, on the
// Redis server of redis_url under the prefix cluster_name, which every
// instance of the deployment shares; the keys' usage is written to the
// store every counter_flush_interval. It refuses to start when the server
// does not answer (a wrong address or password is then seen at once);
// afterwards, while it does not, requests are refused with 503
// RATE_LIMIT_UNAVAILABLE.
func newRedisCounter(ctx context.Context, cfg config.Config, st store.Counters, log *slog.Logger) (Limiter, error) {
	rdb, err := limits.NewRedisClient(cfg.RedisURL)
	if err != nil {
		return Limiter{}, err
	}
	redis.SetLogger(redisLog{log})
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return Limiter{}, fmt.Errorf("counter redis: the server of redis_url does not answer: %w", err)
	}
	c := limits.NewRedis(rdb, cfg.ClusterName, st, log)
	c.Interval = time.Duration(cfg.CounterFlushInterval)
	return Limiter{Counter: c, Guards: c.Guard, Close: rdb.Close, Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		Instrument: func(m *metrics.Metrics) { rdb.AddHook(limits.RoundTrips(m.Redis.RoundTrip)) }}, nil
}

// checkRedis refuses counter redis without its server.
func checkRedis(cfg config.Config) error {
	if cfg.RedisURL == "" {
		return errors.New("counter redis needs redis_url (AIVIS_REDIS_URL, --redis-url)")
	}
	return nil
}

// redisLog writes go-redis's own messages (a pool's failed dials, say) to
// the server's log at debug level: the counter logs when the server stops
// and starts answering.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
