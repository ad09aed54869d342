package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// Redis is the Counter of a deployment of several instances: the windows
// live on a Redis server, each request checked and counted there by one
// script (all three windows or none), so every process on the server
// shares them exactly. The key's usage is added up in Redis by the same
// script and written to the store by Run. Its guards (Guard) keep their
// windows on the same server.
//
// Its keys, under the prefix given to NewRedis:
//
//	<prefix>:window:<account>  a hash of each window's start and count (s1 n1 s2 n2 s3 n3),
//	                           kept until an hour after the day window ends
//	<prefix>:usage             the keys' usage not yet in the store: per key and UTC hour
//	                           a count (n <hour> <key> <account> <client>) and the last
//	                           use in microseconds (t <hour> <key> <account> <client>)
//	<prefix>:usage:flushing    the usage one process is writing to the store
//	<prefix>:usage:flusher     which process that is, for as long as its lease lasts
//	<prefix>:guard:<name>:<subject>  a guard's window of one subject (s1 n1)
//
// When the server cannot be reached, Take, Peek and the guards fail with
// RATE_LIMIT_UNAVAILABLE, a 503 asking the client to retry after
// UnavailableRetry seconds: a request that cannot be counted is refused,
// never let through uncounted. The first failure after a success is logged,
// and the first success after a failure.
type Redis struct {
	// Interval is how often Run writes the keys' usage to the store
	// (default 1 s).
	Interval time.Duration
	conn     *redisConn
	store    store.Counters
	// holder names this handle in the lease on the usage it flushes.
	holder string
}

// redisConn is a Redis client under a key prefix, shared by a counter and
// its guards, and whether the server answered last time.
type redisConn struct {
	rdb    *pipeline
	prefix string
	log    *slog.Logger
	down   atomic.Bool
}

// UnavailableRetry is the wait, in seconds, that a request refused because
// the rate limits' engine cannot be reached is asked for.
const UnavailableRetry = 5

// windowsKept is how long a subject's windows outlive the longest of them:
// a request stamped before a window's end but counted after it still finds
// the newer window, however late it is within this time.
const windowsKept = 3600

// usageLease is how long a process may take to write the usage it took to
// the store; past it another process writes the same usage again.
const usageLease = 60 * time.Second

// NewRedisClient is a client of the server at url (redis://, rediss:// or
// unix://, with go-redis's options as query parameters), made for a
// request's path: an unreachable server fails a call within about a second
// rather than go-redis's default of several (one dial try of at most 1 s
// and one retry, reads and writes of at most 1 s, unless url sets them).
// Its error never repeats url, which may hold a password.
func NewRedisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("redis_url is not a Redis URL (redis://[user:password@]host:port/db, rediss:// for TLS, unix:///path)")
	}
	for _, d := range []*time.Duration{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout} {
		if *d == 0 {
			*d = time.Second
		}
	}
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	if opt.MaxRetries == 0 {
		opt.MaxRetries = 1
	}
	return redis.NewClient(opt), nil
}

// NewRedis counts requests on the server of rdb, under the key prefix
// (a deployment's cluster_name), and writes the keys' usage to s.
func NewRedis(rdb RedisClient, prefix string, s store.Counters, log *slog.Logger) *Redis {
	return &Redis{conn: &redisConn{rdb: &pipeline{rdb: rdb}, prefix: prefix + ":", log: log}, store: s, holder: randid.String(16)}
}

