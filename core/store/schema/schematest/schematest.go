// Package schematest checks an engine's migrations: every down step gives
// back the schema before its up, and a down past a migration that cannot
// be undone is refused before anything is undone.
package schematest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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
