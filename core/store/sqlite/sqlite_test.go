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
	"sort"
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

func open(t *testing.T, path string) *sqlite.DB {
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

func must(t *testing.T, err error) {
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
		rows, err := r.Query(`SELECT version, applied_at FROM schema_migrations ORDER BY version`)
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
		t.Fatalf("schema_migrations %v, want %d versions (%v)", applied, len(files), files)
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
			t.Fatalf("reopening changed schema_migrations: %v -> %v", applied, again)
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

func TestAccountsAndClients(t *testing.T) {
	db, _ := newDB(t)
	a := account(t, db, "acct_b", store.AccountAgency)
	account(t, db, "acct_a", store.AccountStandard)

	got, err := db.Account(ctx, "acct_b")
	must(t, err)
	if !reflect.DeepEqual(got, a) {
		t.Errorf("Account = %+v, want %+v", got, a)
	}
	if _, err := db.Account(ctx, "acct_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown account: %v, want ErrNotFound", err)
	}
	if err := db.CreateAccount(ctx, a); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate account: %v, want ErrConflict", err)
	}
	if err := db.CreateAccount(ctx, store.Account{ID: "acct_x", Name: "x", Tier: "starter", Type: "premium", CreatedAt: t0}); err == nil {
		t.Error("account of an unknown type was stored")
	}
	as, err := db.ListAccounts(ctx)
	must(t, err)
	if len(as) != 2 || as[0].ID != "acct_a" || as[1].ID != "acct_b" {
		t.Errorf("ListAccounts = %+v, want acct_a, acct_b (same time: by id)", as)
	}

	must(t, db.SetTier(ctx, "acct_b", "enterprise"))
	if got, _ := db.Account(ctx, "acct_b"); got.Tier != "enterprise" {
		t.Errorf("tier after SetTier = %q", got.Tier)
	}
	if err := db.SetTier(ctx, "acct_none", "starter"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTier of an unknown account: %v", err)
	}

	c1 := store.Client{ID: "cli_1", AccountID: "acct_b", Name: "One", CreatedAt: t0}
	c2 := store.Client{ID: "cli_2", AccountID: "acct_b", Name: "Two", CreatedAt: t0.Add(time.Second)}
	must(t, db.CreateClient(ctx, c2))
	must(t, db.CreateClient(ctx, c1))
	if err := db.CreateClient(ctx, c1); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate client: %v", err)
	}
	if err := db.CreateClient(ctx, store.Client{ID: "cli_3", AccountID: "acct_none", Name: "x", CreatedAt: t0}); err == nil {
		t.Error("client of an unknown account stored (foreign keys off?)")
	}
	if got, err := db.Client(ctx, "acct_b", "cli_1"); err != nil || !reflect.DeepEqual(got, c1) {
		t.Errorf("Client = %+v, %v; want %+v", got, err, c1)
	}
	if _, err := db.Client(ctx, "acct_a", "cli_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's client: %v, want ErrNotFound", err)
	}
	cs, err := db.ListClients(ctx, "acct_b")
	must(t, err)
	if len(cs) != 2 || cs[0].ID != "cli_1" || cs[1].ID != "cli_2" {
		t.Errorf("ListClients = %+v, want oldest first", cs)
	}
	if cs, _ := db.ListClients(ctx, "acct_a"); len(cs) != 0 {
		t.Errorf("ListClients of another account = %+v", cs)
	}
}

func newKey(id, account, client string, created time.Time) store.Key {
	return store.Key{ID: id, AccountID: account, ClientID: client, Name: "name " + id,
		KeyHash: []byte("kh-" + id), SecretHash: []byte("sh-" + id), Hint: "svc_abcd…wxyz",
		Scopes: []string{"budget:read", "content:read"}, CreatedAt: created}
}

