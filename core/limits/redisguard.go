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
// Admit looks at a subject's window in the counter's script that counts
// the request; Screen answers from the refusals this process has seen.
type RedisGuard struct {
	conn *redisConn
	key  string // the prefix of its subjects' keys
	shared
}

// Guard makes the guard named name on r's server: limit failures per
// subject in each window of the given length (a whole number of seconds
// that divides a day).
func (r *Redis) Guard(name string, limit int, window time.Duration) Guard {
	return &RedisGuard{conn: r.conn, key: r.conn.prefix + "guard:" + name + ":", shared: newShared(limit, window)}
}

func (g *RedisGuard) subjectKey(s Subject) string { return g.key + hex.EncodeToString(s.key()) }

// window is the window of s that holds a failure at now.
func (g *RedisGuard) window(s Subject, now time.Time) guardWindow {
	return guardWindow{key: g.subjectKey(s), start: g.start(now), limit: g.limit}
}

func (g *RedisGuard) tally(ctx context.Context, count bool, s Subject, now time.Time) (Tally, error) {
	w := g.window(s, now)
	out, err := g.conn.windows(ctx, count, w.key, now, []int64{w.start}, []int64{g.length}, []int{g.limit}, "", nil)
	if err != nil {
		return Tally{}, err
	}
	return g.seen(s, g.tallyOf(out[0] == 1, out[1], out[2], s, now)), nil
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

// Give takes back a failure Take counted in t's window (and forgets a
// refusal of s that this process saw).
func (g *RedisGuard) Give(ctx context.Context, s Subject, t Tally) error {
	g.forget(s)
	if err := g.conn.rdb.script(ctx, giveScript, []string{g.subjectKey(s)}, t.Start).Err(); err != nil {
		return g.conn.fail(ctx, err)
	}
	g.conn.ok()
	return nil
}
