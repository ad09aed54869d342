package postgres_test

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/schema/schematest"
	"github.com/aivis/aivis/internal/testsvc"
)

func runner(t *testing.T, dsn string) *schema.Runner {
	t.Helper()
	r, closeRunner, err := postgres.OpenMigrations(ctx, dsn)
	must(t, err)
	t.Cleanup(func() { closeRunner() })
	return r
}

// schemaOf is the database's schema, but for goose's table: each column,
// index, constraint, trigger and function, as the catalog prints it.
func schemaOf(t *testing.T, dsn string) map[string]string {
	t.Helper()
	rows, err := conn(t, dsn).Query(ctx, `
		SELECT 'column ' || table_name || '.' || column_name, data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> 'goose_db_version'
		UNION ALL SELECT 'index ' || indexname, indexdef FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename <> 'goose_db_version'
		UNION ALL SELECT 'constraint ' || conrelid::regclass || '.' || conname, pg_get_constraintdef(oid) FROM pg_constraint
			WHERE connamespace = current_schema()::regnamespace AND conrelid::regclass::text <> 'goose_db_version'
		UNION ALL SELECT 'trigger ' || tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'function ' || proname, pg_get_functiondef(oid) FROM pg_proc
			WHERE pronamespace = current_schema()::regnamespace`)
	must(t, err)
	out := map[string]string{}
	var n, def string
	_, err = pgx.ForEachRow(rows, []any{&n, &def}, func() error {
		out[n] = def
		return nil
	})
	must(t, err)
	return out
}

// TestNewerSchemaIsRefused: a database with a version this binary has no
// migration for, past a contract (its floor), is refused by every open,
// whatever it may migrate, and the message names both versions and the
// contract.
func TestNewerSchemaIsRefused(t *testing.T) {
	dsn, key := testsvc.Postgres(t), box(t)
	open(t, dsn, key)
	known := runner(t, dsn).Known()
	_, err := conn(t, dsn).Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, known+6)
	must(t, err)
	_, err = conn(t, dsn).Exec(ctx, `UPDATE schema_floor SET version = $1`, known+6)
	must(t, err)
	want := fmt.Sprintf("the database is at schema %d, this aivis knows up to %d: migration %d changed what this aivis reads: run a newer aivis, or restore a backup", known+6, known, known+6)
	for _, p := range []schema.Policy{schema.Apply, schema.ApplyNew, schema.Refuse} {
		db, err := postgres.OpenWith(ctx, dsn, key, p)
		if err == nil {
			db.Close()
			t.Fatalf("policy %d opened a newer schema", p)
		}
		if !errors.Is(err, schema.ErrNewer) || !strings.Contains(err.Error(), want) {
			t.Errorf("policy %d: %v, want %q", p, err, want)
		}
	}
}

// TestPoliciesAtOpen: ApplyNew migrates a new database and refuses an
// older one, naming the command and applying nothing; Refuse refuses a
// new one too; Apply migrates the older one.
func TestPoliciesAtOpen(t *testing.T) {
	key := box(t)
	other := testsvc.Postgres(t)
	if _, err := postgres.OpenWith(ctx, other, key, schema.Refuse); !errors.Is(err, schema.ErrPending) || !strings.Contains(err.Error(), "aivis migrate up") {
		t.Fatalf("Refuse on a new database: %v", err)
	}
	dsn := testsvc.Postgres(t)
	db, err := postgres.OpenWith(ctx, dsn, key, schema.ApplyNew)
	must(t, err)
	db.Close()
	r := runner(t, dsn)
	st, err := r.Status(ctx)
	must(t, err)
	last, prev := st[len(st)-1].Version, st[len(st)-2].Version
	if _, err := r.DownTo(ctx, prev); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the database is at schema %d, this aivis needs %d (1 pending): run `aivis migrate up`", prev, last)
	for _, p := range []schema.Policy{schema.ApplyNew, schema.Refuse} {
		if _, err := postgres.OpenWith(ctx, dsn, key, p); !errors.Is(err, schema.ErrPending) || !strings.Contains(err.Error(), want) {
			t.Fatalf("policy %d on an older database: %v, want %q", p, err, want)
		}
	}
	if v, err := r.Version(ctx); err != nil || v != prev {
		t.Fatalf("a refused open moved the schema to %d (%v)", v, err)
	}
	open(t, dsn, key)
	if v, err := r.Version(ctx); err != nil || v != last {
		t.Fatalf("Apply left the schema at %d (%v)", v, err)
	}
}

// TestEveryDownUndoesItsUp: for each migration with a down step, applying
// it and undoing it gives back the schema before it, and applying it
// again works; a down past one that cannot be undone is refused before
// anything is undone, naming it.
func TestEveryDownUndoesItsUp(t *testing.T) {
	dsn := testsvc.Postgres(t)
	schematest.DownsUndoUps(t, runner(t, dsn), func(t *testing.T) map[string]string { return schemaOf(t, dsn) })
}

// TestEarlierOnNewer: this aivis runs on a database a newer one migrated
// past it with migrations that only add, and refuses it once a contract
// is applied (schematest.EarlierOnNewer).
func TestEarlierOnNewer(t *testing.T) {
	dsn, key := testsvc.Postgres(t), box(t)
	db, err := sql.Open("pgx", dsn)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	schematest.EarlierOnNewer(t, runner(t, dsn),
		func(t *testing.T, extra fstest.MapFS) *schema.Runner {
			r, err := postgres.NewerMigrations(db, extra)
			must(t, err)
			return r
		},
		func(p schema.Policy) error {
			s, err := postgres.OpenWith(ctx, dsn, key, p)
			if err == nil {
				s.Close()
			}
			return err
		})
}

// TestContractsMarked: every migration since the floor's that takes
// something away says whether an earlier aivis can run past it.
func TestContractsMarked(t *testing.T) {
	schematest.ContractsMarked(t, postgres.MigrationFiles(), 12)
}
