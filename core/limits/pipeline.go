package limits

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RedisClient is what the Redis counter and its guards use of a client
// (a *redis.Client is one).
type RedisClient interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
}

// pipeline runs the commands of concurrent callers in shared round trips:
// a caller that finds none in flight sends its command at once; the
// commands given meanwhile queue, and when the round trip ends the first
// of their callers sends them all in one pipeline (go-redis's Pipeline:
// the commands written at once, the server answering each in order), and
// so on. A lone caller waits for nothing more than its own round trip;
// callers at once share one (the server reads, runs and answers them
// together), so the decisions of a busy server cost a fraction of the
// system calls and wake-ups each round trip of its own took. Each command
// (a script) still runs alone and whole on the server.
type pipeline struct {
	rdb RedisClient

	mu    sync.Mutex
	queue []*pipelined
	busy  bool // a round trip is in flight
}

type pipelined struct {
	add func(ctx context.Context, p redis.Pipeliner) redis.Cmder
	cmd redis.Cmder
	// wake says the command's answer is in (false), or that its caller is
	// to send the commands queued (true).
	wake chan bool
}

// do adds a command to the next round trip with add and returns it once
// its answer is in. The round trip runs under the context of the caller
// that sends it, without its cancellation: others' commands ride on it
// (the client's read and write timeouts bound it).
func (p *pipeline) do(ctx context.Context, add func(ctx context.Context, p redis.Pipeliner) redis.Cmder) redis.Cmder {
	c := &pipelined{add: add, wake: make(chan bool, 1)}
	p.mu.Lock()
	p.queue = append(p.queue, c)
	send := !p.busy
	p.busy = true
	p.mu.Unlock()
	if !send && !<-c.wake {
		return c.cmd
	}
	p.mu.Lock()
	batch := p.queue
	p.queue = nil
	p.mu.Unlock()
	pipe := p.rdb.Pipeline()
	ctx = context.WithoutCancel(ctx)
	for _, q := range batch {
		q.cmd = q.add(ctx, pipe)
	}
	pipe.Exec(ctx) // each command holds its own answer or error
	p.mu.Lock()
	if len(p.queue) > 0 {
		p.queue[0].wake <- true
	} else {
		p.busy = false
	}
	p.mu.Unlock()
	for _, q := range batch {
		if q != c {
			q.wake <- false
		}
	}
	return c.cmd
}

// script runs s in the next round trip: EVALSHA, then, if the server does
// not have the script, EVAL on its own.
func (p *pipeline) script(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := p.do(ctx, func(ctx context.Context, pipe redis.Pipeliner) redis.Cmder {
		return s.EvalSha(ctx, pipe, keys, args...)
	}).(*redis.Cmd)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		return s.Eval(ctx, p.rdb, keys, args...)
	}
	return cmd
}

// hmget reads fields of key in the next round trip.
func (p *pipeline) hmget(ctx context.Context, key string, fields ...string) *redis.SliceCmd {
	return p.do(ctx, func(ctx context.Context, pipe redis.Pipeliner) redis.Cmder {
		return pipe.HMGet(ctx, key, fields...)
	}).(*redis.SliceCmd)
}