func TestKeys(t *testing.T) {
	db, _ := newDB(t)
	acct := account(t, db, "acct_1", store.AccountAgency)
	account(t, db, "acct_2", store.AccountStandard)
	must(t, db.CreateClient(ctx, store.Client{ID: "cli_1", AccountID: "acct_1", Name: "c", CreatedAt: t0}))

	k1 := newKey("key_1", "acct_1", "", t0)
	k1.ExpiresAt = t0.Add(48 * time.Hour)
	k2 := newKey("key_2", "acct_1", "cli_1", t0.Add(time.Second))
	k2.Scopes = nil
	k3 := newKey("key_3", "acct_2", "", t0)
	for _, k := range []store.Key{k1, k2, k3} {
		must(t, db.CreateKey(ctx, k))
	}
	dup := newKey("key_4", "acct_1", "", t0)
	dup.KeyHash = k1.KeyHash
	if err := db.CreateKey(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second key with the same hash: %v, want ErrConflict", err)
	}
	if err := db.CreateKey(ctx, newKey("key_1", "acct_1", "", t0)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate key id: %v", err)
	}
	if err := db.CreateKey(ctx, newKey("key_5", "acct_1", "cli_none", t0)); err == nil {
		t.Error("key of an unknown client stored")
	}

	got, err := db.Key(ctx, "key_1")
	must(t, err)
	if !reflect.DeepEqual(got, k1) {
		t.Errorf("Key round trip:\n got  %+v\n want %+v", got, k1)
	}
	if got, _ := db.Key(ctx, "key_2"); got.ClientID != "cli_1" || len(got.Scopes) != 0 || !got.ExpiresAt.IsZero() {
		t.Errorf("client key = %+v", got)
	}
	if _, err := db.Key(ctx, "key_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown key: %v", err)
	}
	ks, err := db.ListKeys(ctx, "acct_1")
	must(t, err)
	if len(ks) != 2 || ks[0].ID != "key_1" || ks[1].ID != "key_2" {
		t.Errorf("ListKeys = %v", ks)
	}

	// The principal holds what authentication reads of the key.
	p, err := db.PrincipalByKeyHash(ctx, k1.KeyHash)
	must(t, err)
	auth := k1
	auth.Name, auth.KeyHash, auth.Hint, auth.CreatedAt = "", nil, "", time.Time{}
	if !reflect.DeepEqual(p.Key, auth) || !reflect.DeepEqual(p.Account, acct) {
		t.Errorf("PrincipalByKeyHash:\n got  %+v\n want %+v / %+v", p, auth, acct)
	}
	if p, err := db.PrincipalByKeyHash(ctx, k3.KeyHash); err != nil || p.Account.ID != "acct_2" || p.Account.Type != store.AccountStandard {
		t.Errorf("PrincipalByKeyHash(k3) = %+v, %v", p, err)
	}
	for _, h := range [][]byte{[]byte("kh-none"), nil, {}} {
		if _, err := db.PrincipalByKeyHash(ctx, h); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PrincipalByKeyHash(%q): %v, want ErrNotFound", h, err)
		}
	}

	// Revoking keeps the first time.
	first := t0.Add(time.Hour)
	k, err := db.RevokeKey(ctx, "key_1", first)
	must(t, err)
	if !k.RevokedAt.Equal(first) {
		t.Errorf("RevokedAt = %v, want %v", k.RevokedAt, first)
	}
	k, err = db.RevokeKey(ctx, "key_1", first.Add(time.Hour))
	must(t, err)
	if !k.RevokedAt.Equal(first) {
		t.Errorf("second revocation moved RevokedAt to %v", k.RevokedAt)
	}
	if p, _ := db.PrincipalByKeyHash(ctx, k1.KeyHash); !p.Key.RevokedAt.Equal(first) {
		t.Errorf("PrincipalByKeyHash after revocation: RevokedAt %v (a revoked key is still found, with its time)", p.Key.RevokedAt)
	}
	if _, err := db.RevokeKey(ctx, "key_none", first); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking an unknown key: %v", err)
	}
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

func TestContentRequestRoundTrip(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountAgency)
	account(t, db, "acct_2", store.AccountStandard)
	full := store.ContentRequest{
		ID: "cr_full", AccountID: "acct_1", ClientID: "cli_1", KeyID: "key_1", Type: "analyze", Status: "queued",
		Domain: "xn--bcher-kva.de", URL: "https://xn--bcher-kva.de/a?b=c", Content: "Grüße, \"quoted\"\n\x00 nul",
		TargetQueries: []string{"best books", "bücher kaufen"}, Metadata: map[string]string{"campaign": "q3", "ü": "ö"},
		Budget: 1_234_567_890, Spent: 0, BudgetMonth: "2025-06", CreatedAt: t0, UpdatedAt: t0,
	}
	bare := cr("cr_bare", "acct_1", "", t0.Add(time.Second))
	insert(t, db, full, bare)

	got, err := db.ContentRequest(ctx, "acct_1", "cr_full")
	must(t, err)
	if !reflect.DeepEqual(got, full) {
		t.Errorf("round trip:\n got  %+v\n want %+v", got, full)
	}
	got, err = db.ContentRequest(ctx, "acct_1", "cr_bare")
	must(t, err)
	if got.TargetQueries == nil || len(got.TargetQueries) != 0 || got.Metadata == nil || len(got.Metadata) != 0 || got.Result != nil {
		t.Errorf("bare request: queries %#v metadata %#v result %q", got.TargetQueries, got.Metadata, got.Result)
	}
	if _, err := db.ContentRequest(ctx, "acct_2", "cr_full"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another account's request: %v, want ErrNotFound", err)
	}
	err = db.Update(ctx, func(tx store.Tx) error { return tx.InsertContentRequest(full) })
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate insert: %v, want ErrConflict", err)
	}

	// Update every mutable field, reading inside the transaction.
	upd := full
	upd.Status, upd.Spent, upd.FailureReason = "completed", 1_000_000, ""
	upd.Result = []byte(`{"score":72,"notes":["a","b"]}`)
	upd.UpdatedAt, upd.StartedAt, upd.EndedAt = t0.Add(time.Minute), t0.Add(10*time.Second), t0.Add(time.Minute)
	must(t, db.Update(ctx, func(tx store.Tx) error {
		in, err := tx.ContentRequest("acct_1", "cr_full")
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(in, full) {
			return fmt.Errorf("in-transaction read %+v", in)
		}
		return tx.UpdateContentRequest(upd, 0)
	}))
	got, _ = db.ContentRequest(ctx, "acct_1", "cr_full")
	if !reflect.DeepEqual(got, upd) {
		t.Errorf("after update:\n got  %+v\n want %+v", got, upd)
	}
	err = db.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(cr("cr_none", "acct_1", "", t0), 0) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update of an unknown request: %v", err)
	}
	err = db.Update(ctx, func(tx store.Tx) error {
		_, err := tx.ContentRequest("acct_2", "cr_full")
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("in-transaction read of another account's request: %v", err)
	}
}

