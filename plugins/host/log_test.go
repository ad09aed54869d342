package host_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aivis/aivis/internal/syncbuf"
	"github.com/aivis/aivis/plugins/host"
)

// transport are go-plugin's own records of a plugin's start and end.
var transport = []string{"configuring client automatic mTLS", "configuring server automatic mTLS", "plugin started",
	"plugin address", "plugin process exited"}

// logOf starts the plugin with the host logging at level, makes one
// delivery in mode, and returns the log once the plugin is killed: Kill
// returns when go-plugin has logged everything the plugin wrote and its
// exit, so nothing is logged after it.
func logOf(t *testing.T, bin string, level slog.Level, mode string) string {
	t.Helper()
	var buf syncbuf.Buffer
	p, err := host.Start(host.Options{Path: bin, Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))})
	if err != nil {
		t.Fatal(err)
	}
	p.Connector().Deliver(context.Background(), json.RawMessage(`{"mode":"`+mode+`"}`), events)
	p.Kill()
	return buf.String()
}

// TestTransportLogsAtDebug: go-plugin's transport chatter is debug, so a
// server at info shows none of it, while what the plugin says of a problem
// and a plugin that dies stay visible.
func TestTransportLogsAtDebug(t *testing.T) {
	bin := build(t)
	warning := `level=WARN msg="[WARN] the test plugin was asked to warn"`
	info := logOf(t, bin, slog.LevelInfo, "warn")
	for _, line := range transport {
		if strings.Contains(info, line) {
			t.Errorf("at info, the log holds %q:\n%s", line, info)
		}
	}
	if !strings.Contains(info, warning) {
		t.Errorf("at info, the plugin's warning is missing:\n%s", info)
	}
	if crash := logOf(t, bin, slog.LevelInfo, "crash"); !strings.Contains(crash, `level=ERROR msg="plugin process exited"`) ||
		!strings.Contains(crash, "exit status 3") {
		t.Errorf("at info, a plugin that died is not reported:\n%s", crash)
	}

	debug := logOf(t, bin, slog.LevelDebug, "warn")
	for _, line := range transport {
		if !strings.Contains(debug, `level=DEBUG msg="`+line+`"`) {
			t.Errorf("at debug, the log lacks %q:\n%s", line, debug)
		}
	}
	if !strings.Contains(debug, warning) {
		t.Errorf("at debug, the plugin's warning is missing:\n%s", debug)
	}
}
