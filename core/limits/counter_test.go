package limits_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/limits/countertest"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// t0 is a moment well inside a minute, an hour and a day: 2025-06-10 14:20:30 UTC.
var t0 = time.Date(2025, 6, 10, 14, 20, 30, 0, time.UTC)

const big = math.MaxInt

func TestWindowStarts(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	nepal := time.FixedZone("NPT", 5*3600+45*60)
	for _, tc := range []struct {
		at   time.Time
		want [3]time.Time
	}{
		{t0, [3]time.Time{
			time.Date(2025, 6, 10, 14, 20, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 14, 0, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)}},
		{time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC), [3]time.Time{
			time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)}},
		{time.Date(2025, 6, 10, 23, 59, 59, 999_999_999, time.UTC), [3]time.Time{
			time.Date(2025, 6, 10, 23, 59, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 23, 0, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)}},
		// 08:30 in Tokyo on the 11th is 23:30 UTC on the 10th: the day is the UTC day.
		{time.Date(2025, 6, 11, 8, 30, 15, 0, tokyo), [3]time.Time{
			time.Date(2025, 6, 10, 23, 30, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 23, 0, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)}},
		// A zone 45 minutes off the hour: the hour is still the UTC hour.
		{time.Date(2025, 6, 10, 20, 10, 0, 0, nepal), [3]time.Time{
			time.Date(2025, 6, 10, 14, 25, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 14, 0, 0, 0, time.UTC),
			time.Date(2025, 6, 10, 0, 0, 0, 0, time.UTC)}},
	} {
		got := limits.WindowStarts(tc.at)
		for w := range 3 {
			if got[w] != tc.want[w].Unix() {
				t.Errorf("WindowStarts(%v)[%d] = %v, want %v", tc.at, w, time.Unix(got[w], 0).UTC(), tc.want[w])
			}
		}
	}
}

// TestMemory runs the suite every counter passes on the memory counter,
// persisted behind a SQLite file; a handle is a counter restored from the
// file, as a server starts. Its counts are its own (not Shared), so the
// suite races requests on one handle.
func TestMemory(t *testing.T) {
	countertest.Run(t, func(t *testing.T) (store.Store, func(*testing.T, time.Time) limits.Counter) {
		db, _ := openDB(t)
		return db, func(t *testing.T, now time.Time) limits.Counter {
			m := limits.NewMemory(db, quiet)
			if err := m.Load(context.Background(), now); err != nil {
				t.Fatal(err)
			}
			return m
		}
	})
}

func use(account string, at time.Time) limits.Use {
	return limits.Use{AccountID: account, KeyID: "key_" + account, At: at}
}

func take(t *testing.T, m *limits.Memory, u limits.Use, l [3]int) limits.Decision {
	t.Helper()
	d, err := m.Take(context.Background(), u, l)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return d
}

// TestTakeConcurrentIsExact: 64 goroutines racing 100 requests each against
// a limit of 1000 per minute get exactly 1000 through (run with -race).
func TestTakeConcurrentIsExact(t *testing.T) {
	m := limits.NewMemory(nil, quiet)
	l := [3]int{1000, big, big}
	var allowed, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 100 {
				// Every goroutine also counts an account of its own, which
				// shares shards with the contended one.
				d, err := m.Take(context.Background(), use("hot", t0), l)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				} else {
					refused.Add(1)
				}
				own, err := m.Take(context.Background(), use(fmt.Sprintf("own%d", g), t0), l)
				if err != nil || !own.Allowed || own.Count[limits.Minute] != i+1 {
					t.Errorf("own account %d: %+v", g, own)
					return
				}
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 1000 || refused.Load() != 5400 {
		t.Fatalf("allowed %d, refused %d; want exactly 1000 and 5400", allowed.Load(), refused.Load())
	}
	if d := take(t, m, use("hot", t0), l); d.Allowed || d.Count != [3]int{1000, 1000, 1000} {
		t.Fatalf("after the race: %+v", d)
	}
}

