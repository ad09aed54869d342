package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
	"github.com/aivis/aivis/core/store/sqlite"
)

var (
	ctx = context.Background()
	t0  = time.Date(2025, 6, 10, 14, 20, 30, 123456789, time.UTC)
)

func open(t testing.TB, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// cached is db behind the caches the server reads through, validated by
// the engine's signal.
func cached(db *sqlite.DB) *cache.Store { return cache.Wrap(db, db.Signal()) }

func newDB(t *testing.T) (*sqlite.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aivis.db")
	return open(t, path), path
}

func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	r, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func account(t *testing.T, db *sqlite.DB, id, typ string) store.Account {
	t.Helper()
	a := store.Account{ID: id, Name: "Account " + id, Tier: "starter", Type: typ, CreatedAt: t0}
	must(t, db.CreateAccount(ctx, a))
	return a
}

func migrationFiles(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sql") {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatal("no migrations found")
	}
	return out
}

// TestMigrationsApplyOnce: a new file gets every migration once; reopening
// applies nothing again and keeps the data.
func TestMigrationsApplyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	db, err := sqlite.Open(ctx, path)
	must(t, err)
	account(t, db, "acct_1", store.AccountStandard)
	must(t, db.Close())
	r := raw(t, path)
	var applied []int64
	readApplied := func() []int64 {
		rows, err := r.Query(`SELECT version_id, id FROM goose_db_version WHERE version_id > 0 ORDER BY id`)
		must(t, err)
		defer rows.Close()
		var vs, ats []int64
		for rows.Next() {
			var v, at int64
			must(t, rows.Scan(&v, &at))
			vs, ats = append(vs, v), append(ats, at)
		}
		return append(vs, ats...)
	}
	applied = readApplied()
	files := migrationFiles(t)
	if len(applied) != 2*len(files) {
		t.Fatalf("goose_db_version %v, want %d versions (%v)", applied, len(files), files)
	}
	for i, f := range files {
		// A version is its file's number; numbers may skip (0009 can be
		// written before 0008 lands).
		v, err := strconv.ParseInt(strings.SplitN(f, "_", 2)[0], 10, 64)
		must(t, err)
		if applied[i] != v {
			t.Errorf("%s recorded as version %d", f, applied[i])
		}
	}
	for range 3 {
		db, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if _, err := db.Account(ctx, "acct_1"); err != nil {
			t.Fatalf("data lost on reopen: %v", err)
		}
		must(t, db.Close())
		if again := readApplied(); !slices.Equal(again, applied) {
			t.Fatalf("reopening changed goose_db_version: %v -> %v", applied, again)
		}
	}
	var journal string
	must(t, r.QueryRow(`PRAGMA journal_mode`).Scan(&journal))
	if journal != "wal" {
		t.Errorf("journal mode %q, want wal", journal)
	}
}

func TestOpenFailsOnGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	must(t, os.WriteFile(path, []byte(strings.Repeat("not a database ", 100)), 0o600))
	if db, err := sqlite.Open(ctx, path); err == nil {
		db.Close()
		t.Fatal("Open of a file that is not a database succeeded")
	}
}

func newKey(id, account, client string, created time.Time) store.Key {
	return store.Key{ID: id, AccountID: account, ClientID: client, Name: "name " + id,
		KeyHash: []byte("kh-" + id), SecretHash: []byte("sh-" + id), Hint: "svc_abcd…wxyz",
		Scopes: []string{"budget:read", "content:read"}, CreatedAt: created}
}

// keyOnTwoHandles opens two handles on a new file, the server's and
// another's (the CLI's, the content engine's), which makes the account
// acct_1 and its key key_1.
func keyOnTwoHandles(t *testing.T) (server, other *sqlite.DB, path string, k store.Key) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "aivis.db")
	server, other = open(t, path), open(t, path)
	account(t, other, "acct_1", store.AccountStandard)
	k = newKey("key_1", "acct_1", "", t0)
	must(t, other.CreateKey(ctx, k))
	return server, other, path, k
}

func cr(id, account, client string, created time.Time) store.ContentRequest {
	return store.ContentRequest{
		ID: id, AccountID: account, ClientID: client, KeyID: "key_1", Type: "optimize", Status: "queued",
		Domain: "example.com", Budget: 10_000_000, BudgetMonth: "2025-06", CreatedAt: created, UpdatedAt: created,
	}
}