// TestConstraints: the schema refuses what no code path may write, and a
// failed transaction leaves nothing behind.
func TestConstraints(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*store.ContentRequest)
	}{
		{"spent above budget", func(c *store.ContentRequest) { c.Spent = c.Budget + 1 }},
		{"negative spent", func(c *store.ContentRequest) { c.Spent = -1 }},
		{"zero budget", func(c *store.ContentRequest) { c.Budget = 0 }},
		{"negative budget", func(c *store.ContentRequest) { c.Budget = -5 }},
		{"unknown status", func(c *store.ContentRequest) { c.Status = "paused" }},
		{"unknown account", func(c *store.ContentRequest) { c.AccountID = "acct_none" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := newDB(t)
			account(t, db, "acct_1", store.AccountStandard)
			ok := cr("cr_ok", "acct_1", "", t0)
			bad := cr("cr_bad", "acct_1", "", t0)
			tc.mod(&bad)
			err := db.Update(ctx, func(tx store.Tx) error {
				if err := tx.InsertContentRequest(ok); err != nil {
					return err
				}
				return tx.InsertContentRequest(bad)
			})
			if err == nil {
				t.Fatal("insert succeeded")
			}
			if _, err := db.ContentRequest(ctx, "acct_1", "cr_ok"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the failed transaction left cr_ok behind: %v", err)
			}
			// The same rule holds on update.
			if bad.AccountID == "acct_1" {
				insert(t, db, ok)
				before, err := db.ContentRequest(ctx, "acct_1", "cr_ok")
				must(t, err)
				bad.ID = "cr_ok"
				if err := db.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(bad, 0) }); err == nil {
					t.Fatal("update succeeded")
				}
				if got, _ := db.ContentRequest(ctx, "acct_1", "cr_ok"); !reflect.DeepEqual(got, before) {
					t.Fatalf("failed update changed the row: %+v", got)
				}
			}
		})
	}
}

