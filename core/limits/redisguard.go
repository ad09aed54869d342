package limits

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisGuard is the Guard of a deployment of several instances: a
// subject's window lives on the Redis server of a Redis counter, under
// <prefix>:guard:<name>:<subject>, where every process's guard of that name
// sees it. Take is one run of the counter's windows script (a
// window of one), Peek one read of the hash, Give one script of its own; the
// commands of concurrent callers share round trips. The key is kept until an
// hour after its window ends. Subjects are kept as AuthGuard keeps them (a
// key and an email address as their SHA-256, an address by host or /64).
type RedisGuard struct {
	conn   *redisConn
	key    string // the prefix of its subjects' keys
	limit  []int
	window []int64 // seconds
}

// Guard makes the guard named name on r's server: limit failures per
// subject in each window of the given length (a whole number of seconds
// that divides a day).
func (r *Redis) Guard(name string, limit int, window time.Duration) Guard {
	return &RedisGuard{conn: r.conn, key: r.conn.prefix + "guard:" + name + ":", limit: []int{limit}, window: []int64{int64(window / time.Second)}}
}

func (g *RedisGuard) subjectKey(s Subject) string {
	var b [1 + len(s.id)]byte
	b[0] = s.kind
	copy(b[1:], s.id[:])
	return g.key + hex.EncodeToString(b[:])
}

func (g *RedisGuard) tally(ctx context.Context, count bool, s Subject, now time.Time) (Tally, error) {
	sec := now.Unix()
	start := sec - sec%g.window[0]
	out, err := g.conn.windows(ctx, count, g.subjectKey(s), now, []int64{start}, g.window, g.limit, "")
	if err != nil {
		return Tally{}, err
	}
	return Tally{Allowed: out[0] == 1, Limit: g.limit[0], Count: int(out[2]), Start: out[1], Reset: out[1] + g.window[0], Now: now, kind: s.kind}, nil
}

// Take counts a failure of s unless its window is full.
func (g *RedisGuard) Take(ctx context.Context, s Subject, now time.Time) (Tally, error) {
	return g.tally(ctx, true, s, now)
}

// Peek reports the window of s without counting.
func (g *RedisGuard) Peek(ctx context.Context, s Subject, now time.Time) (Tally, error) {
	return g.tally(ctx, false, s, now)
}

// giveScript takes back one failure of KEYS[1] if its window still starts
// at ARGV[1] and holds one.
var giveScript = redis.NewScript(`
local kept = redis.call('HMGET', KEYS[1], 's1', 'n1')
if tonumber(kept[1]) == tonumber(ARGV[1]) and (tonumber(kept[2]) or 0) > 0 then
  redis.call('HINCRBY', KEYS[1], 'n1', -1)
end
return 0
`)

// Give takes back a failure Take counted in t's window.
func (g *RedisGuard) Give(ctx context.Context, s Subject, t Tally) error {
	if err := g.conn.rdb.script(ctx, giveScript, []string{g.subjectKey(s)}, t.Start).Err(); err != nil {
		return g.conn.fail(ctx, err)
	}
	g.conn.ok()
	return nil
}
