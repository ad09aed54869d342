package cache_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/sqlite"
)

var (
	ctx = context.Background()
	t0  = time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestKeyCacheEntrySize: a cached key costs at most 400 bytes of heap,
// its account and scopes shared with the other keys that have them. The
// cache holds up to 50,000 keys, about 20 MB at that rate, within the
// server's memory target (150 MB resident with 100,000 keys in use).
func TestKeyCacheEntrySize(t *testing.T) {
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := cache.Wrap(db, db.Signal())
	const accounts, keys = 400, 4000
	ids := make([]string, accounts)
	for i := range ids {
		ids[i] = randid.New("acct")
		must(t, db.CreateAccount(ctx, store.Account{ID: ids[i], Name: fmt.Sprintf("Account %d", i), Tier: "starter",
			Type: store.AccountStandard, CreatedAt: t0}))
	}
	hashes := make([][]byte, keys)
	for i := range hashes {
		key := auth.KeyPrefix + randid.String(40)
		hashes[i] = auth.Hash(key)
		must(t, db.CreateKey(ctx, store.Key{ID: randid.New("key"), AccountID: ids[i%accounts], Name: fmt.Sprintf("key %d", i),
			KeyHash: hashes[i], SecretHash: auth.Hash(randid.String(64)), Hint: auth.Hint(key), Scopes: auth.Scopes, CreatedAt: t0}))
	}
	read := func(h []byte) {
		t.Helper()
		if _, err := c.PrincipalByKeyHash(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	// The first read prepares what every later one reuses.
	read(hashes[0])
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, h := range hashes[1:] {
		read(h)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := cache.CachedKeys(c); n != keys {
		t.Fatalf("the cache holds %d keys, want %d", n, keys)
	}
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / (keys - 1)
	t.Logf("%d bytes of heap per cached key", per)
	if per > 400 {
		t.Errorf("a cached key costs %d bytes of heap, want at most 400", per)
	}
}

// counting is the engine's signal, counted.
type counting struct {
	cache.Signal
	n atomic.Int64
}

func (c *counting) Versions(ctx context.Context) (cache.Versions, error) {
	c.n.Add(1)
	return c.Signal.Versions(ctx)
}

// With AsOf, one check of the signal serves the reads of every request
// that began before it; a commit made before a request began is seen by
// it, made by another handle (the CLI) or not.
func TestAsOfServesEarlierRequestsAndSeesEarlierCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	server, err := sqlite.Open(ctx, path)
	must(t, err)
	defer server.Close()
	cli, err := sqlite.Open(ctx, path)
	must(t, err)
	defer cli.Close()
	sig := &counting{Signal: server.Signal()}
	c := cache.Wrap(server, sig)
	must(t, cli.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
	key := auth.Hash("svc_key")
	must(t, cli.CreateKey(ctx, store.Key{ID: "key_1", AccountID: "acct_1", Name: "k", KeyHash: key, SecretHash: auth.Hash("s"),
		Hint: "svc_…_key", Scopes: auth.Scopes, CreatedAt: t0}))

	began := time.Now()
	for range 5 { // one request's reads, and those of requests that began with it
		if _, err := c.PrincipalByKeyHash(cache.AsOf(ctx, began), key); err != nil {
			t.Fatal(err)
		}
	}
	if n := sig.n.Load(); n != 1 {
		t.Fatalf("%d checks of the signal for reads as of one moment, want 1", n)
	}
	must(t, cli.SetTier(ctx, "acct_1", "enterprise"))
	p, err := c.PrincipalByKeyHash(cache.AsOf(ctx, time.Now()), key)
	if err != nil || p.Account.Tier != "enterprise" || sig.n.Load() != 2 {
		t.Fatalf("a request that began after the CLI's change reads tier %q after %d checks (%v)", p.Account.Tier, sig.n.Load(), err)
	}
}

// The targets MatchWebhooks returns are the caller's list: changing a
// record in it changes nothing cached.
func TestTargetsAreTheCallers(t *testing.T) {
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	must(t, err)
	defer db.Close()
	box, _, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
	must(t, err)
	db.SetSecrets(box)
	c := cache.Wrap(db, db.Signal())
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
	w := store.Webhook{ID: "wh_1", AccountID: "acct_1", Domain: "example.com", URL: "https://example.com/hook",
		Events: []string{"ai_visibility_change"}, Enabled: true, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", CreatedAt: t0, UpdatedAt: t0}
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(w) }))
	ws, err := c.MatchWebhooks(ctx, "acct_1", "", "example.com")
	must(t, err)
	ws[0].Failures, ws[0].URL = 99, "https://changed.example/"
	again, err := c.MatchWebhooks(ctx, "acct_1", "", "example.com")
	must(t, err)
	if len(again) != 1 || again[0].Failures != 0 || again[0].URL != w.URL {
		t.Fatalf("a caller's change reached the cache: %+v", again)
	}
}

// gated is the engine's signal, counted, whose checks wait until release
// is closed; entered has a value for each check that began.
type gated struct {
	cache.Signal
	n       atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Versions(ctx context.Context) (cache.Versions, error) {
	g.n.Add(1)
	g.entered <- struct{}{}
	<-g.release
	return g.Signal.Versions(ctx)
}

// Reads as of a moment after a check began wait for it, then share the
// next check: the requests that queue behind one check cost one more,
// not one each.
func TestQueuedReadsShareTheNextCheck(t *testing.T) {
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	must(t, err)
	defer db.Close()
	must(t, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "A", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
	sig := &gated{Signal: db.Signal(), entered: make(chan struct{}, 16), release: make(chan struct{})}
	c := cache.Wrap(db, sig)
	read := func(asOf time.Time) error {
		_, _, err := c.Budget(cache.AsOf(ctx, asOf), "acct_1", "2025-06")
		return err
	}
	errs := make(chan error, 9)
	go func() { errs <- read(time.Now()) }()
	<-sig.entered // the first check began
	later := time.Now()
	const queued = 8
	for range queued {
		go func() { errs <- read(later) }()
	}
	waitQueued(t, queued)
	close(sig.release)
	for range queued + 1 {
		must(t, <-errs)
	}
	if n := sig.n.Load(); n != 2 {
		t.Fatalf("%d checks of the signal, want 2: the first and one for the %d reads queued behind it", n, queued)
	}
}

// waitQueued waits until n goroutines wait for their turn to check the
// signal (blocked on the cache's lock of checks).
func waitQueued(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for {
		stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		waiting := 0
		for _, s := range stacks {
			if strings.Contains(s, "[sync.Mutex.Lock") && strings.Contains(s, "cache.(*Store).current") {
				waiting++
			}
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d reads wait for the check", waiting, n)
		}
		runtime.Gosched()
	}
}