func TestBudgetLedger(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	account(t, db, "acct_2", store.AccountStandard)
	add := func(account, month string, spent, reserved int64) error {
		return db.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth(account, month, spent, reserved) })
	}
	read := func(account, month string) store.BudgetMonth {
		var b store.BudgetMonth
		must(t, db.Update(ctx, func(tx store.Tx) (err error) { b, err = tx.BudgetMonth(account, month); return }))
		return b
	}
	if b := read("acct_1", "2025-06"); b != (store.BudgetMonth{}) {
		t.Fatalf("untouched month = %+v, want zero", b)
	}
	steps := []struct {
		spent, reserved int64
		want            store.BudgetMonth
	}{
		{0, 500, store.BudgetMonth{Spent: 0, Reserved: 500}},
		{0, 300, store.BudgetMonth{Spent: 0, Reserved: 800}},
		{200, -200, store.BudgetMonth{Spent: 200, Reserved: 600}},
		{0, -600, store.BudgetMonth{Spent: 200, Reserved: 0}},
		{50, 0, store.BudgetMonth{Spent: 250, Reserved: 0}},
	}
	for i, s := range steps {
		must(t, add("acct_1", "2025-06", s.spent, s.reserved))
		if b := read("acct_1", "2025-06"); b != s.want {
			t.Fatalf("step %d: %+v, want %+v", i, b, s.want)
		}
		if b, _, err := db.Budget(ctx, "acct_1", "2025-06"); err != nil || b != s.want {
			t.Fatalf("step %d: Budget() = %+v, %v; want %+v", i, b, err, s.want)
		}
	}
	// Months and accounts are separate.
	if b := read("acct_1", "2025-07"); b != (store.BudgetMonth{}) {
		t.Errorf("another month: %+v", b)
	}
	if b := read("acct_2", "2025-06"); b != (store.BudgetMonth{}) {
		t.Errorf("another account: %+v", b)
	}
	// The ledger never goes negative: the CHECK refuses it and nothing changes.
	if err := add("acct_1", "2025-06", 0, -1); err == nil {
		t.Error("reserved went below zero")
	}
	if err := add("acct_1", "2025-06", -251, 0); err == nil {
		t.Error("spent went below zero")
	}
	if b := read("acct_1", "2025-06"); b != (store.BudgetMonth{Spent: 250, Reserved: 0}) {
		t.Errorf("after refused changes: %+v", b)
	}

	// Budget() counts the active requests with the ledger.
	a := cr("cr_a", "acct_1", "", t0)
	b := cr("cr_b", "acct_1", "", t0)
	b.Status = "processing"
	c := cr("cr_c", "acct_1", "", t0)
	c.Status = "completed"
	d := cr("cr_d", "acct_2", "", t0)
	insert(t, db, a, b, c, d)
	var inTx int
	must(t, db.Update(ctx, func(tx store.Tx) (err error) { inTx, err = tx.ActiveContentRequests("acct_1"); return }))
	if _, active, err := db.Budget(ctx, "acct_1", "2025-06"); err != nil || active != 2 || inTx != 2 {
		t.Errorf("active = %d (in tx %d), %v; want 2 (queued + processing)", active, inTx, err)
	}
}

func TestIdempotencyRecords(t *testing.T) {
	db, _ := newDB(t)
	rec := store.Idempotency{Scope: "acct_1/", Key: "k-1", RequestHash: []byte{1, 2, 3}, Status: 201, Body: []byte(`{"id":"cr_1"}`), CreatedAt: t0}
	get := func(scope, key string, notBefore time.Time) (store.Idempotency, error) {
		var r store.Idempotency
		err := db.Update(ctx, func(tx store.Tx) (err error) { r, err = tx.Idempotency(scope, key, notBefore); return })
		return r, err
	}
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.PutIdempotency(rec) }))
	for _, tc := range []struct {
		name      string
		scope     string
		key       string
		notBefore time.Time
		found     bool
	}{
		{"fresh", "acct_1/", "k-1", t0.Add(-24 * time.Hour), true},
		{"exactly at the bound", "acct_1/", "k-1", t0, true},
		{"expired", "acct_1/", "k-1", t0.Add(time.Nanosecond), false},
		{"another scope", "acct_1/cli_1", "k-1", t0.Add(-time.Hour), false},
		{"another key", "acct_1/", "k-2", t0.Add(-time.Hour), false},
		{"key is case-sensitive", "acct_1/", "K-1", t0.Add(-time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := get(tc.scope, tc.key, tc.notBefore)
			if !tc.found {
				if !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("got %+v, %v; want ErrNotFound", got, err)
				}
				return
			}
			must(t, err)
			if !reflect.DeepEqual(got, rec) {
				t.Fatalf("got %+v, want %+v", got, rec)
			}
		})
	}
	// Putting again replaces the record (an expired key is reused).
	rec2 := rec
	rec2.RequestHash, rec2.Body, rec2.CreatedAt = []byte{9}, []byte(`{}`), t0.Add(25*time.Hour)
	must(t, db.Update(ctx, func(tx store.Tx) error { return tx.PutIdempotency(rec2) }))
	if got, err := get("acct_1/", "k-1", t0.Add(time.Hour)); err != nil || !reflect.DeepEqual(got, rec2) {
		t.Fatalf("after replacing: %+v, %v", got, err)
	}
	must(t, db.Update(ctx, func(tx store.Tx) error {
		return tx.PutIdempotency(store.Idempotency{Scope: "s", Key: "old", RequestHash: []byte{1}, Status: 200, Body: []byte("x"), CreatedAt: t0})
	}))
	n, err := db.DeleteIdempotencyBefore(ctx, t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("DeleteIdempotencyBefore = %d, %v; want 1", n, err)
	}
	if _, err := get("s", "old", time.Time{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pruned record still found: %v", err)
	}
	if _, err := get("acct_1/", "k-1", time.Time{}); err != nil {
		t.Errorf("newer record pruned: %v", err)
	}
}

