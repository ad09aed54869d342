package app_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
)

// TestRunRefusesCounterMemoryOnPostgres: a server with counter memory on
// store postgres stops before it opens anything (no data directory made,
// no database asked: the one named does not exist), with the
// configuration's error, which shows no password.
func TestRunRefusesCounterMemoryOnPostgres(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Store, cfg.PostgresURL, cfg.MasterKeyFile = "postgres", "postgres://aivis:s3cr3t@127.0.0.1:1/aivis", filepath.Join(t.TempDir(), "master.key")
	var out bytes.Buffer
	err := app.Run(t.Context(), cfg, slog.New(slog.DiscardHandler), &out)
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "counter memory cannot serve the API of store postgres") ||
		strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("Run: %v; want the configuration refused", err)
	}
	if _, serr := os.Stat(cfg.DataDir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the data directory was made (%v) for a configuration refused", serr)
	}
	if out.Len() > 0 {
		t.Errorf("Run printed %q before refusing", out.String())
	}
}
