package hub_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/internal/syncbuf"
	"github.com/aivis/aivis/plugins/host"
)

// only returns the one plugin registered.
func only(t *testing.T, db store.Store) store.PluginRecord {
	t.Helper()
	recs, err := db.ListPlugins(context.Background())
	if err != nil || len(recs) != 1 {
		t.Fatalf("registered: %+v %v", recs, err)
	}
	return recs[0]
}

// TestRegisterDir: the plugins of a trusted directory are registered at
// each start, again only when their file changed; a file that is not a
// plugin is logged and passed over; the operator's registration of the
// same plugin from elsewhere is kept; a directory that cannot be read is
// an error.
func TestRegisterDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "testplugin")
	build(t, bin, "1")
	if err := os.WriteFile(filepath.Join(dir, "not-a-plugin"), []byte("#!/bin/sh\necho not a plugin\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := newStore(t)
	var logged syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))

	if err := hub.RegisterDir(ctx, db, dir, log); err != nil {
		t.Fatal(err)
	}
	first := only(t, db)
	sum, err := host.Checksum(bin)
	if err != nil {
		t.Fatal(err)
	}
	if first.Name != "test" || first.Path != bin || first.Version != "1" || !bytes.Equal(first.SHA256, sum) {
		t.Fatalf("registered %+v", first)
	}
	if !strings.Contains(logged.String(), "not-a-plugin is not a working aivis connector plugin") || strings.Contains(logged.String(), "README") {
		t.Errorf("log:\n%s", logged.String())
	}

	// Unchanged, it is not registered again.
	if err := hub.RegisterDir(ctx, db, dir, log); err != nil {
		t.Fatal(err)
	}
	if again := only(t, db); !again.RegisteredAt.Equal(first.RegisteredAt) {
		t.Errorf("an unchanged plugin was registered again: %v, then %v", first.RegisteredAt, again.RegisteredAt)
	}

	// Changed (a new image), it is, beside the first build.
	v1, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	build(t, bin, "2")
	if err := hub.RegisterDir(ctx, db, dir, log); err != nil {
		t.Fatal(err)
	}
	if second := only(t, db); second.Version != "2" || bytes.Equal(second.SHA256, first.SHA256) || len(second.Builds) != 2 {
		t.Errorf("after the binary changed: %+v", second)
	}
	// The first image back (a rollback): its build is registered still,
	// and not again.
	if err := os.WriteFile(bin, v1, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hub.RegisterDir(ctx, db, dir, log); err != nil {
		t.Fatal(err)
	}
	if back := only(t, db); back.Version != "2" || len(back.Builds) != 2 || !back.Builds[0].RegisteredAt.Equal(first.RegisteredAt) {
		t.Errorf("after the first build came back: %+v", back)
	}
	build(t, bin, "3") // a build not registered yet

	// The operator's own registration of the plugin is kept, and a new
	// build of the directory is not added to it.
	own := filepath.Join(t.TempDir(), "testplugin")
	build(t, own, "9")
	if _, err := hub.Register(ctx, db, own); err != nil {
		t.Fatal(err)
	}
	if err := hub.RegisterDir(ctx, db, dir, log); err != nil {
		t.Fatal(err)
	}
	if kept := only(t, db); kept.Path != own || kept.Version != "9" {
		t.Errorf("the operator's registration became %+v", kept)
	}
	if !strings.Contains(logged.String(), "registered from elsewhere kept") {
		t.Errorf("log:\n%s", logged.String())
	}

	empty := newStore(t)
	if err := hub.RegisterDir(ctx, empty, filepath.Join(dir, "missing"), log); err == nil {
		t.Error("a missing directory is no error")
	}
	if recs, _ := empty.ListPlugins(ctx); len(recs) != 0 {
		t.Errorf("registered from a missing directory: %+v", recs)
	}
}