func TestReadings(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountAgency)
	account(t, db, "acct_2", store.AccountStandard)
	add := func(r store.Reading) store.Reading {
		t.Helper()
		out, err := db.AddReading(ctx, r)
		must(t, err)
		if out.ID == 0 {
			t.Fatal("no id assigned")
		}
		return out
	}
	base := store.Reading{AccountID: "acct_1", Domain: "example.com", VisibilityScore: 50, Sentiment: "neutral", SentimentScore: 0, Source: "test"}
	r := func(mod func(*store.Reading)) store.Reading { x := base; mod(&x); return x }
	add(r(func(x *store.Reading) { x.MeasuredAt = t0 }))
	newest := add(r(func(x *store.Reading) {
		x.MeasuredAt = t0.Add(time.Hour)
		x.VisibilityScore = 72
		x.Sentiment = "positive"
		x.SentimentScore = 0.5
	}))
	add(r(func(x *store.Reading) { x.MeasuredAt = t0.Add(30 * time.Minute) })) // older, added later
	cli1 := add(r(func(x *store.Reading) { x.ClientID = "cli_1"; x.MeasuredAt = t0; x.VisibilityScore = 10 }))
	tie1 := add(r(func(x *store.Reading) { x.Domain = "tie.com"; x.MeasuredAt = t0; x.VisibilityScore = 1 }))
	tie2 := add(r(func(x *store.Reading) { x.Domain = "tie.com"; x.MeasuredAt = t0; x.VisibilityScore = 2 }))
	add(r(func(x *store.Reading) {
		x.AccountID = "acct_2"
		x.MeasuredAt = t0.Add(2 * time.Hour)
		x.VisibilityScore = 99
	}))
	_ = tie1

	for _, tc := range []struct {
		name string
		f    store.ReadingFilter
		want store.Reading
	}{
		{"newest of the account", store.ReadingFilter{AccountID: "acct_1", Domain: "example.com"}, newest},
		{"one client", store.ReadingFilter{AccountID: "acct_1", ClientID: "cli_1", Domain: "example.com"}, cli1},
		{"same time: the last added", store.ReadingFilter{AccountID: "acct_1", Domain: "tie.com"}, tie2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.LatestReading(ctx, tc.f)
			must(t, err)
			tc.want.MeasuredAt = tc.want.MeasuredAt.UTC()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, f := range []store.ReadingFilter{
		{AccountID: "acct_1", Domain: "other.com"},
		{AccountID: "acct_1", ClientID: "cli_2", Domain: "example.com"},
		{AccountID: "acct_3", Domain: "example.com"},
	} {
		if _, err := db.LatestReading(ctx, f); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LatestReading(%+v): %v, want ErrNotFound", f, err)
		}
	}
	for _, bad := range []store.Reading{
		r(func(x *store.Reading) { x.VisibilityScore = 101 }),
		r(func(x *store.Reading) { x.VisibilityScore = -1 }),
		r(func(x *store.Reading) { x.SentimentScore = 1.5 }),
		r(func(x *store.Reading) { x.AccountID = "acct_none" }),
	} {
		if _, err := db.AddReading(ctx, bad); err == nil {
			t.Errorf("AddReading(%+v) succeeded", bad)
		}
	}
}

