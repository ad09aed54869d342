package limits_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/limits/countertest"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/internal/testsvc"
)

// redisClient is a new client of url, as another process opens one, closed
// when t ends.
func redisClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	c, err := limits.NewRedisClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisCounter runs the suite every counter passes on the Redis
// counter: each handle a client of its own under the test's key prefix, as
// each process has, the key usage written to a SQLite file.
func TestRedisCounter(t *testing.T) {
	countertest.Run(t, func(t *testing.T) (store.Store, func(*testing.T, time.Time) limits.Counter) {
		url, prefix := testsvc.Redis(t)
		db, _ := openDB(t)
		return db, func(t *testing.T, _ time.Time) limits.Counter {
			return limits.NewRedis(redisClient(t, url), prefix, db, quiet)
		}
	})
}

// TestRedisGuard runs the suite every guard passes on the Redis guard:
// each guard on a client of its own, as each process has.
func TestRedisGuard(t *testing.T) {
	countertest.RunGuards(t, func(t *testing.T) func(*testing.T, string, int, time.Duration) limits.Guard {
		url, prefix := testsvc.Redis(t)
		return func(t *testing.T, name string, limit int, window time.Duration) limits.Guard {
			return limits.NewRedis(redisClient(t, url), prefix, nil, quiet).Guard(name, limit, window)
		}
	})
}