func TestDecisionTightest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit [3]int
		count [3]int
		want  int
	}{
		{"all ample: tie goes to the minute", [3]int{10, 10, 10}, [3]int{0, 0, 0}, limits.Minute},
		{"minute fewest", [3]int{60, 1000, 10000}, [3]int{10, 10, 10}, limits.Minute},
		{"hour fewest", [3]int{60, 1000, 10000}, [3]int{1, 990, 990}, limits.Hour},
		{"day fewest", [3]int{60, 1000, 10000}, [3]int{1, 1, 9999}, limits.Day},
		{"hour and day tie: the hour", [3]int{60, 100, 200}, [3]int{1, 95, 195}, limits.Hour},
		{"minute and day tie: the minute", [3]int{10, 100, 200}, [3]int{5, 5, 195}, limits.Minute},
		{"all exhausted: the minute", [3]int{1, 1, 1}, [3]int{1, 1, 1}, limits.Minute},
		{"over-counted clamps to zero", [3]int{5, 100, 1000}, [3]int{9, 100, 10}, limits.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := limits.Decision{Limit: tc.limit, Count: tc.count}
			if got := d.Tightest(); got != tc.want {
				t.Fatalf("Tightest() = %d, want %d (remaining %d %d %d)", got, tc.want, d.Remaining(0), d.Remaining(1), d.Remaining(2))
			}
			for w := range 3 {
				if r := d.Remaining(w); r < 0 || r != max(tc.limit[w]-tc.count[w], 0) {
					t.Errorf("Remaining(%d) = %d", w, r)
				}
			}
		})
	}
}

var retryAfterRE = regexp.MustCompile(`retry after (\d+) seconds`)

func TestDecisionRetryAfterAndErr(t *testing.T) {
	now := time.Date(2025, 6, 10, 14, 20, 30, 0, time.UTC) // 30 s left in the minute, 39:30 in the hour
	starts := limits.WindowStarts(now)
	reset := [3]int64{starts[0] + 60, starts[1] + 3600, starts[2] + 86400}
	for _, tc := range []struct {
		name   string
		limit  [3]int
		count  [3]int
		now    time.Time
		want   int
		window string
	}{
		{"minute exhausted", [3]int{60, 1000, 10000}, [3]int{60, 100, 100}, now, 30, "60 requests per minute"},
		{"hour exhausted", [3]int{60, 1000, 10000}, [3]int{5, 1000, 1000}, now, 39*60 + 30, "1000 requests per hour"},
		{"day exhausted", [3]int{60, 1000, 10000}, [3]int{5, 5, 10000}, now, 9*3600 + 39*60 + 30, "10000 requests per day"},
		{"minute and hour: wait for the hour", [3]int{5, 5, 100}, [3]int{5, 5, 5}, now, 39*60 + 30, "per hour"},
		{"all three: wait for the day", [3]int{5, 5, 5}, [3]int{5, 5, 5}, now, 9*3600 + 39*60 + 30, "per day"},
		{"sub-second left rounds to at least 1", [3]int{5, 100, 100}, [3]int{5, 5, 5}, now.Add(29*time.Second + 900*time.Millisecond), 1, "per minute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := limits.Decision{Limit: tc.limit, Count: tc.count, Reset: reset, Now: tc.now}
			if got := d.RetryAfter(); got != tc.want {
				t.Fatalf("RetryAfter() = %d, want %d", got, tc.want)
			}
			if allowed := (limits.Decision{Allowed: true, Limit: d.Limit, Count: d.Count, Reset: d.Reset, Now: d.Now}); allowed.Err() != nil {
				// Err is about the decision: only a refused one has an error.
				t.Fatalf("Err() of an allowed decision = %v", allowed.Err())
			}
			fe := wantFault(t, d.Err(), fault.RateLimitExceeded, http.StatusTooManyRequests)
			if fe.RetryAfter != tc.want {
				t.Errorf("fault RetryAfter %d, want %d", fe.RetryAfter, tc.want)
			}
			m := retryAfterRE.FindStringSubmatch(fe.Message)
			if m == nil {
				t.Fatalf("message %q names no wait", fe.Message)
			}
			if n, _ := strconv.Atoi(m[1]); n != fe.RetryAfter {
				t.Errorf("message %q names %d seconds, retry_after is %d", fe.Message, n, fe.RetryAfter)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(tc.window)).MatchString(fe.Message) {
				t.Errorf("message %q does not name %q", fe.Message, tc.window)
			}
		})
	}
}