func TestSaveCountsAndLoadWindows(t *testing.T) {
	db, path := newDB(t)
	r := raw(t, path)
	minute := t0.Truncate(time.Minute)
	day := t0.Truncate(24 * time.Hour)
	save := func(ws ...store.Window) { must(t, db.SaveCounts(ctx, ws, nil)) }
	load := func() map[string]store.Window {
		ws, err := db.LoadWindows(ctx, day)
		must(t, err)
		out := map[string]store.Window{}
		for _, w := range ws {
			out[w.AccountID+"/"+w.Window] = w
		}
		return out
	}
	save(store.Window{AccountID: "a", Window: "minute", Start: minute, Count: 5},
		store.Window{AccountID: "a", Window: "day", Start: day, Count: 50},
		store.Window{AccountID: "b", Window: "day", Start: day.Add(-24 * time.Hour), Count: 9})
	got := load()
	if len(got) != 2 || got["a/minute"].Count != 5 || !got["a/minute"].Start.Equal(minute) || got["a/day"].Count != 50 {
		t.Fatalf("LoadWindows = %+v (yesterday's window must be left out)", got)
	}
	// Counts are absolute: a lower count for the same window does not win, a higher one does.
	save(store.Window{AccountID: "a", Window: "minute", Start: minute, Count: 3})
	if got := load(); got["a/minute"].Count != 5 {
		t.Errorf("lower count overwrote: %d", got["a/minute"].Count)
	}
	save(store.Window{AccountID: "a", Window: "minute", Start: minute, Count: 8})
	if got := load(); got["a/minute"].Count != 8 {
		t.Errorf("higher count not kept: %d", got["a/minute"].Count)
	}
	// A newer window replaces an older one, even with a lower count; an older one never replaces.
	save(store.Window{AccountID: "a", Window: "minute", Start: minute.Add(time.Minute), Count: 1})
	save(store.Window{AccountID: "a", Window: "minute", Start: minute, Count: 100})
	if got := load(); got["a/minute"].Count != 1 || !got["a/minute"].Start.Equal(minute.Add(time.Minute)) {
		t.Errorf("window after a newer one: %+v", got["a/minute"])
	}

	// Usage adds up per key and hour.
	hour := t0.Truncate(time.Hour)
	must(t, db.SaveCounts(ctx, nil, []store.KeyUsage{{KeyID: "k", AccountID: "a", Hour: hour, Count: 3, LastUsed: t0}}))
	must(t, db.SaveCounts(ctx, nil, []store.KeyUsage{{KeyID: "k", AccountID: "a", Hour: hour, Count: 4, LastUsed: t0},
		{KeyID: "k", AccountID: "a", Hour: hour.Add(time.Hour), Count: 1, LastUsed: t0}}))
	var n, rows int64
	must(t, r.QueryRow(`SELECT count FROM usage_hourly WHERE key_id = 'k' AND hour = ?`, hour.UnixNano()).Scan(&n))
	must(t, r.QueryRow(`SELECT count(*) FROM usage_hourly WHERE key_id = 'k'`).Scan(&rows))
	if n != 7 || rows != 2 {
		t.Errorf("usage_hourly: %d in the hour over %d rows, want 7 over 2", n, rows)
	}
}

// listAll walks every page of a filter.
func listAll(t *testing.T, db *sqlite.DB, f store.ContentFilter) ([]store.ContentRequest, int) {
	t.Helper()
	var out []store.ContentRequest
	pages := 0
	for {
		page, next, err := db.ListContentRequests(ctx, f)
		must(t, err)
		pages++
		if len(page) > f.Limit {
			t.Fatalf("page of %d items, limit %d", len(page), f.Limit)
		}
		if next != "" && len(page) != f.Limit {
			t.Fatalf("short page (%d of %d) with a next cursor", len(page), f.Limit)
		}
		for _, c := range page {
			if c.Content != "" {
				t.Fatalf("list item %s carries its content", c.ID)
			}
		}
		out = append(out, page...)
		if next == "" {
			return out, pages
		}
		if pages > 10_000 {
			t.Fatal("pagination does not end")
		}
		f.Cursor = next
	}
}

// TestListContentRequestsPagination walks many pages under each filter:
// newest first, nothing twice, nothing missing, also when many requests
// share a creation time.
func TestListContentRequestsPagination(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountAgency)
	account(t, db, "acct_2", store.AccountStandard)
	statuses := []string{"queued", "processing", "completed", "failed", "cancelled"}
	clients := []string{"", "cli_1", "cli_2"}
	domainsList := []string{"example.com", "example.org", "shop.example.com"}
	var all []store.ContentRequest
	for i := range 307 {
		// Groups of 4 share a creation time to the nanosecond.
		c := cr(fmt.Sprintf("cr_%04d_%c", (i*7919)%10000, 'a'+rune(i%26)), "acct_1", clients[i%3], t0.Add(time.Duration(i/4)*time.Millisecond))
		c.Status = statuses[i%5]
		c.Domain = domainsList[(i/3)%3]
		c.Content = "body"
		all = append(all, c)
	}
	// Insert in a shuffled order: the order of the list is not insertion order.
	shuffled := slices.Clone(all)
	sort.Slice(shuffled, func(i, j int) bool { return shuffled[i].ID > shuffled[j].ID })
	insert(t, db, shuffled...)
	insert(t, db, cr("cr_other_account", "acct_2", "", t0))

	sort.Slice(all, func(i, j int) bool {
		if !all[i].CreatedAt.Equal(all[j].CreatedAt) {
			return all[i].CreatedAt.After(all[j].CreatedAt)
		}
		return all[i].ID > all[j].ID
	})
	filters := []store.ContentFilter{
		{},
		{Status: "queued"},
		{Status: "cancelled"},
		{ClientID: "cli_1"},
		{Domain: "example.org"},
		{ClientID: "cli_2", Status: "failed"},
		{ClientID: "cli_1", Status: "completed", Domain: "shop.example.com"},
		{Domain: "nothing.example"},
	}
	for _, f := range filters {
		var want []string
		for _, c := range all {
			if (f.ClientID == "" || c.ClientID == f.ClientID) && (f.Status == "" || c.Status == f.Status) && (f.Domain == "" || c.Domain == f.Domain) {
				want = append(want, c.ID)
			}
		}
		for _, limit := range []int{1, 3, 7, 20, 100} {
			t.Run(fmt.Sprintf("client=%s,status=%s,domain=%s,limit=%d", f.ClientID, f.Status, f.Domain, limit), func(t *testing.T) {
				f := f
				f.AccountID, f.Limit = "acct_1", limit
				got, pages := listAll(t, db, f)
				ids := make([]string, len(got))
				for i, c := range got {
					ids[i] = c.ID
				}
				if !slices.Equal(ids, want) {
					t.Fatalf("walked %d pages: got %d items, want %d\n got  %v\n want %v", pages, len(ids), len(want), ids, want)
				}
				if wantPages := max(1, (len(want)+limit-1)/limit); pages != wantPages {
					t.Fatalf("%d pages for %d items at %d a page", pages, len(want), limit)
				}
			})
		}
	}
	// A page of exactly the remaining items has no next cursor.
	page, next, err := db.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_2", Limit: 1})
	if err != nil || len(page) != 1 || next != "" {
		t.Errorf("last full page: %d items, next %q, %v", len(page), next, err)
	}
}