func insert(t *testing.T, db *sqlite.DB, crs ...store.ContentRequest) {
	t.Helper()
	must(t, db.Update(ctx, func(tx store.Tx) error {
		for _, c := range crs {
			if err := tx.InsertContentRequest(c); err != nil {
				return err
			}
		}
		return nil
	}))
}

// TestAsOfSeesCommitsMadeBefore: a cached read under cache.AsOf(t) sees
// every commit another handle made before t (the suite's
// Isolation/ReadsSeeEveryCommitOfEveryHandle reads without it).
func TestAsOfSeesCommitsMadeBefore(t *testing.T) {
	server, cli, _, k := keyOnTwoHandles(t)
	srv := cached(server) // the server reads through its caches
	for range 3 {         // cached
		if _, err := srv.PrincipalByKeyHash(cache.AsOf(ctx, time.Now()), k.KeyHash); err != nil {
			t.Fatal(err)
		}
		if _, _, err := srv.Budget(cache.AsOf(ctx, time.Now()), "acct_1", "2025-06"); err != nil {
			t.Fatal(err)
		}
	}
	must(t, cli.SetTier(ctx, "acct_1", "enterprise"))
	p, err := srv.PrincipalByKeyHash(cache.AsOf(ctx, time.Now()), k.KeyHash)
	if err != nil || p.Account.Tier != "enterprise" {
		t.Fatalf("after another handle's SetTier (AsOf now): tier %q, %v", p.Account.Tier, err)
	}
	must(t, cli.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_1", "2025-06", 1, 2) }))
	insert(t, cli, cr("cr_1", "acct_1", "", t0))
	b, active, err := srv.Budget(cache.AsOf(ctx, time.Now()), "acct_1", "2025-06")
	if err != nil || b != (store.BudgetMonth{Spent: 1, Reserved: 2}) || active != 1 {
		t.Fatalf("after another handle's writes (AsOf now): %+v, %d active, %v", b, active, err)
	}
}

// TestListContentRequestsMalformedCursor: the engine's cursors are the
// base64 of "created_at:id"; one that does not parse is ErrMalformed.
func TestListContentRequestsMalformedCursor(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	insert(t, db, cr("cr_1", "acct_1", "", t0))
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{
		"YWJj=",         // padded: the cursor alphabet has no padding
		enc("no-colon"), // no separator
		enc("abc:cr_1"), // time is not a number
		enc("123:"),     // no id
		enc(":cr_1"),    // no time
		enc("1.5:cr_1"), // not an integer
		enc("99999999999999999999999:cr_1"),
		"cr_1",
	} {
		_, _, err := db.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_1", Limit: 10, Cursor: c})
		if !errors.Is(err, store.ErrMalformed) {
			t.Errorf("cursor %q: %v, want ErrMalformed", c, err)
		}
	}
	// A well-formed cursor past everything is an empty last page.
	page, next, err := db.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_1", Limit: 10, Cursor: enc("0:cr_0")})
	if err != nil || len(page) != 0 || next != "" {
		t.Errorf("cursor before all time: %d items, %q, %v", len(page), next, err)
	}
}

// TestOpenPathWithURIMetacharacters: the path is part of a SQLite URI, so a
// data directory whose name holds '#', '?' or '%' must still open that very
// file ('#' would start a fragment, '?' the options, "%41" decode to "A"),
// with the options (WAL) in force, and keep its data across a reopen.
// (Found by this test; fixed in f781557.)
func TestOpenPathWithURIMetacharacters(t *testing.T) {
	for _, name := range []string{"a#b.db", "a?b.db", "a%41.db", "a&_journal_mode=DELETE.db", "sp ace.db"} {
		t.Run(strings.NewReplacer("#", "hash", "?", "question", "%", "percent", "&", "amp", "=", "eq").Replace(name), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			db, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatalf("Open(%q): %v", path, err)
			}
			account(t, db, "acct_1", store.AccountStandard)
			db.Close()
			ents, _ := os.ReadDir(dir)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if !slices.Contains(names, name) || slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, name) }) {
				t.Fatalf("Open(%q) made %q, not (only) the file asked for", name, names)
			}
			db = open(t, path)
			if _, err := db.Account(ctx, "acct_1"); err != nil {
				t.Fatalf("reopened %q: %v", name, err)
			}
			// WAL is on: the options were not swallowed by the path.
			if _, err := os.Stat(path + "-wal"); err != nil {
				t.Fatalf("no WAL file beside %q: %v", name, err)
			}
		})
	}
}

