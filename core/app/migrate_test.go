package app_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/store/schema"
	"github.com/aivis/aivis/core/store/sqlite"
)

// sqliteRunner is the migrations of cfg's data directory, closed when the
// test ends.
func sqliteRunner(t *testing.T, cfg config.Config) *schema.Runner {
	t.Helper()
	r, closeRunner, err := sqlite.OpenMigrations(t.Context(), filepath.Join(cfg.DataDir, engines.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeRunner() })
	return r
}

// TestOpenMigratesANewDataDirectoryOnly: Open, as every command but serve
// and migrate calls it, migrates a new data directory (a first aivis
// account create works) and refuses one with pending migrations, naming
// aivis migrate up and applying nothing; Migrate(schema.Apply) applies
// them.
func TestOpenMigratesANewDataDirectoryOnly(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	svc, err := app.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open on a new data directory: %v", err)
	}
	svc.Close()
	r := sqliteRunner(t, cfg)
	st, err := r.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	prev := st[len(st)-2].Version
	if _, err := r.DownTo(t.Context(), prev); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Open(t.Context(), cfg); !errors.Is(err, schema.ErrPending) || !strings.Contains(err.Error(), "run `aivis migrate up`") {
		t.Fatalf("Open on an older schema: %v", err)
	}
	if v, _ := r.Version(t.Context()); v != prev {
		t.Fatalf("a refused Open moved the schema from %d to %d", prev, v)
	}
	svc, err = app.Open(t.Context(), cfg, app.Migrate(schema.Apply))
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	if v, _ := r.Version(t.Context()); v != r.Known() {
		t.Fatalf("Migrate(Apply) left the schema at %d, want %d", v, r.Known())
	}
}

// TestServeWithoutAutoMigrateRefusesPending: serve with auto_migrate false
// does not start on a database with pending migrations (a new one too),
// naming aivis migrate up.
func TestServeWithoutAutoMigrateRefusesPending(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.AutoMigrate = false
	cfg.AdminAddr = ""
	cfg.Addr = "127.0.0.1:0"
	var out bytes.Buffer
	// Were it to serve, it would stop at this deadline without the error.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	err := app.Run(ctx, cfg, slog.New(slog.DiscardHandler), &out)
	if !errors.Is(err, schema.ErrPending) || !strings.Contains(err.Error(), "run `aivis migrate up`") {
		t.Fatalf("Run: %v; want pending migrations refused", err)
	}
	if v, _ := sqliteRunner(t, cfg).Version(t.Context()); v != 0 {
		t.Fatalf("serve without auto_migrate migrated to %d", v)
	}
}
