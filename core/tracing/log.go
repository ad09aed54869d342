package tracing

import (
	"context"
	"log/slog"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"
)

// Logger is log whose records, when tracing is on, carry trace_id and
// span_id of the span in the context of the call (the *Context methods:
// InfoContext, WarnContext, ...) when there is one. Off, it is log.
func Logger(log *slog.Logger) *slog.Logger {
	if !Enabled() {
		return log
	}
	return slog.New(traceHandler{log.Handler()})
}

type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

// otelLog is OpenTelemetry's own logger for aivis: what it says of its
// settings (a header it cannot parse, a URL, a certificate's file) goes to
// log by its words alone, an error as a warning and the rest at debug,
// without the error's text or the values it would add: those quote the
// setting, and OTEL_EXPORTER_OTLP_HEADERS holds a vendor's key.
func otelLog(log *slog.Logger) logr.Logger { return logr.New(otelSink{log}) }

type otelSink struct{ log *slog.Logger }

func (otelSink) Init(logr.RuntimeInfo) {}

func (s otelSink) Enabled(int) bool { return s.log.Enabled(context.Background(), slog.LevelDebug) }

func (s otelSink) Info(_ int, msg string, _ ...any) { s.log.Debug("traces: OpenTelemetry: " + msg) }

func (s otelSink) Error(_ error, msg string, _ ...any) {
	s.log.Warn("traces: OpenTelemetry: "+msg, "note", "the value is not shown: it may hold a secret")
}

func (s otelSink) WithValues(...any) logr.LogSink { return s }

func (s otelSink) WithName(string) logr.LogSink { return s }