// TestConcurrentOpenOfANewFile: the server and the CLI may open a new
// data directory at the same moment: every Open succeeds, the migrations
// are applied once, and all handles share the data.
func TestConcurrentOpenOfANewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	const n = 6
	dbs := make([]*sqlite.DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			dbs[i], errs[i] = sqlite.Open(ctx, path)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	var versions int
	must(t, raw(t, path).QueryRow(`SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&versions))
	if versions != len(migrationFiles(t)) {
		t.Fatalf("%d migrations recorded, want %d", versions, len(migrationFiles(t)))
	}
	account(t, dbs[0], "acct_1", store.AccountStandard)
	for i, db := range dbs {
		if _, err := db.Account(ctx, "acct_1"); err != nil {
			t.Errorf("handle %d: %v", i, err)
		}
	}
}

// TestKeyCacheFollowsEveryChange: the principal cache of one handle
// follows each change another handle makes to what it holds (expiry,
// scopes, client, account type), on the very next read.
func TestKeyCacheFollowsEveryChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	server := open(t, path)
	srv := cached(server) // the server reads through its caches
	other := open(t, path)
	r := raw(t, path)
	account(t, other, "acct_1", store.AccountStandard)
	must(t, other.CreateClient(ctx, store.Client{ID: "cli_1", AccountID: "acct_1", Name: "c", CreatedAt: t0}))
	k := newKey("key_1", "acct_1", "", t0)
	must(t, other.CreateKey(ctx, k))
	read := func() store.Principal {
		t.Helper()
		p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash)
		must(t, err)
		if again, _ := srv.PrincipalByKeyHash(ctx, k.KeyHash); !reflect.DeepEqual(again, p) {
			t.Fatalf("a second read differs: %+v, %+v", p, again)
		}
		return p
	}
	read()
	for _, tc := range []struct {
		sql   string
		check func(store.Principal) bool
	}{
		{`UPDATE api_keys SET expires_at = 42 WHERE id = 'key_1'`, func(p store.Principal) bool { return p.Key.ExpiresAt.Equal(time.Unix(0, 42)) }},
		{`UPDATE api_keys SET scopes = 'budget:read' WHERE id = 'key_1'`, func(p store.Principal) bool { return slices.Equal(p.Key.Scopes, []string{"budget:read"}) }},
		{`UPDATE api_keys SET client_id = 'cli_1' WHERE id = 'key_1'`, func(p store.Principal) bool { return p.Key.ClientID == "cli_1" }},
		{`UPDATE accounts SET type = 'agency' WHERE id = 'acct_1'`, func(p store.Principal) bool { return p.Account.Type == store.AccountAgency }},
		{`UPDATE accounts SET name = 'Renamed' WHERE id = 'acct_1'`, func(p store.Principal) bool { return p.Account.Name == "Renamed" }},
		{`UPDATE api_keys SET revoked_at = 7 WHERE id = 'key_1'`, func(p store.Principal) bool { return p.Key.RevokedAt.Equal(time.Unix(0, 7)) }},
	} {
		if _, err := r.Exec(tc.sql); err != nil {
			t.Fatal(err)
		}
		if p := read(); !tc.check(p) {
			t.Fatalf("after %s the server reads %+v", tc.sql, p)
		}
	}
	// A deleted key is gone at once.
	if _, err := r.Exec(`DELETE FROM api_keys WHERE id = 'key_1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.PrincipalByKeyHash(ctx, k.KeyHash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
}

// TestContentRequestEpochMovesOnStatusOnly: the store rewrites every
// column of a content request, so the cache epoch must move only when
// what the caches read changes (a request's status or account), not on a
// processing request's lease renewals, steps and saved work, which would
// empty the key and budget caches of every API request.
func TestContentRequestEpochMovesOnStatusOnly(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	r := raw(t, path)
	keys := func() int64 {
		t.Helper()
		var n int64
		must(t, r.QueryRow(`SELECT n FROM cache_epoch`).Scan(&n))
		return n
	}
	// The budgets' counter: the active requests an account's budget reads.
	epoch := func() int64 {
		t.Helper()
		var n int64
		must(t, r.QueryRow(`SELECT budgets FROM cache_epoch`).Scan(&n))
		return n
	}
	// None of it empties the key cache.
	k := keys()
	defer func() {
		if got := keys(); got != k {
			t.Errorf("content request changes moved the keys' counter %d -> %d", k, got)
		}
	}()
	update := func(f func(*store.ContentRequest)) {
		t.Helper()
		must(t, db.Update(ctx, func(tx store.Tx) error {
			c, err := tx.ContentRequest("acct_1", "cr_1")
			if err != nil {
				return err
			}
			f(&c)
			return tx.UpdateContentRequest(c, 0)
		}))
	}
	n := epoch()
	insert(t, db, cr("cr_1", "acct_1", "", t0))
	if got := epoch(); got != n+1 {
		t.Fatalf("insert: epoch %d -> %d, want a move", n, got)
	}
	n = epoch()
	var claimed store.ContentRequest
	must(t, db.Update(ctx, func(tx store.Tx) (err error) {
		claimed, err = tx.ClaimContentRequest("proc_test", t0, t0.Add(time.Minute))
		return err
	}))
	if got := epoch(); claimed.ID != "cr_1" || got != n+1 {
		t.Fatalf("claim of %q (queued -> processing): epoch %d -> %d, want a move", claimed.ID, n, got)
	}
	if _, active, err := db.Budget(ctx, "acct_1", "2025-06"); err != nil || active != 1 {
		t.Fatalf("active %d, %v; want 1", active, err)
	}
	n = epoch()
	for i := range 5 {
		update(func(c *store.ContentRequest) {
			c.LeaseUntil = t0.Add(time.Duration(i+2) * time.Minute)
			c.Step, c.Work, c.Spent = "rewrite", []byte(fmt.Sprintf(`{"round":%d}`, i)), int64(i)
			c.UpdatedAt = t0.Add(time.Duration(i) * time.Second)
		})
	}
	if got := epoch(); got != n {
		t.Fatalf("lease renewals, steps and work of a processing request moved the epoch %d -> %d", n, got)
	}
	update(func(c *store.ContentRequest) { c.Status, c.LeaseUntil, c.EndedAt = "completed", time.Time{}, t0 })
	if got := epoch(); got != n+1 {
		t.Fatalf("processing -> completed: epoch %d -> %d, want a move", n, got)
	}
	// The cached count follows: the account has no active request left.
	if _, active, err := db.Budget(ctx, "acct_1", "2025-06"); err != nil || active != 0 {
		t.Fatalf("active %d, %v; want 0", active, err)
	}
}

// TestClaimContentRequestIsFair follows the claim's rule step by step:
// the account with the fewest requests processing, then the one whose
// last start is oldest (never started first), then the oldest queued
// request; within an agency its clients by the same rule; a processing
// request whose lease ended before anything queued.
func TestClaimContentRequestIsFair(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_a", store.AccountStandard)
	account(t, db, "acct_b", store.AccountStandard)
	account(t, db, "acct_c", store.AccountAgency)
	account(t, db, "acct_d", store.AccountStandard)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	insert(t, db, cr("cr_a1", "acct_a", "", at(0)), cr("cr_a2", "acct_a", "", at(1)), cr("cr_a3", "acct_a", "", at(2)),
		cr("cr_b1", "acct_b", "", at(3)), cr("cr_b2", "acct_b", "", at(4)),
		cr("cr_c1", "acct_c", "cli_1", at(5)), cr("cr_c1b", "acct_c", "cli_1", at(6)), cr("cr_c2", "acct_c", "cli_2", at(7)))
	now := t0.Add(time.Hour)
	claim := func(want string, attempts int) {
		t.Helper()
		now = now.Add(time.Second)
		var got store.ContentRequest
		err := db.Update(ctx, func(tx store.Tx) (err error) {
			got, err = tx.ClaimContentRequest("proc_test", now, now.Add(time.Minute))
			return err
		})
		if want == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("claim: %s, %v; want nothing to claim", got.ID, err)
			}
			return
		}
		must(t, err)
		if got.ID != want || got.Status != "processing" || got.Attempts != attempts || !got.LeaseUntil.Equal(now.Add(time.Minute)) {
			t.Fatalf("claim: %s (%s, attempts %d, lease %v); want %s, attempts %d", got.ID, got.Status, got.Attempts, got.LeaseUntil, want, attempts)
		}
	}
	set := func(id, account string, f func(*store.ContentRequest)) {
		t.Helper()
		must(t, db.Update(ctx, func(tx store.Tx) error {
			c, err := tx.ContentRequest(account, id)
			if err != nil {
				return err
			}
			f(&c)
			return tx.UpdateContentRequest(c, 0)
		}))
	}
	claim("cr_a1", 1) // none processing, none started: the oldest queued
	claim("cr_b1", 1) // acct_a has one processing
	claim("cr_c1", 1) // then acct_c; within it cli_1's request is older
	claim("cr_a2", 1) // one each: acct_a started longest ago
	claim("cr_b2", 1)
	claim("cr_c2", 1) // cli_1 has one processing, cli_2 none
	// acct_a ends its requests; acct_d, queued last and never started,
	// goes before it.
	for _, id := range []string{"cr_a1", "cr_a2"} {
		set(id, "acct_a", func(c *store.ContentRequest) { c.Status, c.LeaseUntil, c.EndedAt = "completed", time.Time{}, now })
	}
	insert(t, db, cr("cr_d1", "acct_d", "", now))
	claim("cr_d1", 1)
	claim("cr_a3", 1)
	// cr_b1's worker died: once its lease has ended it is claimed again
	// before cr_c1b, which still waits.
	set("cr_b1", "acct_b", func(c *store.ContentRequest) { c.LeaseUntil = now.Add(-time.Millisecond) })
	claim("cr_b1", 2)
	claim("cr_c1b", 1)
	claim("", 0)
}