// windowsScript checks the windows of KEYS[1] and, when asked, counts one
// request (or failure) in every window if none is full, else in none. A
// window kept with a start at or after the request's holds its count and
// keeps its start (a late request counts in the newer window); one kept
// with an earlier start holds none. The hash is kept until an hour past
// the end of its longest window; the usage's last use is the last counted
// request's, as the memory counter keeps it. Given a guard's window
// (KEYS[3], a window of one as a guard keeps it), it first looks at it as
// a guard's Peek does, and counts nothing while that window is full.
//
//	ARGV[1]  1 to count, 0 to look
//	ARGV[2]  the request's time, Unix seconds
//	ARGV[3]  seconds the hash is kept past the end of its longest window
//	ARGV[4]  the usage fields' suffix, "" for none
//	ARGV[5]  the request's time in microseconds, the usage's last use
//	ARGV[6...]  per window: start (Unix seconds), length (seconds), limit
//	and with KEYS[3], last: the guard's window's start and its limit
//
// It returns the decision (1 allowed) and each window's start and count,
// or, when the guard's window is full, -1 and its start and count.
var windowsScript = redis.NewScript(`
local nw = (#ARGV - 5) / 3
if #KEYS == 3 then
  nw = (#ARGV - 7) / 3
  local gs = tonumber(ARGV[#ARGV-1])
  local g = redis.call('HMGET', KEYS[3], 's1', 'n1')
  local s, n = tonumber(g[1]), 0
  if s and s >= gs then
    gs, n = s, tonumber(g[2])
  end
  if n >= tonumber(ARGV[#ARGV]) then return {-1, gs, n} end
end
local fields = {}
for i = 1, nw do
  fields[2*i-1], fields[2*i] = 's' .. i, 'n' .. i
end
local kept = redis.call('HMGET', KEYS[1], unpack(fields))
local out, room, ends = {0}, true, 0
for i = 1, nw do
  local b = 3 * i + 3
  local start, count = tonumber(ARGV[b]), 0
  local s = tonumber(kept[2*i-1])
  if s and s >= start then
    start, count = s, tonumber(kept[2*i])
  end
  if count >= tonumber(ARGV[b+2]) then room = false end
  out[2*i], out[2*i+1] = start, count
  ends = math.max(ends, start + tonumber(ARGV[b+1]))
end
if room then out[1] = 1 end
if not room or ARGV[1] ~= '1' then return out end
local set = {}
for i = 1, nw do
  out[2*i+1] = out[2*i+1] + 1
  set[4*i-3], set[4*i-2], set[4*i-1], set[4*i] = 's' .. i, out[2*i], 'n' .. i, out[2*i+1]
end
redis.call('HSET', KEYS[1], unpack(set))
redis.call('EXPIRE', KEYS[1], ends - tonumber(ARGV[2]) + tonumber(ARGV[3]))
if ARGV[4] ~= '' then
  redis.call('HINCRBY', KEYS[2], 'n ' .. ARGV[4], 1)
  redis.call('HSET', KEYS[2], 't ' .. ARGV[4], ARGV[5])
end
return out
`)

// guardWindow is a guard's window of one subject that a count first looks
// at: its key, the window's start and its limit.
type guardWindow struct {
	key   string
	start int64
	limit int
}

// windows runs windowsScript on key for a request at at, in the windows
// starting at starts, of lengths and limits, after a look at the guard's
// window g if there is one; a look (count false) is a read of the hash
// (peek).
func (c *redisConn) windows(ctx context.Context, count bool, key string, at time.Time, starts, lengths []int64, limits []int, usage string, g *guardWindow) ([]int64, error) {
	if !count {
		return c.peek(ctx, key, starts, limits)
	}
	keys := []string{key}
	args := make([]any, 0, 7+3*len(starts))
	args = append(args, b2i(count), at.Unix(), windowsKept, usage, at.UnixMicro())
	if usage != "" || g != nil {
		keys = append(keys, c.prefix+"usage")
	}
	for i := range starts {
		args = append(args, starts[i], lengths[i], limits[i])
	}
	if g != nil {
		keys = append(keys, g.key)
		args = append(args, g.start, g.limit)
	}
	out, err := c.rdb.script(ctx, windowsScript, keys, args...).Int64Slice()
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	c.ok()
	return out, nil
}