func TestListContentRequestsMalformedCursor(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	insert(t, db, cr("cr_1", "acct_1", "", t0))
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{
		"!!!not base64!!!",
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

// TestTwoHandlesSeeEachOther: the CLI and the server open the same file;
// each sees the other's commits on its next read, cached reads included.
func TestTwoHandlesSeeEachOther(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	server := open(t, path)
	srv := cached(server) // the server reads through its caches
	cli := open(t, path)

	account(t, cli, "acct_1", store.AccountStandard)
	k := newKey("key_1", "acct_1", "", t0)
	must(t, cli.CreateKey(ctx, k))

	// The server finds the key, and caches it.
	for range 3 {
		p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash)
		if err != nil || !p.Key.RevokedAt.IsZero() || p.Account.Tier != "starter" {
			t.Fatalf("server read: %+v, %v", p, err)
		}
	}
	b, _, err := srv.Budget(ctx, "acct_1", "2025-06")
	if err != nil || b != (store.BudgetMonth{}) {
		t.Fatalf("server budget: %+v, %v", b, err)
	}

	// The CLI revokes: the server's next read sees it, with or without AsOf.
	revokedAt := t0.Add(time.Minute)
	if _, err := cli.RevokeKey(ctx, "key_1", revokedAt); err != nil {
		t.Fatal(err)
	}
	p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash)
	if err != nil || !p.Key.RevokedAt.Equal(revokedAt) {
		t.Fatalf("server after CLI revocation: RevokedAt %v, %v", p.Key.RevokedAt, err)
	}
	must(t, cli.SetTier(ctx, "acct_1", "enterprise"))
	p, err = srv.PrincipalByKeyHash(cache.AsOf(ctx, time.Now()), k.KeyHash)
	if err != nil || p.Account.Tier != "enterprise" {
		t.Fatalf("server after CLI set-tier (AsOf now): tier %q, %v", p.Account.Tier, err)
	}

	// Budget and active counts move with the other handle's writes.
	must(t, cli.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_1", "2025-06", 1, 2) }))
	insert(t, cli, cr("cr_1", "acct_1", "", t0))
	b, active, err := srv.Budget(cache.AsOf(ctx, time.Now()), "acct_1", "2025-06")
	if err != nil || b != (store.BudgetMonth{Spent: 1, Reserved: 2}) || active != 1 {
		t.Fatalf("server budget after CLI writes: %+v active %d, %v", b, active, err)
	}

	// And the other way round.
	k2 := newKey("key_2", "acct_1", "", t0)
	must(t, server.CreateKey(ctx, k2))
	if _, err := cli.PrincipalByKeyHash(ctx, k2.KeyHash); err != nil {
		t.Fatalf("CLI does not see the server's key: %v", err)
	}
	if _, err := server.RevokeKey(ctx, "key_2", revokedAt); err != nil {
		t.Fatal(err)
	}
	if p, _ := cli.PrincipalByKeyHash(ctx, k2.KeyHash); p.Key.RevokedAt.IsZero() {
		t.Fatal("CLI does not see the server's revocation")
	}
}

// TestConcurrentHandles: writers on two handles and readers on both, at
// once: every write lands (busy handling works), run with -race.
func TestConcurrentHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	a := open(t, path)
	b := open(t, path)
	account(t, a, "acct_1", store.AccountStandard)
	var wg sync.WaitGroup
	for i, db := range []*sqlite.DB{a, b, a, b} {
		wg.Go(func() {
			for j := range 25 {
				err := db.Update(ctx, func(tx store.Tx) error {
					if err := tx.InsertContentRequest(cr(fmt.Sprintf("cr_%d_%d", i, j), "acct_1", "", t0)); err != nil {
						return err
					}
					return tx.AddToBudgetMonth("acct_1", "2025-06", 0, 1)
				})
				if err != nil {
					t.Error(err)
					return
				}
				if _, _, err := db.Budget(ctx, "acct_1", "2025-06"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, db := range []*sqlite.DB{a, b} {
		bm, active, err := db.Budget(ctx, "acct_1", "2025-06")
		if err != nil || bm.Reserved != 100 || active != 100 {
			t.Errorf("Budget = %+v, %d, %v; want 100 reserved, 100 active", bm, active, err)
		}
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

// TestListContentRequestsNonPositiveLimit: a filter without a positive
// Limit (the zero ContentFilter) gets the default page of 20 instead of a
// panic (it used to read out[-1] / slice out[:Limit]; fixed in f781557).
func TestListContentRequestsNonPositiveLimit(t *testing.T) {
	db, _ := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	var crs []store.ContentRequest
	for i := range 25 {
		crs = append(crs, cr(fmt.Sprintf("cr_%02d", i), "acct_1", "", t0.Add(time.Duration(i)*time.Second)))
	}
	insert(t, db, crs...)
	for _, limit := range []int{0, -1, -5} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("ListContentRequests(Limit: %d) panicked: %v", limit, v)
				}
			}()
			page, next, err := db.ListContentRequests(ctx, store.ContentFilter{AccountID: "acct_1", Limit: limit})
			if err != nil || len(page) != 20 || next == "" || page[0].ID != "cr_24" {
				t.Fatalf("Limit %d: %d items, next %q, %v; want the default page of 20, newest first", limit, len(page), next, err)
			}
		}()
	}
}

// TestCacheSeesEveryCommit: cached reads are validated by the commit
// counter of the shared WAL index, so each of many alternating changes on
// another handle is seen by the very next read, however soon.
func TestCacheSeesEveryCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	server := open(t, path)
	srv := cached(server) // the server reads through its caches
	cli := open(t, path)
	account(t, cli, "acct_1", store.AccountStandard)
	k := newKey("key_1", "acct_1", "", t0)
	must(t, cli.CreateKey(ctx, k))
	tiers := []string{"starter", "professional", "enterprise"}
	for i := range 300 {
		want := tiers[i%3]
		must(t, cli.SetTier(ctx, "acct_1", want))
		for range 2 { // a miss, then a hit of the cache
			p, err := srv.PrincipalByKeyHash(ctx, k.KeyHash)
			if err != nil || p.Account.Tier != want {
				t.Fatalf("change %d: tier %q, want %q (%v)", i, p.Account.Tier, want, err)
			}
		}
		// Writes the cache does not read leave it warm, and are harmless.
		must(t, cli.SaveCounts(ctx, []store.Window{{AccountID: "acct_1", Window: "minute", Start: t0, Count: int64(i + 1)}}, nil))
	}
}

// TestBudgetLedgerNegativeDeltaOnNewMonth: on an existing month a delta
// that would take spent or reserved below zero is refused by the CHECK
// (TestBudgetLedger), but AddToBudgetMonth inserts max(delta, 0) for a
// month it has not seen, so the same delta on an untouched month succeeds
// and writes a zero row: the release of money never reserved passes
// silently. It must be refused the same way.
func TestBudgetLedgerNegativeDeltaOnNewMonth(t *testing.T) {
	db, path := newDB(t)
	account(t, db, "acct_1", store.AccountStandard)
	r := raw(t, path)
	for i, d := range []struct{ spent, reserved int64 }{{0, -5}, {-5, 0}, {-1, 10}} {
		month := fmt.Sprintf("2025-%02d", i+7)
		err := db.Update(ctx, func(tx store.Tx) error { return tx.AddToBudgetMonth("acct_1", month, d.spent, d.reserved) })
		if err == nil {
			var n int
			r.QueryRow(`SELECT count(*) FROM budget_months WHERE month = ?`, month).Scan(&n)
			t.Errorf("AddToBudgetMonth(spent %d, reserved %d) on an untouched month succeeded (%d rows)", d.spent, d.reserved, n)
		}
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
	must(t, raw(t, path).QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&versions))
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
	path := filepath.Join(t.TempDir(), "aivis.db")
	server := open(t, path)
	srv := cached(server) // the server reads through its caches
	engine := open(t, path)
	account(t, engine, "acct_1", store.AccountStandard)
	k := newKey("key_1", "acct_1", "", t0)
	must(t, engine.CreateKey(ctx, k))
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
