package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/schema/schematest"
	"github.com/aivis/aivis/core/store/sqlite"
)

// legacyMigrate applies the migrations as aivis's own runner did before
// goose, as the previous aivis does: each file whose version is not in
// schema_migrations, its statements (its up section: the runner knew no
// other) in a transaction, its version recorded there.
func legacyMigrate(t *testing.T, path string) {
	t.Helper()
	db := raw(t, path)
	_, err := db.Exec(`PRAGMA journal_mode = WAL; CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`)
	must(t, err)
	for _, f := range migrationFiles(t) {
		body, err := os.ReadFile(filepath.Join("migrations", f))
		must(t, err)
		v, err := strconv.Atoi(strings.SplitN(f, "_", 2)[0])
		must(t, err)
		var n int
		must(t, db.QueryRow(`SELECT count(*) FROM schema_migrations WHERE version = ?`, v).Scan(&n))
		if n > 0 {
			continue
		}
		up, _, _ := strings.Cut(string(body), "-- +goose Down")
		tx, err := db.Begin()
		must(t, err)
		if _, err := tx.Exec(up); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		_, err = tx.Exec(`INSERT INTO schema_migrations VALUES (?, ?)`, v, 1700000000+v)
		must(t, err)
		must(t, tx.Commit())
	}
	must(t, db.Close())
}

