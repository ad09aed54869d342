package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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

// rchar is how many bytes the process has read with read(2) and pread(2),
// from /proc/self/io.
func rchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no I/O counters: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// TestReaderPageCacheIsSmall: a reader connection keeps at most 512 KiB
// of pages (SQLite's default is 2 MB a connection), which any commit
// empties anyway: a second scan of a 1.4 MB table, with nothing committed
// in between, reads most of it from the file again.
func TestReaderPageCacheIsSmall(t *testing.T) {
	db, path := newDB(t)
	r := raw(t, path)
	for _, q := range []string{`CREATE TABLE scan_test (id INTEGER PRIMARY KEY, b BLOB)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
			INSERT INTO scan_test SELECT i, randomblob(1000) FROM n`,
		`PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := r.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_, read := db.Pools()
	conn, err := read.Conn(ctx)
	must(t, err)
	defer conn.Close()
	scan := func() int64 {
		t.Helper()
		var n int64
		must(t, conn.QueryRowContext(ctx, `SELECT sum(length(b)) FROM scan_test`).Scan(&n))
		if n != 1200*1000 {
			t.Fatalf("scanned %d bytes of blobs, want %d", n, 1200*1000)
		}
		return n
	}
	scan()
	before := rchar(t)
	scan()
	again := rchar(t) - before
	t.Logf("the second scan read %d bytes", again)
	if again < 512<<10 {
		t.Errorf("the second scan read %d bytes from the file: the reader cached most of the 1.4 MB table", again)
	}
}
