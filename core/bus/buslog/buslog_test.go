package buslog_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"

	"github.com/aivis/aivis/core/bus/buslog"
)

// Watermill's per-message trace reaches a log that shows it, and no other;
// its other messages keep their levels, routine ones at debug.
func TestLevels(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, watermill.LevelTrace} {
		var buf bytes.Buffer
		l := buslog.New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))).
			With(watermill.LogFields{"topic": "t"})
		l.Trace("per message", watermill.LogFields{"uuid": "m1"})
		l.Info("handler added", nil)
		l.Error("failed", errors.New("boom"), nil)
		out := buf.String()
		if shown, want := strings.Contains(out, "per message"), level == watermill.LevelTrace; shown != want {
			t.Errorf("at %v: trace shown %v, want %v\n%s", level, shown, want, out)
		}
		if !strings.Contains(out, "level=DEBUG msg=\"handler added\" topic=t") || !strings.Contains(out, "level=ERROR msg=failed topic=t error=boom") {
			t.Errorf("at %v:\n%s", level, out)
		}
	}
}