// TestRedisFlushesEveryUseOnce: processes flushing at once while requests
// are counted, and one whose flushes fail until its lease has ended, write
// every use to the store exactly once: none twice, none lost.
func TestRedisFlushesEveryUseOnce(t *testing.T) {
	ctx := t.Context()
	url, prefix := testsvc.Redis(t)
	db, path := openDB(t)
	raw := rawDB(t, path)
	const accounts, perAccount, flushers = 8, 150, 3
	for i := range accounts {
		addKey(t, db, fmt.Sprintf("acct_%d", i), fmt.Sprintf("key_%d", i), "")
	}
	// The first flusher's store fails its first two writes: the usage it
	// took stays leased to it, and it writes it on a later try.
	failing := &failingCounters{Counters: db, failures: 2}
	var cs []*limits.Redis
	for i := range flushers {
		var st store.Counters = db
		if i == 0 {
			st = failing
		}
		cs = append(cs, limits.NewRedis(redisClient(t, url), prefix, st, quiet))
	}
	stop := make(chan struct{})
	var flushing sync.WaitGroup
	for _, c := range cs {
		flushing.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					c.Flush(ctx) // the failing store's errors are expected
				}
			}
		})
	}
	var wg sync.WaitGroup
	for i := range accounts {
		wg.Go(func() {
			for j := range perAccount {
				u := limits.Use{AccountID: fmt.Sprintf("acct_%d", i), KeyID: fmt.Sprintf("key_%d", i), At: t0.Add(time.Duration(j) * time.Second)}
				if d, err := cs[j%flushers].Take(ctx, u, [3]int{big, big, big}); err != nil || !d.Allowed {
					t.Errorf("Take: %+v, %v", d, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	flushing.Wait()
	for _, c := range cs {
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if failing.calls < 3 {
		t.Fatalf("the failing store was written %d times: its failures were never retried", failing.calls)
	}
	last := t0.Add((perAccount - 1) * time.Second)
	for i := range accounts {
		key := fmt.Sprintf("key_%d", i)
		var total int64
		for _, r := range usageRows(t, raw, key) {
			total += r.count
		}
		if total != perAccount {
			t.Errorf("%s: %d uses in the store, want %d", key, total, perAccount)
		}
		if lu := lastUsed(t, raw, key); !lu.Equal(last) {
			t.Errorf("%s: last used %v, want %v", key, lu, last)
		}
	}
}

// TestRedisLeaseOfACrashedFlusher: usage taken by a process that died
// before writing it is written by another once the lease has ended, and
// not before.
func TestRedisLeaseOfACrashedFlusher(t *testing.T) {
	ctx := t.Context()
	url, prefix := testsvc.Redis(t)
	db, path := openDB(t)
	raw := rawDB(t, path)
	addKey(t, db, "acct_1", "key_1", "")
	rdb := redisClient(t, url)
	survivor := limits.NewRedis(rdb, prefix, db, quiet)
	for range 3 {
		if _, err := survivor.Take(ctx, limits.Use{AccountID: "acct_1", KeyID: "key_1", At: t0}, [3]int{big, big, big}); err != nil {
			t.Fatal(err)
		}
	}
	// The dead process's claim, as claimScript leaves it: the usage moved
	// aside and leased to it.
	if err := rdb.Rename(ctx, prefix+":usage", prefix+":usage:flushing").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, prefix+":usage:flusher", "dead", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	survivor.Take(ctx, limits.Use{AccountID: "acct_1", KeyID: "key_1", At: t0}, [3]int{big, big, big})
	if err := survivor.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := usageRows(t, raw, "key_1"); len(rows) != 0 {
		t.Fatalf("written while another's lease lasted: %v", rows)
	}
	// The lease ends (Redis expires it).
	if err := rdb.Del(ctx, prefix+":usage:flusher").Err(); err != nil {
		t.Fatal(err)
	}
	// The dead one's usage first, then what came since.
	for range 2 {
		if err := survivor.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rows := usageRows(t, raw, "key_1"); len(rows) != 1 || rows[0].count != 4 {
		t.Fatalf("usage %v, want the 4 uses once", rows)
	}
}

// deadRedis is the URL of a port nothing listens on.
func deadRedis(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "redis://:s3cr3t@" + addr + "/0"
}

// TestRedisUnreachableRefuses: with the server out of reach every
// decision, the counter's and the guards', is an error answered 503
// RATE_LIMIT_UNAVAILABLE with a wait, never an allowed request; its
// message names no address or password.
func TestRedisUnreachableRefuses(t *testing.T) {
	ctx := t.Context()
	db, _ := openDB(t)
	c := limits.NewRedis(redisClient(t, deadRedis(t)), "aivis", db, quiet)
	g := c.Guard("auth", 5, time.Minute)
	s := limits.AddrSubject(addr("192.0.2.1"))
	calls := map[string]func() (bool, error){
		"Take": func() (bool, error) {
			d, err := c.Take(ctx, limits.Use{AccountID: "a", KeyID: "k", At: t0}, [3]int{big, big, big})
			return d.Allowed, err
		},
		"Peek":       func() (bool, error) { d, err := c.Peek(ctx, "a", [3]int{big, big, big}, t0); return d.Allowed, err },
		"guard Take": func() (bool, error) { tl, err := g.Take(ctx, s, t0); return tl.Allowed, err },
		"guard Peek": func() (bool, error) { tl, err := g.Peek(ctx, s, t0); return tl.Allowed, err },
		"guard Give": func() (bool, error) { return false, g.Give(ctx, s, limits.Tally{}) },
	}
	for name, call := range calls {
		allowed, err := call()
		fe, ok := fault.As(err)
		if allowed || !ok || fe.Code != fault.RateLimitUnavailable || fe.Code.Status() != http.StatusServiceUnavailable || fe.RetryAfter != limits.UnavailableRetry {
			t.Errorf("%s with Redis unreachable: allowed=%v, %v; want a 503 RATE_LIMIT_UNAVAILABLE asking for %d s", name, allowed, err, limits.UnavailableRetry)
			continue
		}
		for _, secret := range []string{"127.0.0.1", "s3cr3t", "dial"} {
			if strings.Contains(fe.Message, secret) {
				t.Errorf("%s: the message %q names %q", name, fe.Message, secret)
			}
		}
	}
}

// roundTrips counts a client's round trips that run scripts and the
// scripts they carry, and holds the first one until release is closed.
type roundTrips struct {
	trips, scripts atomic.Int64
	release        chan struct{}
}

func (*roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.held([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.held(cmds)
		return next(ctx, cmds)
	}
}

func (h *roundTrips) held(cmds []redis.Cmder) {
	n := 0
	for _, c := range cmds {
		if strings.HasPrefix(c.Name(), "eval") {
			n++
		}
	}
	if n == 0 {
		return
	}
	h.scripts.Add(int64(n))
	if h.trips.Add(1) == 1 {
		<-h.release
	}
}

// TestRedisDecisionsAtOnceShareARoundTrip: the decisions asked while a
// round trip to the server is in flight go together in the next one, and
// each gets its own answer.
func TestRedisDecisionsAtOnceShareARoundTrip(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	rdb := redisClient(t, url)
	c := limits.NewRedis(rdb, prefix, nil, quiet)
	at := time.Now()
	// The script on the server and a connection open, before counting.
	if _, err := c.Peek(t.Context(), "acct_0", [3]int{1, 1, 1}, at); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Take(t.Context(), limits.Use{AccountID: "acct_0", KeyID: "key_0", At: at}, [3]int{1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	hook := &roundTrips{release: make(chan struct{})}
	rdb.AddHook(hook)
	const callers, limit = 40, 25
	allowed := make(chan bool, callers)
	for range callers {
		go func() {
			d, err := c.Take(t.Context(), limits.Use{AccountID: "acct_1", KeyID: "key_1", At: at}, [3]int{limit, 1000, 10000})
			if err != nil {
				t.Error(err)
			}
			allowed <- d.Allowed
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for hook.trips.Load() == 0 || c.Queued() < callers-1 { // the first held, the others behind it
		if time.Now().After(deadline) {
			close(hook.release)
			t.Fatalf("after 10 s, %d round trips and %d decisions waiting for the next", hook.trips.Load(), c.Queued())
		}
		runtime.Gosched()
	}
	close(hook.release)
	n := 0
	for range callers {
		if <-allowed {
			n++
		}
	}
	if n != limit {
		t.Errorf("%d of %d decisions allowed, want %d", n, callers, limit)
	}
	if trips, scripts := hook.trips.Load(), hook.scripts.Load(); trips != 2 || scripts != callers {
		t.Errorf("%d decisions took %d round trips carrying %d scripts, want 2: the first and one for the %d asked meanwhile", callers, trips, scripts, callers-1)
	}
}

// TestRedisAdmit runs the cases of Admit and Screen on the Redis counter
// and its guard, each pair on a client of its own, as each process has:
// one script run decides the address and the account's windows.
func TestRedisAdmit(t *testing.T) {
	countertest.RunAdmit(t, func(t *testing.T) func(*testing.T, int) (limits.Counter, limits.Guard) {
		url, prefix := testsvc.Redis(t)
		return func(t *testing.T, limit int) (limits.Counter, limits.Guard) {
			c := limits.NewRedis(redisClient(t, url), prefix, nil, quiet)
			return c, c.Guard("auth", limit, time.Minute)
		}
	})
}