// TestRenewContentLease: a renewal moves the lease of the claim that holds
// the request and nothing else (nor the cache epoch); a hand-back ends it
// and counts itself; a stale claim, or a request no longer processing,
// gets ErrLost. ContentRequestClaim
// reads the status and attempts the engine's watcher checks.
func TestRenewContentLease(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	c := cr("cr_1", "acct_1", "", t0)
	c.Content = strings.Repeat("widgets ", 1000)
	insert(t, db, c)
	renew := func(attempts int, until time.Time) error {
		return db.Update(ctx, func(tx store.Tx) error { return tx.RenewContentLease("cr_1", attempts, until) })
	}
	if err := renew(0, t0); !errors.Is(err, store.ErrLost) {
		t.Fatalf("renewal of a queued request: %v", err)
	}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		_, err := tx.ClaimContentRequest("proc_test", t0, t0.Add(time.Minute))
		return err
	}))
	if status, attempts, err := db.ContentRequestClaim(ctx, "acct_1", "cr_1"); status != "processing" || attempts != 1 || err != nil {
		t.Fatalf("claim state %q %d %v", status, attempts, err)
	}
	if _, _, err := db.ContentRequestClaim(ctx, "acct_2", "cr_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another account's request: %v", err)
	}
	before, err := db.ContentRequest(ctx, "acct_1", "cr_1")
	must(t, err)
	var epoch, after string
	must(t, raw(t, path).QueryRow(`SELECT n || '/' || budgets FROM cache_epoch`).Scan(&epoch))
	must(t, renew(1, t0.Add(5*time.Minute)))
	if err := renew(2, t0.Add(time.Hour)); !errors.Is(err, store.ErrLost) {
		t.Fatalf("renewal by another claim: %v", err)
	}
	must(t, raw(t, path).QueryRow(`SELECT n || '/' || budgets FROM cache_epoch`).Scan(&after))
	got, err := db.ContentRequest(ctx, "acct_1", "cr_1")
	must(t, err)
	before.LeaseUntil = t0.Add(5 * time.Minute)
	if !reflect.DeepEqual(got, before) || after != epoch {
		t.Fatalf("after the renewal (epoch %s -> %s):\n got  %+v\n want %+v", epoch, after, got, before)
	}
	// A hand-back ends the lease and counts itself; the claim keeps its
	// number. One by a stale claim changes nothing.
	handBack := func(attempts int) error {
		return db.Update(ctx, func(tx store.Tx) error { return tx.HandBackContentRequest("cr_1", attempts, t0.Add(time.Second)) })
	}
	if err := handBack(2); !errors.Is(err, store.ErrLost) {
		t.Fatalf("hand-back by another claim: %v", err)
	}
	must(t, handBack(1))
	got, err = db.ContentRequest(ctx, "acct_1", "cr_1")
	must(t, err)
	if got.Status != "processing" || got.Attempts != 1 || got.HandBacks != 1 || !got.LeaseUntil.Equal(t0.Add(time.Second)) {
		t.Fatalf("after the hand-back: %s, attempts %d, hand-backs %d, lease %v", got.Status, got.Attempts, got.HandBacks, got.LeaseUntil)
	}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		got.Status, got.LeaseUntil, got.EndedAt = "cancelled", time.Time{}, t0
		return tx.UpdateContentRequest(got, 0)
	}))
	if err := renew(1, t0.Add(time.Hour)); !errors.Is(err, store.ErrLost) {
		t.Fatalf("renewal of a cancelled request: %v", err)
	}
}

