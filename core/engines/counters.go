package engines

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store"
)

// newMemoryCounter makes the embedded counter: the windows in this
// process's memory, written behind to the store every
// counter_flush_interval, starting from the counts the store saved last.
func newMemoryCounter(ctx context.Context, cfg config.Config, st store.Counters, log *slog.Logger) (limits.Counter, error) {
	m := limits.NewMemory(st, log)
	m.Interval = time.Duration(cfg.CounterFlushInterval)
	if err := m.Load(ctx, time.Now()); err != nil {
		return nil, fmt.Errorf("load request counts: %w", err)
	}
	return m, nil
}

// newStoreCounter makes the shared counter: the windows counted in the
// store, one write transaction a request, shared exactly by every process
// on the store.
func newStoreCounter(_ context.Context, _ config.Config, st store.Counters, _ *slog.Logger) (limits.Counter, error) {
	return limits.NewStoreCounter(st), nil
}
