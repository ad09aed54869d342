package limits_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/testsvc"
)

// The rate-limit decision of one request: Memory.Take checks and counts the
// account's minute, hour and day windows at once and records the key's
// hourly usage. The limits are out of reach so that every decision takes
// the allowed path, which does the most work (the refused path counts
// nothing); BenchmarkTakeRefused measures the other. The counter is not
// persisted (nil store): flushing runs off the request path.

var unlimited = [3]int{math.MaxInt, math.MaxInt, math.MaxInt}

func newCounter() *limits.Memory {
	return limits.NewMemory(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// uses are n accounts with one key each, as the API passes them to Take.
func uses(n int) []limits.Use {
	us := make([]limits.Use, n)
	for i := range us {
		us[i] = limits.Use{AccountID: fmt.Sprintf("acct_%020d", i), KeyID: fmt.Sprintf("key_%020d", i)}
	}
	return us
}

// warm makes every account known to the counter, so the benchmark measures
// the steady state rather than the first request of each account.
func warm(b *testing.B, m limits.Counter, us []limits.Use, at time.Time) {
	ctx := context.Background()
	for _, u := range us {
		u.At = at
		if _, err := m.Take(ctx, u, unlimited); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTake(b *testing.B) {
	for _, n := range []int{1, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			m, us, at := newCounter(), uses(n), time.Now()
			warm(b, m, us, at)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				u := us[i]
				u.At = at
				d, err := m.Take(ctx, u, unlimited)
				if err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}

func BenchmarkTakeParallel(b *testing.B) {
	for _, n := range []int{1, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			takeParallel(b, newCounter(), uses(n))
		})
	}
}

// takeParallel times c's decisions from b's parallel goroutines, each
// walking us from its own offset, once every account is known to c.
func takeParallel(b *testing.B, c limits.Counter, us []limits.Use) {
	ctx, at := context.Background(), time.Now()
	warm(b, c, us, at)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919)) % len(us)
		for pb.Next() {
			u := us[i]
			u.At = at
			if d, err := c.Take(ctx, u, unlimited); err != nil || !d.Allowed {
				b.Error(d, err)
				return
			}
			if i++; i == len(us) {
				i = 0
			}
		}
	})
}

// BenchmarkTakeRefused is the decision for an account whose minute window
// is full: nothing is counted and the caller answers 429.
func BenchmarkTakeRefused(b *testing.B) {
	ctx := context.Background()
	m, at := newCounter(), time.Now()
	u := limits.Use{AccountID: "acct_full", KeyID: "key_full", At: at}
	t, _ := limits.TierByName("enterprise")
	for range t.PerMinute {
		m.Take(ctx, u, t.Limits())
	}
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := m.Take(ctx, u, t.Limits()); d.Allowed {
			b.Fatal("allowed past the limit")
		}
	}
}

// BenchmarkStoreTake is the decision of the store counter (counter:
// store): one write transaction a request on a SQLite file, 32 callers at
// once as the API's requests are, over 2,000 accounts, which the writer
// groups into shared commits.
func BenchmarkStoreTake(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "aivis.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.SetParallelism(32 / runtime.GOMAXPROCS(0))
	takeParallel(b, limits.NewStoreCounter(db, nil), uses(2000))
}

// BenchmarkRedisTake is the decision of the Redis counter (counter:
// redis): one script run on the server (EVALSHA), over 2,000 accounts with
// a key each, every decision allowed (the three windows and the key's
// hourly usage written). callers=1 is one decision's round trip at a time
// on loopback; callers=32 as many at once as the API's requests are. Each
// decision is timed: p50-µs and p99-µs are their percentiles. The usage's
// flush to the store (Run, once a second) is left out, as the memory
// counter's is.
func BenchmarkRedisTake(b *testing.B) {
	c, rdb := redisCounter(b)
	us, at := uses(2000), time.Now()
	warm(b, c, us, at)
	redisDecisions(b, rdb, func(ctx context.Context, u limits.Use) error { return takeAllowed(ctx, c, u) }, us, at)
}

// takeAllowed counts u, an error unless it was allowed.
func takeAllowed(ctx context.Context, c limits.Counter, u limits.Use) error {
	d, err := c.Take(ctx, u, unlimited)
	if err == nil && !d.Allowed {
		err = fmt.Errorf("refused: %+v", d)
	}
	return err
}

// BenchmarkRedisAdmit times what an authenticated request asks of Redis
// (the address's guard window and the account's windows), 2,000 accounts
// and as many addresses: admit is limits.Admit, one script run; three-steps
// is the guard's Peek before and after the credentials and the counter's
// Take, as a request asked them before Admit. redis-µs/op is the server's
// CPU time a request (INFO cpu).
func BenchmarkRedisAdmit(b *testing.B) {
	c, rdb := redisCounter(b)
	g := c.Guard("auth", 20, time.Minute)
	us, at := uses(2000), time.Now()
	warm(b, c, us, at)
	addr := func(u limits.Use) limits.Subject {
		return limits.AddrSubject(netip.AddrFrom4([4]byte{192, 0, byte(len(u.AccountID)), u.AccountID[len(u.AccountID)-1]}))
	}
	b.Run("admit", func(b *testing.B) {
		redisDecisions(b, rdb, func(ctx context.Context, u limits.Use) error {
			t, d, err := limits.Admit(ctx, c, g, addr(u), u, unlimited)
			if err == nil && (!t.Allowed || !d.Allowed) {
				err = fmt.Errorf("refused: %+v %+v", t, d)
			}
			return err
		}, us, at)
	})
	b.Run("three-steps", func(b *testing.B) {
		redisDecisions(b, rdb, func(ctx context.Context, u limits.Use) error {
			for range 2 {
				if t, err := g.Peek(ctx, addr(u), u.At); err != nil || !t.Allowed {
					return fmt.Errorf("peek: %+v %v", t, err)
				}
			}
			return takeAllowed(ctx, c, u)
		}, us, at)
	})
}

func redisCounter(b *testing.B) (*limits.Redis, *redis.Client) {
	url, prefix := testsvc.Redis(b)
	rdb, err := limits.NewRedisClient(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	return limits.NewRedis(rdb, prefix, nil, slog.New(slog.DiscardHandler)), rdb
}

// redisDecisions runs decide over us, by one caller and by 32 at once,
// reporting each call's p50 and p99 and the server's CPU time a call.
func redisDecisions(b *testing.B, rdb *redis.Client, decide func(context.Context, limits.Use) error, us []limits.Use, at time.Time) {
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			ctx := context.Background()
			took := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			cpu := redisCPU(b, rdb)
			b.ReportAllocs()
			b.ResetTimer()
			for range callers {
				wg.Go(func() {
					for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
						u := us[i%len(us)]
						u.At = at
						began := time.Now()
						err := decide(ctx, u)
						took[i] = time.Since(began)
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[b.N/2])/1e3, "p50-µs")
			b.ReportMetric(float64(took[b.N*99/100])/1e3, "p99-µs")
			b.ReportMetric(float64(redisCPU(b, rdb)-cpu)/1e3/float64(b.N), "redis-µs/op")
		})
	}
}

// redisCPU is the server's CPU time so far (INFO cpu: its main thread's
// and the others', user and system).
func redisCPU(b *testing.B, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += time.Duration(f * float64(time.Second))
		}
	}
	return total
}
