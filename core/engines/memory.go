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

// memoryCounter is the embedded counter: the windows in this process's
// memory, written behind to the store every counter_flush_interval.
type memoryCounter struct {
	*limits.Memory
	interval time.Duration
}

// newMemoryCounter starts from the counts the store saved last.
func newMemoryCounter(ctx context.Context, cfg config.Config, st store.Counters, log *slog.Logger) (Counter, error) {
	m := limits.NewMemory(st, log)
	if err := m.Load(ctx, time.Now()); err != nil {
		return nil, fmt.Errorf("load request counts: %w", err)
	}
	return memoryCounter{Memory: m, interval: time.Duration(cfg.CounterFlushInterval)}, nil
}

func (m memoryCounter) Run(ctx context.Context) { m.Memory.Run(ctx, m.interval) }