// schemaOf is the file's schema, every table, index and trigger's SQL by
// name, but for the tables of the migrations' bookkeeping.
func schemaOf(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT type || ' ' || name, coalesce(sql, '') FROM sqlite_master
		WHERE tbl_name NOT IN ('goose_db_version', 'schema_migrations', 'sqlite_sequence')`)
	must(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, s string
		must(t, rows.Scan(&n, &s))
		out[n] = s
	}
	must(t, rows.Err())
	return out
}

func gooseVersions(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	rows, err := db.Query(`SELECT version_id FROM goose_db_version WHERE version_id > 0 ORDER BY id`)
	must(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		must(t, rows.Scan(&v))
		out = append(out, v)
	}
	return out
}

func fileVersions(t *testing.T) []int64 {
	var out []int64
	for _, f := range migrationFiles(t) {
		v, err := strconv.ParseInt(strings.SplitN(f, "_", 2)[0], 10, 64)
		must(t, err)
		out = append(out, v)
	}
	return out
}

// TestLegacyDataDirectoryUpgradesInPlace: a file the earlier runner
// migrated opens under goose with its data; goose's table is filled from
// schema_migrations once, in order, and nothing is applied again; the
// schema is the one goose makes of a new file, statement for statement;
// schema_migrations stays for an earlier aivis.
func TestLegacyDataDirectoryUpgradesInPlace(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, "legacy.db")
	legacyMigrate(t, legacy)
	_, err := raw(t, legacy).Exec(`INSERT INTO accounts (id, name, tier, type, created_at) VALUES ('acct_old', 'Old', 'starter', 'standard', 1)`)
	must(t, err)

	db := open(t, legacy)
	if a, err := db.Account(ctx, "acct_old"); err != nil || a.Name != "Old" {
		t.Fatalf("the account of the earlier runner: %+v, %v", a, err)
	}
	must(t, db.Close())
	r := raw(t, legacy)
	if got, want := gooseVersions(t, r), fileVersions(t); !slices.Equal(got, want) {
		t.Fatalf("goose_db_version %v, want %v", got, want)
	}
	var kept int
	must(t, r.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&kept))
	if kept != len(fileVersions(t)) {
		t.Errorf("schema_migrations has %d versions, want the %d it had", kept, len(fileVersions(t)))
	}
	// Opening again carries nothing over twice.
	db = open(t, legacy)
	must(t, db.Close())
	if got := gooseVersions(t, r); len(got) != len(fileVersions(t)) {
		t.Fatalf("after a second open goose_db_version %v", got)
	}

	_, fresh := newDB(t)
	want := schemaOf(t, raw(t, fresh))
	got := schemaOf(t, r)
	for n, s := range want {
		if got[n] != s {
			t.Errorf("%s: goose made\n%s\nthe earlier runner made\n%s", n, s, got[n])
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s made by the earlier runner only", n)
		}
	}
}

func runner(t *testing.T, path string) *schema.Runner {
	t.Helper()
	r, closeRunner, err := sqlite.OpenMigrations(ctx, path)
	must(t, err)
	t.Cleanup(func() { closeRunner() })
	return r
}

// TestNewerSchemaIsRefused: a file with a version this binary has no
// migration for, past a contract (its floor), is refused by every open,
// whatever it may migrate, and the message names both versions and the
// contract.
func TestNewerSchemaIsRefused(t *testing.T) {
	db, path := newDB(t)
	must(t, db.Close())
	known := runner(t, path).Known()
	_, err := raw(t, path).Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, known+6)
	must(t, err)
	_, err = raw(t, path).Exec(`UPDATE schema_floor SET version = ?`, known+6)
	must(t, err)
	want := fmt.Sprintf("the database is at schema %d, this aivis knows up to %d: migration %d changed what this aivis reads: run a newer aivis, or restore a backup", known+6, known, known+6)
	for _, p := range []schema.Policy{schema.Apply, schema.ApplyNew, schema.Refuse} {
		db, err := sqlite.OpenWith(ctx, path, p)
		if err == nil {
			db.Close()
			t.Fatalf("policy %d opened a newer schema", p)
		}
		if !errors.Is(err, schema.ErrNewer) || !strings.Contains(err.Error(), want) {
			t.Errorf("policy %d: %v, want %q", p, err, want)
		}
	}
	if _, err := runner(t, path).Up(ctx); !errors.Is(err, schema.ErrNewer) {
		t.Errorf("up on a newer schema: %v", err)
	}
}

// TestPoliciesAtOpen: ApplyNew migrates a new file and refuses an older
// one, naming the command, applying nothing; Refuse refuses a new file
// too; Apply migrates the older one.
func TestPoliciesAtOpen(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.db")
	db, err := sqlite.OpenWith(ctx, fresh, schema.ApplyNew)
	must(t, err)
	account(t, db, "acct_1", store.AccountStandard)
	must(t, db.Close())

	other := filepath.Join(dir, "refused.db")
	if _, err := sqlite.OpenWith(ctx, other, schema.Refuse); !errors.Is(err, schema.ErrPending) || !strings.Contains(err.Error(), "aivis migrate up") {
		t.Fatalf("Refuse on a new file: %v", err)
	}

	vs := fileVersions(t)
	last, prev := vs[len(vs)-1], vs[len(vs)-2]
	r := runner(t, fresh)
	if _, err := r.DownTo(ctx, prev); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the database is at schema %d, this aivis needs %d (1 pending): run `aivis migrate up`", prev, last)
	for _, p := range []schema.Policy{schema.ApplyNew, schema.Refuse} {
		if _, err := sqlite.OpenWith(ctx, fresh, p); !errors.Is(err, schema.ErrPending) || !strings.Contains(err.Error(), want) {
			t.Fatalf("policy %d on an older file: %v, want %q", p, err, want)
		}
	}
	if v, err := r.Version(ctx); err != nil || v != prev {
		t.Fatalf("a refused open moved the schema to %d (%v)", v, err)
	}
	db, err = sqlite.OpenWith(ctx, fresh, schema.Apply)
	must(t, err)
	defer db.Close()
	if v, err := r.Version(ctx); err != nil || v != last {
		t.Fatalf("Apply left the schema at %d (%v)", v, err)
	}
	if _, err := db.Account(ctx, "acct_1"); err != nil {
		t.Fatal(err)
	}
}

// TestEveryDownUndoesItsUp: for each migration with a down step, applying
// it and undoing it gives back the schema before it, and applying it again
// works; a down past one that cannot be undone is refused before anything
// is undone, naming it.
func TestEveryDownUndoesItsUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	w := raw(t, path)
	schematest.DownsUndoUps(t, runner(t, path), func(t *testing.T) map[string]string { return schemaOf(t, w) })
}

// TestLegacyTableFollowsGoose: schema_migrations lists what goose
// applied, on a file goose made too, so that the earlier runner (the
// previous aivis's) finds nothing to apply on it; versions undone leave it,
// where the earlier runner would take them for applied.
func TestLegacyTableFollowsGoose(t *testing.T) {
	_, path := newDB(t)
	legacyMigrate(t, path) // fails on a file whose versions it does not find
	r := raw(t, path)
	top := func() int64 {
		var v int64
		must(t, r.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&v))
		return v
	}
	vs := fileVersions(t)
	if top() != vs[len(vs)-1] {
		t.Fatalf("schema_migrations reaches %d on a new file, want %d", top(), vs[len(vs)-1])
	}
	m, closeRunner, err := sqlite.OpenMigrations(ctx, path)
	must(t, err)
	if _, err := m.DownTo(ctx, vs[len(vs)-3]); err != nil {
		t.Fatal(err)
	}
	must(t, closeRunner())
	if top() != vs[len(vs)-3] {
		t.Fatalf("schema_migrations reaches %d after a down to %d", top(), vs[len(vs)-3])
	}
	open(t, path)
	if top() != vs[len(vs)-1] {
		t.Fatalf("schema_migrations reaches %d after migrating again", top())
	}
}

// TestEarlierOnNewer: this aivis runs on a file a newer one migrated past
// it with migrations that only add, and refuses it once a contract is
// applied (schematest.EarlierOnNewer).
func TestEarlierOnNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aivis.db")
	w := raw(t, path)
	schematest.EarlierOnNewer(t, runner(t, path),
		func(t *testing.T, extra fstest.MapFS) *schema.Runner {
			r, err := sqlite.NewerMigrations(w, path, extra)
			must(t, err)
			return r
		},
		func(p schema.Policy) error {
			db, err := sqlite.OpenWith(ctx, path, p)
			if err == nil {
				db.Close()
			}
			return err
		})
}

// TestContractsMarked: every migration since the floor's that takes
// something away says whether an earlier aivis can run past it.
func TestContractsMarked(t *testing.T) {
	schematest.ContractsMarked(t, sqlite.MigrationFiles(), 30)
}
