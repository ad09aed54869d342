package sqlite_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

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