// peek is windowsScript's look, from one HMGET of the hash: it decides as
// the script does, without running one (a script costs the server's one
// thread about 15 µs, a read about 1).
func (c *redisConn) peek(ctx context.Context, key string, starts []int64, limits []int) ([]int64, error) {
	fields := make([]string, 0, 2*len(starts))
	for i := range starts {
		n := strconv.Itoa(i + 1)
		fields = append(fields, "s"+n, "n"+n)
	}
	kept, err := c.rdb.hmget(ctx, key, fields...).Result()
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	c.ok()
	out, room := make([]int64, 1+2*len(starts)), true
	for i, start := range starts {
		var count int64
		if s, ok := redisInt(kept[2*i]); ok && s >= start {
			start = s
			count, _ = redisInt(kept[2*i+1])
		}
		if count >= int64(limits[i]) {
			room = false
		}
		out[1+2*i], out[2+2*i] = start, count
	}
	if room {
		out[0] = 1
	}
	return out, nil
}

// redisInt is a field HMGET read, as a number (Lua's tonumber).
func redisInt(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fail is the error of a call to the server that failed: logged once until
// the server answers again, and answered with RATE_LIMIT_UNAVAILABLE.
func (c *redisConn) fail(ctx context.Context, err error) error {
	if ctx.Err() == nil && !c.down.Swap(true) {
		c.log.Error("redis: the rate limits cannot be counted; authenticated requests are refused with 503 RATE_LIMIT_UNAVAILABLE until it answers", "err", err)
	}
	return fmt.Errorf("%w (%w)", fault.Wait(fault.RateLimitUnavailable, UnavailableRetry,
		"the rate limits cannot be checked at the moment, so the request was not served"), err)
}

// ok notes that the server answered.
func (c *redisConn) ok() {
	if c.down.Load() && c.down.Swap(false) {
		c.log.Info("redis: answers again; requests are counted")
	}
}

var windowLengthSeconds = []int64{60, 3600, 86400}

// decide runs the windows script for accountID's windows at at, after a
// look at the guard's window g if there is one; out[0] is -1 when that
// window is full.
func (r *Redis) decide(ctx context.Context, count bool, accountID string, limits [3]int, at time.Time, usage string, g *guardWindow) (Decision, []int64, error) {
	s := WindowStarts(at)
	out, err := r.conn.windows(ctx, count, r.conn.prefix+"window:"+accountID, at, s[:], windowLengthSeconds, limits[:], usage, g)
	if err != nil || out[0] < 0 {
		return Decision{}, out, err
	}
	var start, n [3]int64
	for i := range 3 {
		start[i], n[i] = out[2*i+1], out[2*i+2]
	}
	d := decision(start, n, limits, at)
	d.Allowed = out[0] == 1
	return d, out, nil
}

// usageOf is the usage fields' suffix of u ("" for a use without a key).
func usageOf(u Use) string {
	if u.KeyID == "" {
		return ""
	}
	return strings.Join([]string{strconv.FormatInt(WindowStarts(u.At)[Hour], 10), u.KeyID, u.AccountID, u.ClientID}, " ")
}

// Take counts u in all three windows, and its key's use, if none is full,
// else in none.
func (r *Redis) Take(ctx context.Context, u Use, limits [3]int) (Decision, error) {
	d, _, err := r.decide(ctx, true, u.AccountID, limits, u.At, usageOf(u), nil)
	return d, err
}

// Peek is the decision a request at now would see, without counting one.
func (r *Redis) Peek(ctx context.Context, accountID string, limits [3]int, now time.Time) (Decision, error) {
	d, _, err := r.decide(ctx, false, accountID, limits, now, "", nil)
	return d, err
}

// admit is Admit on one server: the guard's window of addr and the
// account's windows in one run of the windows script.
func (r *Redis) admit(ctx context.Context, g *RedisGuard, addr Subject, u Use, limits [3]int) (Tally, Decision, error) {
	gw := g.window(addr, u.At)
	d, out, err := r.decide(ctx, true, u.AccountID, limits, u.At, usageOf(u), &gw)
	if err != nil {
		return Tally{}, Decision{}, err
	}
	if out[0] < 0 {
		return g.seen(addr, g.tallyOf(false, out[1], out[2], addr, u.At)), Decision{}, nil
	}
	return g.tallyOf(true, gw.start, 0, addr, u.At), d, nil
}

// Shared is true: the counts are the server's.
func (r *Redis) Shared() bool { return true }

// Run writes the keys' usage to the store every Interval until ctx ends,
// then once more.
func (r *Redis) Run(ctx context.Context) {
	flushEvery(ctx, r.Interval, r.conn.log, "the keys' usage", r.Flush, func() {})
}

// claimScript hands the usage counted so far to one flusher: it renames
// KEYS[1] (the usage) to KEYS[2] (the usage being written) and leases it
// to ARGV[1] for ARGV[2] ms in KEYS[3], then returns it. Requests counted
// after the rename start a new KEYS[1]. A flusher whose lease ended
// without its usage written (it crashed, or the store failed) leaves
// KEYS[2] to the next: that usage is written before any newer. While
// another's lease lasts it returns nil.
var claimScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[1] then return false end
if redis.call('EXISTS', KEYS[2]) == 0 then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
  redis.call('RENAME', KEYS[1], KEYS[2])
end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
return redis.call('HGETALL', KEYS[2])
`)

// doneScript drops the usage KEYS[1] once its flusher ARGV[1] has written
// it, if its lease (KEYS[2]) is still its own; it returns 0 when it is not.
var doneScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`)

