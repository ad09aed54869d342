package limits

import (
	"context"
	"encoding/hex"
	"sync"
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
	conn   *redisConn
	key    string // the prefix of its subjects' keys
	limit  []int
	length []int64 // the window's, in seconds

	// refused are the subjects this process has seen refused, each with
	// the end of the window it was refused in (Unix seconds): Screen's
	// answer without a round trip.
	mu      sync.Mutex
	refused map[Subject]int64
}

// maxRefused bounds the refusals a RedisGuard remembers; past it, those
// whose windows have ended are dropped, and if none has, all of them
// (their subjects are then refused by Admit or Take, on the server, until
// Screen has seen them refused again).
const maxRefused = 10_000

// Guard makes the guard named name on r's server: limit failures per
// subject in each window of the given length (a whole number of seconds
// that divides a day).
func (r *Redis) Guard(name string, limit int, window time.Duration) Guard {
	return &RedisGuard{conn: r.conn, key: r.conn.prefix + "guard:" + name + ":", limit: []int{limit}, length: []int64{int64(window / time.Second)},
		refused: make(map[Subject]int64)}
}

func (g *RedisGuard) subjectKey(s Subject) string {
	var b [1 + len(s.id)]byte
	b[0] = s.kind
	copy(b[1:], s.id[:])
	return g.key + hex.EncodeToString(b[:])
}

// start is the start of the window that holds a failure at now.
func (g *RedisGuard) start(now time.Time) int64 {
	sec := now.Unix()
	return sec - sec%g.length[0]
}

// window is the window of s that holds a failure at now.
func (g *RedisGuard) window(s Subject, now time.Time) guardWindow {
	return guardWindow{key: g.subjectKey(s), start: g.start(now), limit: g.limit[0]}
}

func (g *RedisGuard) tallyOf(allowed bool, start, count int64, s Subject, now time.Time) Tally {
	return Tally{Allowed: allowed, Limit: g.limit[0], Count: int(count), Start: start, Reset: start + g.length[0], Now: now, kind: s.kind}
}

// seen remembers t if it refused s, and returns it.
func (g *RedisGuard) seen(s Subject, t Tally) Tally {
	if t.Allowed {
		return t
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.refused) >= maxRefused {
		now := t.Now.Unix()
		for k, end := range g.refused {
			if end <= now {
				delete(g.refused, k)
			}
		}
		if len(g.refused) >= maxRefused {
			clear(g.refused)
		}
	}
	g.refused[s] = t.Reset
	return t
}

// Screen refuses s while this process has seen it refused in a window
// that has not ended at now; otherwise it allows s in now's window, with
// no count. It asks the server nothing.
func (g *RedisGuard) Screen(_ context.Context, s Subject, now time.Time) (Tally, error) {
	g.mu.Lock()
	end, ok := g.refused[s]
	g.mu.Unlock()
	if !ok || end <= now.Unix() {
		return g.tallyOf(true, g.start(now), 0, s, now), nil
	}
	return g.tallyOf(false, end-g.length[0], int64(g.limit[0]), s, now), nil
}

func (g *RedisGuard) tally(ctx context.Context, count bool, s Subject, now time.Time) (Tally, error) {
	w := g.window(s, now)
	out, err := g.conn.windows(ctx, count, w.key, now, []int64{w.start}, g.length, g.limit, "", nil)
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
	g.mu.Lock()
	delete(g.refused, s)
	g.mu.Unlock()
	if err := g.conn.rdb.script(ctx, giveScript, []string{g.subjectKey(s)}, t.Start).Err(); err != nil {
		return g.conn.fail(ctx, err)
	}
	g.conn.ok()
	return nil
}
