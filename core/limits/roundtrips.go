package limits

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// RoundTrips is a go-redis hook that tells observe how long each round
// trip to the server took: a command, or a pipeline of commands (the
// decisions of concurrent requests share one).
func RoundTrips(observe func(time.Duration)) redis.Hook { return roundTrips(observe) }

type roundTrips func(time.Duration)

func (roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (o roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		o(time.Since(start))
		return err
	}
}

func (o roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		o(time.Since(start))
		return err
	}
}