// errLeaseLost is a flush whose lease ended before its usage was written:
// another process may write the same usage again.
var errLeaseLost = errors.New("the lease on the usage being written ended before it was written; another instance may write it again")

// Flush writes the keys' usage counted since the last flush, by any
// process on the server, to the store. Of processes flushing at once one
// takes it, the others nothing, so no use is written twice; on failure it
// stays in Redis for the next flush, this process's or, once the lease
// has ended, another's.
func (r *Redis) Flush(ctx context.Context) error {
	p := r.conn.prefix
	keys := []string{p + "usage", p + "usage:flushing", p + "usage:flusher"}
	fields, err := r.conn.rdb.script(ctx, claimScript, keys, r.holder, usageLease.Milliseconds()).StringSlice()
	if errors.Is(err, redis.Nil) || (err == nil && len(fields) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	usage, err := parseUsage(fields)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, usageLease/2)
	err = r.store.SaveCounts(sctx, nil, usage)
	cancel()
	if err != nil {
		return err
	}
	done, err := r.conn.rdb.script(ctx, doneScript, keys[1:], r.holder).Int()
	if err == nil && done == 0 {
		err = errLeaseLost
	}
	return err
}

// parseUsage reads the usage hash's fields and values, in pairs.
func parseUsage(fields []string) ([]store.KeyUsage, error) {
	byField := map[string]*store.KeyUsage{}
	for i := 0; i+1 < len(fields); i += 2 {
		kind, id, _ := strings.Cut(fields[i], " ")
		parts := strings.SplitN(id, " ", 4)
		v, err := strconv.ParseInt(fields[i+1], 10, 64)
		if len(parts) != 4 || err != nil || (kind != "n" && kind != "t") {
			return nil, fmt.Errorf("the usage in redis holds a field %q = %q that it does not write", fields[i], fields[i+1])
		}
		hour, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("the usage in redis holds a field %q that it does not write", fields[i])
		}
		u := byField[id]
		if u == nil {
			u = &store.KeyUsage{Hour: time.Unix(hour, 0).UTC(), KeyID: parts[1], AccountID: parts[2], ClientID: parts[3]}
			byField[id] = u
		}
		if kind == "n" {
			u.Count = v
		} else {
			u.LastUsed = time.UnixMicro(v).UTC()
		}
	}
	usage := make([]store.KeyUsage, 0, len(byField))
	for _, u := range byField {
		usage = append(usage, *u)
	}
	return usage, nil
}