// openDB opens a SQLite store in a fresh directory.
func openDB(t *testing.T) (*sqlite.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aivis.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// rawDB opens the same file with a plain connection, to look at tables.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func addKey(t *testing.T, db *sqlite.DB, account, key, client string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.Account(ctx, account); errors.Is(err, store.ErrNotFound) {
		typ := store.AccountStandard
		if client != "" {
			typ = store.AccountAgency
		}
		if err := db.CreateAccount(ctx, store.Account{ID: account, Name: account, Tier: "starter", Type: typ, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if client != "" {
		if err := db.CreateClient(ctx, store.Client{ID: client, AccountID: account, Name: client, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateKey(ctx, store.Key{ID: key, AccountID: account, ClientID: client, Name: key,
		KeyHash: []byte("hash-" + key), SecretHash: []byte("s"), Hint: "svc_…", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
}

func TestNilStoreIsNoOp(t *testing.T) {
	m := limits.NewMemory(nil, quiet)
	take(t, m, use("a", t0), [3]int{5, 5, 5})
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Load(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
}

type usageRow struct {
	account, client string
	hour            time.Time
	count           int64
}

func usageRows(t *testing.T, raw *sql.DB, key string) []usageRow {
	t.Helper()
	rows, err := raw.Query(`SELECT account_id, coalesce(client_id, ''), hour, count FROM usage_hourly WHERE key_id = ? ORDER BY hour`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []usageRow
	for rows.Next() {
		var r usageRow
		var hour int64
		if err := rows.Scan(&r.account, &r.client, &hour, &r.count); err != nil {
			t.Fatal(err)
		}
		r.hour = time.Unix(0, hour).UTC()
		out = append(out, r)
	}
	return out
}

func lastUsed(t *testing.T, raw *sql.DB, key string) time.Time {
	t.Helper()
	var ns sql.NullInt64
	if err := raw.QueryRow(`SELECT last_used_at FROM api_keys WHERE id = ?`, key).Scan(&ns); err != nil {
		t.Fatal(err)
	}
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64).UTC()
}

// failingCounters fails SaveCounts a number of times, then passes through.
type failingCounters struct {
	store.Counters
	mu       sync.Mutex
	failures int
	calls    int
}

func (f *failingCounters) SaveCounts(ctx context.Context, w []store.Window, u []store.KeyUsage) error {
	f.mu.Lock()
	f.calls++
	fail := f.failures > 0
	if fail {
		f.failures--
	}
	f.mu.Unlock()
	if fail {
		return errors.New("disk on fire")
	}
	return f.Counters.SaveCounts(ctx, w, u)
}

// TestFailedFlushRequeues: what a failed flush did not write is written by
// the next one, merged with what came in between; nothing is lost or doubled.
func TestFailedFlushRequeues(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t)
	raw := rawDB(t, path)
	addKey(t, db, "acct_a", "key_a", "")
	addKey(t, db, "acct_b", "key_b", "")
	fc := &failingCounters{Counters: db, failures: 2}
	m := limits.NewMemory(fc, quiet)
	l := [3]int{big, big, big}
	for range 5 {
		take(t, m, limits.Use{AccountID: "acct_a", KeyID: "key_a", At: t0}, l)
	}
	if err := m.Flush(ctx); err == nil {
		t.Fatal("first flush succeeded; the wrapper should fail it")
	}
	take(t, m, limits.Use{AccountID: "acct_a", KeyID: "key_a", At: t0.Add(time.Second)}, l)
	take(t, m, limits.Use{AccountID: "acct_b", KeyID: "key_b", At: t0.Add(time.Second)}, l)
	if err := m.Flush(ctx); err == nil {
		t.Fatal("second flush succeeded; the wrapper should fail it")
	}
	take(t, m, limits.Use{AccountID: "acct_a", KeyID: "key_a", At: t0.Add(2 * time.Second)}, l)
	if err := m.Flush(ctx); err != nil {
		t.Fatalf("third flush: %v", err)
	}
	if got := usageRows(t, raw, "key_a"); len(got) != 1 || got[0].count != 7 {
		t.Errorf("usage of key_a %v, want 7 in one hour", got)
	}
	if got := usageRows(t, raw, "key_b"); len(got) != 1 || got[0].count != 1 {
		t.Errorf("usage of key_b %v, want 1", got)
	}
	if lu := lastUsed(t, raw, "key_a"); !lu.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("last_used_at %v", lu)
	}
	for _, w := range []string{"minute", "hour", "day"} {
		var n int64
		if err := raw.QueryRow(`SELECT count FROM rate_windows WHERE account_id = 'acct_a' AND window = ?`, w).Scan(&n); err != nil || n != 7 {
			t.Errorf("rate_windows acct_a %s = %d, %v; want 7", w, n, err)
		}
	}
	// And the restored counter agrees.
	m2 := limits.NewMemory(db, quiet)
	if err := m2.Load(ctx, t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := take(t, m2, use("acct_a", t0.Add(3*time.Second)), l); d.Count != [3]int{8, 8, 8} {
		t.Errorf("after restore: %v", d.Count)
	}
}

// TestFlushToClosedDatabaseRequeues: a database that fails (here, closed)
// loses nothing: the counts stay queued in memory.
func TestFlushToClosedDatabaseRequeues(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "aivis.db")
	closed, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	addKey(t, db, "acct_a", "key_a", "")

	sw := &switchCounters{cur: closed}
	m := limits.NewMemory(sw, quiet)
	for range 4 {
		take(t, m, limits.Use{AccountID: "acct_a", KeyID: "key_a", At: t0}, [3]int{big, big, big})
	}
	if err := m.Flush(ctx); err == nil {
		t.Fatal("flush to a closed database succeeded")
	}
	sw.set(db)
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	if got := usageRows(t, raw, "key_a"); len(got) != 1 || got[0].count != 4 {
		t.Errorf("usage %v, want 4", got)
	}
}

// switchCounters writes behind to the store it is set to; it takes
// nothing (the memory counter does not).
type switchCounters struct {
	store.Counters
	mu  sync.Mutex
	cur store.Counters
}

func (s *switchCounters) set(c store.Counters) { s.mu.Lock(); s.cur = c; s.mu.Unlock() }
func (s *switchCounters) get() store.Counters  { s.mu.Lock(); defer s.mu.Unlock(); return s.cur }
func (s *switchCounters) LoadWindows(ctx context.Context, since time.Time) ([]store.Window, error) {
	return s.get().LoadWindows(ctx, since)
}
func (s *switchCounters) SaveCounts(ctx context.Context, w []store.Window, u []store.KeyUsage) error {
	return s.get().SaveCounts(ctx, w, u)
}

// TestRunFlushesUntilCancelled: Run writes counts every interval and once
// more when its context ends.
func TestRunFlushesUntilCancelled(t *testing.T) {
	db, path := openDB(t)
	raw := rawDB(t, path)
	addKey(t, db, "acct_a", "key_a", "")
	m := limits.NewMemory(db, quiet)
	now := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Interval = 10 * time.Millisecond; m.Run(ctx); close(done) }()
	take(t, m, limits.Use{AccountID: "acct_a", KeyID: "key_a", At: now}, [3]int{big, big, big})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if rows := usageRows(t, raw, "key_a"); len(rows) == 1 && rows[0].count == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the periodic flush did not write the count")
		}
		time.Sleep(5 * time.Millisecond)
	}
	take(t, m, limits.Use{AccountID: "acct_a", KeyID: "key_a", At: now}, [3]int{big, big, big})
	cancel()
	<-done
	if rows := usageRows(t, raw, "key_a"); len(rows) != 1 || rows[0].count != 2 {
		t.Fatalf("after the final flush: %v, want 2", rows)
	}
}

// TestConcurrentTakeAndFlush: flushing while requests are counted loses
// nothing (run with -race).
func TestConcurrentTakeAndFlush(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t)
	raw := rawDB(t, path)
	const accounts, perAccount = 8, 200
	for i := range accounts {
		addKey(t, db, fmt.Sprintf("acct_%d", i), fmt.Sprintf("key_%d", i), "")
	}
	m := limits.NewMemory(db, quiet)
	stop := make(chan struct{})
	var flusher sync.WaitGroup
	flusher.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				if err := m.Flush(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	var wg sync.WaitGroup
	for i := range accounts {
		wg.Go(func() {
			for range perAccount {
				u := limits.Use{AccountID: fmt.Sprintf("acct_%d", i), KeyID: fmt.Sprintf("key_%d", i), At: t0}
				if d, err := m.Take(ctx, u, [3]int{big, big, big}); err != nil || !d.Allowed {
					t.Errorf("Take: %+v, %v", d, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	flusher.Wait()
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range accounts {
		if rows := usageRows(t, raw, fmt.Sprintf("key_%d", i)); len(rows) != 1 || rows[0].count != perAccount {
			t.Errorf("key_%d usage %v, want %d", i, rows, perAccount)
		}
		var n int64
		raw.QueryRow(`SELECT count FROM rate_windows WHERE account_id = ? AND window = 'day'`, fmt.Sprintf("acct_%d", i)).Scan(&n)
		if n != perAccount {
			t.Errorf("acct_%d day window %d, want %d", i, n, perAccount)
		}
	}
}

// TestMemoryAdmit runs the cases of Admit and Screen on the embedded
// counter and guard, one pair as a process has.
func TestMemoryAdmit(t *testing.T) {
	countertest.RunAdmit(t, func(t *testing.T) func(*testing.T, int) (limits.Counter, limits.Guard) {
		var c limits.Counter
		var g limits.Guard
		return func(_ *testing.T, limit int) (limits.Counter, limits.Guard) {
			if c == nil {
				c, g = limits.NewMemory(nil, quiet), limits.MemoryGuards("auth", limit, time.Minute)
			}
			return c, g
		}
	})
}
