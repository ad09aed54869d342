// Package buslog is Watermill's logger for aivis: the one every bus (the
// SQLite bus, and whichever engine configuration chooses instead) and every
// router consuming one is given, so that the bus's own messages read alike
// whatever carries the events. It depends on Watermill and log/slog only.
package buslog

import (
	"context"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
)

// New is Watermill's logger for the product: its routine messages
// (handlers added, started, stopped) at debug, its warnings and errors as
// they are. A nil log discards them.
func New(log *slog.Logger) watermill.LoggerAdapter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return logger{watermill.NewSlogLoggerWithLevelMapping(log, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug}), log}
}

// logger skips Watermill's per-message trace unless the log shows it:
// the adapter would build its attributes for each message first.
type logger struct {
	watermill.LoggerAdapter
	log *slog.Logger
}

func (l logger) Trace(msg string, fields watermill.LogFields) {
	if l.log.Enabled(context.Background(), watermill.LevelTrace) {
		l.LoggerAdapter.Trace(msg, fields)
	}
}

func (l logger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return logger{l.LoggerAdapter.With(fields), l.log}
}
