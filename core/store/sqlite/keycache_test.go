package sqlite_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// TestKeyCacheEntrySize: a cached key costs at most 400 bytes of heap,
// its account and scopes shared with the other keys that have them. The
// cache holds up to 50,000 keys, about 20 MB at that rate, within the
// server's memory target (150 MB resident with 100,000 keys in use).
func TestKeyCacheEntrySize(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "aivis.db"))
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
		if _, err := db.PrincipalByKeyHash(ctx, h); err != nil {
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
	if n := sqlite.CachedKeys(db); n != keys {
		t.Fatalf("the cache holds %d keys, want %d", n, keys)
	}
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / (keys - 1)
	t.Logf("%d bytes of heap per cached key", per)
	if per > 400 {
		t.Errorf("a cached key costs %d bytes of heap, want at most 400", per)
	}
}
