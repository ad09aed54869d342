package hub_test

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/syncbuf"
	"github.com/aivis/aivis/plugins/host"
)

// TestStartLogsQuietly: a server at info says that each connector started,
// and nothing of go-plugin's transport (mutual TLS, addresses, processes
// starting and exiting), which it says at debug.
func TestStartLogsQuietly(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "partner-connector")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/partner-connector").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sum, err := host.Checksum(bin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PutPlugin(ctx, store.PluginRecord{Name: "partner-chat", Path: bin, SHA256: sum, Kind: "chat",
		Version: "1.0.0", RegisteredAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	transport := []string{"configuring client automatic mTLS", "configuring server automatic mTLS", "starting plugin",
		"plugin started", "using plugin", "plugin address", "plugin process exited"}
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf syncbuf.Buffer
		h, err := hub.Open(ctx, db, hub.Options{Dir: t.TempDir(), Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))})
		if err != nil {
			t.Fatal(err)
		}
		// Open returns once the connector answered and was logged as
		// started; Close returns once go-plugin logged everything of the
		// plugin process, its exit included: nothing comes after.
		started := strings.Contains(buf.String(), `level=INFO msg="connector started" connector=partner-chat`)
		h.Close()
		log := buf.String()
		if !started {
			t.Errorf("at %v, no connector started line:\n%s", level, log)
		}
		for _, line := range transport {
			switch {
			case level == slog.LevelInfo && strings.Contains(log, line):
				t.Errorf("at info, the log holds %q:\n%s", line, log)
			case level == slog.LevelDebug && !strings.Contains(log, `level=DEBUG msg="`+line+`"`):
				t.Errorf("at debug, the log lacks %q:\n%s", line, log)
			}
		}
	}
}
