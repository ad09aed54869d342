package limits_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/internal/testsvc"
)

// TestRoundTrips: the hook tells of each round trip, a command's and a
// pipeline's (one for all its commands), with how long it took.
func TestRoundTrips(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	c := redisClient(t, url)
	var mu sync.Mutex
	var took []time.Duration
	c.AddHook(limits.RoundTrips(func(d time.Duration) {
		mu.Lock()
		took = append(took, d)
		mu.Unlock()
	}))
	ctx := context.Background()
	// A connection's own commands (HELLO, ...) are round trips too: the
	// client's connections are made first.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	took = nil
	mu.Unlock()
	if err := c.Set(ctx, prefix+"k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := c.Pipeline()
	for range 3 {
		pipe.Incr(ctx, prefix+"n")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(took) != 2 || took[0] <= 0 || took[1] <= 0 {
		t.Errorf("round trips told: %v; want two (a command, a pipeline of three), each of some time", took)
	}
}
