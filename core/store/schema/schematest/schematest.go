// Package schematest checks an engine's migrations: every down step gives
// back the schema before its up, and a down past a migration that cannot
// be undone is refused before anything is undone.
package schematest

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pressly/goose/v3"

	"github.com/aivis/aivis/core/store/schema"
)

// DownsUndoUps applies r's migrations one by one on an empty database;
// after each that can be undone it undoes it, compares the schema
// (schemaOf: each object's definition by name) with the one before it,
// and applies it again. Then it asks for a down past the newest migration
// that cannot be undone, which must be refused with the schema left as it
// was.
func DownsUndoUps(t *testing.T, r *schema.Runner, schemaOf func(t *testing.T) map[string]string) {
	t.Helper()
	ctx := t.Context()
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lastIrreversible int64
	for i, m := range st {
		before := schemaOf(t)
		if _, err := r.UpTo(ctx, m.Version); err != nil {
			t.Fatalf("up to %d: %v", m.Version, err)
		}
		if m.Irreversible != "" {
			lastIrreversible = m.Version
			continue
		}
		prev := int64(0)
		if i > 0 {
			prev = st[i-1].Version
		}
		if _, err := r.DownTo(ctx, prev); err != nil {
			t.Fatalf("down %04d %s: %v", m.Version, m.Name, err)
		}
		after := schemaOf(t)
		for n, s := range before {
			if after[n] != s {
				t.Errorf("down %04d %s: %s is\n%s\nwas\n%s", m.Version, m.Name, n, after[n], s)
			}
		}
		for n := range after {
			if _, ok := before[n]; !ok {
				t.Errorf("down %04d %s left %s", m.Version, m.Name, n)
			}
		}
		if _, err := r.UpTo(ctx, m.Version); err != nil {
			t.Fatalf("up to %d again: %v", m.Version, err)
		}
	}
	if lastIrreversible == 0 {
		t.Fatal("no migration marked irreversible")
	}
	if n := len(schemaOf(t)); n < 50 {
		t.Fatalf("the schema read as %d objects", n)
	}
	before, _ := r.Version(ctx)
	_, err = r.DownTo(ctx, lastIrreversible-1)
	if !errors.Is(err, schema.ErrIrreversible) || !strings.Contains(err.Error(), fmt.Sprintf("migration %04d", lastIrreversible)) {
		t.Fatalf("down past %d: %v", lastIrreversible, err)
	}
	if v, _ := r.Version(ctx); v != before {
		t.Fatalf("a refused down moved the schema from %d to %d", before, v)
	}
}

// EarlierOnNewer plays an earlier aivis (r's migrations, applied) on a
// database that a newer one (newer: a runner on the same database with
// more migrations, extra, beside r's) migrated: past an added table, every
// open (open, with each policy) runs on it and changes nothing, while
// migrating up is refused; past a migration marked as a contract, every
// open is refused, naming it; that one undone, the earlier aivis runs again.
func EarlierOnNewer(t *testing.T, r *schema.Runner, newer func(t *testing.T, extra fstest.MapFS) *schema.Runner, open func(schema.Policy) error) {
	t.Helper()
	ctx := t.Context()
	if _, err := r.Up(ctx); err != nil {
		t.Fatal(err)
	}
	known := r.Known()
	add, contract := known+1, known+2
	files := fstest.MapFS{
		fmt.Sprintf("%05d_future_table.sql", add): {Data: []byte(
			"-- +goose Up\nCREATE TABLE future_table (x INTEGER);\n-- +goose Down\nDROP TABLE future_table;\n")},
	}
	expand := newer(t, files)
	if _, err := expand.Up(ctx); err != nil {
		t.Fatal(err)
	}
	opens := func(want error, text string) {
		t.Helper()
		for _, p := range []schema.Policy{schema.Apply, schema.ApplyNew, schema.Refuse} {
			err := open(p)
			if !errors.Is(err, want) || want != nil && !strings.Contains(err.Error(), text) {
				t.Errorf("policy %d: %v, want %v (%q)", p, err, want, text)
			}
		}
		if v, err := r.Version(ctx); err != nil || v < add {
			t.Errorf("an earlier aivis's open moved the schema to %d (%v)", v, err)
		}
	}
	opens(nil, "")
	if f, _, err := r.Floor(ctx); err != nil || f >= add {
		t.Errorf("floor %d (%v) past an added table", f, err)
	}
	if _, err := r.Up(ctx); !errors.Is(err, schema.ErrNewer) {
		t.Errorf("an earlier aivis's migrate up on a newer schema: %v", err)
	}

	files[fmt.Sprintf("%05d_future_drop.sql", contract)] = &fstest.MapFile{Data: []byte(
		"-- +goose Up\n-- Contract: drops future_table\nDROP TABLE future_table;\n-- +goose Down\nCREATE TABLE future_table (x INTEGER);\n")}
	shrink := newer(t, files)
	if _, err := shrink.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if f, ok, err := r.Floor(ctx); err != nil || !ok || f != contract {
		t.Fatalf("floor %d (%v, %v) past a contract %d", f, ok, err, contract)
	}
	opens(schema.ErrNewer, fmt.Sprintf("the database is at schema %d, this aivis knows up to %d: migration %d changed what this aivis reads", contract, known, contract))

	if _, err := shrink.DownTo(ctx, add); err != nil {
		t.Fatal(err)
	}
	opens(nil, "")
}

// With is base's files and extra's, at extra's root.
func With(base fs.FS, extra fstest.MapFS) fstest.MapFS {
	out := fstest.MapFS{}
	fs.WalkDir(base, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(base, p)
			out[p] = &fstest.MapFile{Data: b}
		}
		return err
	})
	for p, f := range extra {
		out[p] = f
	}
	return out
}

// dropping matches the statements that take away or change what a running
// aivis may read: dropped or renamed tables, columns and the rest, changed
// columns, new constraints on old columns.
var dropping = regexp.MustCompile(`(?i)\b(DROP\s+(TABLE|COLUMN|VIEW|TRIGGER|FUNCTION|INDEX|CONSTRAINT)|RENAME|ALTER\s+COLUMN|SET\s+NOT\s+NULL)\b`)

// ContractsMarked fails for a migration in files past since whose up step
// takes something away (dropping) and that says neither that it is a
// contract ("-- Contract: what an earlier aivis loses") nor why an earlier
// aivis does not mind ("-- Expand: why"): the floor (schema.FloorTable)
// counts on the mark.
func ContractsMarked(t *testing.T, files fs.FS, since int64) {
	t.Helper()
	names, err := fs.Glob(files, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	for _, n := range names {
		v, err := goose.NumericComponent(n)
		if err != nil || v <= since {
			continue
		}
		b, err := fs.ReadFile(files, n)
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(b), "-- +goose Down")
		if dropping.MatchString(stripComments(up)) && !strings.Contains(up, "-- Contract:") && !strings.Contains(up, "-- Expand:") {
			t.Errorf("%s takes something away: mark it \"-- Contract: ...\" (an earlier aivis cannot run past it) or \"-- Expand: ...\" (why it can)", n)
		}
	}
}

// stripComments is sql without its -- comments.
func stripComments(sql string) string {
	var b strings.Builder
	for line := range strings.Lines(sql) {
		code, _, _ := strings.Cut(line, "--")
		b.WriteString(code)
		b.WriteString("\n")
	}
	return b.String()
}