// queryPlan is what EXPLAIN QUERY PLAN says of q, one step a line.
func queryPlan(t *testing.T, r *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := r.Query(`EXPLAIN QUERY PLAN `+q, args...)
	must(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		must(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	must(t, rows.Err())
	return plan
}

// TestClaimQueriesSearchIndexes: a claim runs under the write lock, so
// none of its queries may walk the requests of the past: each part of its
// plan is a search of an index (it was a scan of every request an
// account ever made, 160 ms a claim with 200,000 ended requests).
func TestClaimQueriesSearchIndexes(t *testing.T) {
	_, path := newDB(t)
	r := raw(t, path)
	params := map[int]int{0: 1, 1: 0, 2: 1, 3: 2}
	for i, q := range sqlite.ClaimQueries {
		plan := queryPlan(t, r, q, make([]any, params[i])...)
		// A search by account alone (content_requests_page) walks its
		// past too: the searches must be by state, or for a last start.
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") || strings.Contains(step, "content_requests_page") {
				t.Errorf("claim query %d walks the past:\n%s\n%s", i, strings.Join(plan, "\n"), q)
				break
			}
		}
		t.Logf("claim query %d:\n%s", i, strings.Join(plan, "\n"))
	}
}

// TestBudgetChangesKeepKeysCached: the budget ledger and the key cache
// have their own counters. A charge committed on another handle (the
// content engine's, the CLI's) is seen by the next budget read and leaves
// the keys' counter, so the key cache stays warm; a tier change is seen by
// the next key read.
func TestBudgetChangesKeepKeysCached(t *testing.T) {
	server, engine, path, k := keyOnTwoHandles(t)
	srv := cached(server) // the server reads through its caches
	r := raw(t, path)
	counters := func() (keys, budgets int64) {
		t.Helper()
		must(t, r.QueryRow(`SELECT n, budgets FROM cache_epoch`).Scan(&keys, &budgets))
		return keys, budgets
	}
	for i := range 50 {
		if p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || p.Account.Tier != "starter" {
			t.Fatalf("principal %+v, %v", p, err)
		}
		keys, budgets := counters()
		must(t, engine.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_1", "2025-06", 7, 0) }))
		if b, _, err := srv.Budget(ctx, "acct_1", "2025-06"); err != nil || b.Spent != int64(7*(i+1)) {
			t.Fatalf("charge %d: budget %+v, %v", i, b, err)
		}
		if k2, b2 := counters(); k2 != keys || b2 == budgets {
			t.Fatalf("charge %d: counters %d/%d -> %d/%d; want the keys' unchanged, the budgets' moved", i, keys, budgets, k2, b2)
		}
	}
	must(t, engine.SetTier(ctx, "acct_1", "enterprise"))
	if p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash); err != nil || p.Account.Tier != "enterprise" {
		t.Fatalf("after the tier change: %+v, %v", p, err)
	}
}
