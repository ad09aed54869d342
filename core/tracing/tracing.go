// Package tracing is aivis's OpenTelemetry tracing: off unless the
// standard OTEL_* variables name an OTLP endpoint (Setup), in which case
// spans go to it over OTLP (HTTP or gRPC) in batches. Off, the global
// tracer provider stays OpenTelemetry's no-op one, no span is started and
// nothing is added to a request, a message or a log record.
//
// The spans: a server span per HTTP request (Request, named by Route), a
// transaction of the store inside traced work (StartChild), an event's
// publish, its forward to another bus and its handling by a consumer
// group, the trace context carried from one to the next in the message's
// metadata (Inject, FromParent, Consume), each attempt of a delivery (its
// context kept with the delivery: Parent), each call of an
// AI engine and of a connector. Their attributes are kinds, labels,
// names an operator chose, statuses and counts: never a secret, a URL, a
// domain, an account or anything else a tenant sent.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/status"

	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/internal/buildinfo"
)

// Scope is the instrumentation scope of aivis's spans.
const Scope = "github.com/aivis/aivis"

// current is the tracer spans start on; nil while tracing is off.
var current atomic.Pointer[trace.Tracer]

// noSpan is the span of a context without one: it records nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Enabled reports whether tracing is on. Code that would build a span's
// attributes asks first, so that tracing off costs nothing.
func Enabled() bool { return current.Load() != nil }

// Use makes aivis's spans start on tp's tracer (nil: tracing off). Setup
// calls it; a test gives a provider of its own.
func Use(tp trace.TracerProvider) {
	if tp == nil {
		current.Store(nil)
		return
	}
	t := tp.Tracer(Scope, trace.WithInstrumentationVersion(buildinfo.Get().Version))
	current.Store(&t)
}

// Start starts a span as a child of ctx's span, if any. Off, it returns
// ctx and a span that records nothing.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t := current.Load()
	if t == nil {
		return ctx, noSpan
	}
	return (*t).Start(ctx, name, opts...)
}

// StartChild starts a span only inside a trace: ctx must carry a span
// (a request's, a work item's). Work outside any trace (a background
// batch) starts none, rather than a trace of one span each time.
func StartChild(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, noSpan
	}
	return Start(ctx, name, opts...)
}

// Fail marks a span failed with a fixed description of what failed (an
// error's text may carry what a span must not: an address, a tenant's
// words); kind is the error.type attribute, a word of a bounded set.
func Fail(span trace.Span, kind string) {
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
	span.SetStatus(codes.Error, kind)
}

// The environment variables of OpenTelemetry's specification that Setup
// reads itself; the exporters and the SDK read the others (headers,
// timeouts, compression, certificates, the sampler, the batches).
const (
	envDisabled        = "OTEL_SDK_DISABLED"
	envExporter        = "OTEL_TRACES_EXPORTER"
	envEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	shutdownFlushLimit = 5 * time.Second
)

// ErrConfig is the error of an OTEL_* setting aivis cannot follow.
var ErrConfig = errors.New("tracing")

// Setup turns tracing on when the environment asks for it: an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_SDK_DISABLED is true or
// OTEL_TRACES_EXPORTER is none. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf (the default) or grpc. The resource is service.name aivis
// and service.version this build's, which OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES may override; the sampler is
// OTEL_TRACES_SAMPLER's (parentbased_always_on by default). stop flushes
// the spans not yet sent (for up to 5 s) and turns tracing off; it is a
// no-op when tracing stayed off. A collector that does not take spans is
// logged once, as a warning, and its return once.
func Setup(ctx context.Context, log *slog.Logger) (stop func(), err error) {
	on, protocol, err := wanted(os.Getenv)
	if err != nil || !on {
		return func() {}, err
	}
	otel.SetLogger(otelLog(log)) // before the exporter reads its settings
	var exp sdktrace.SpanExporter
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the OTLP exporter: %s", ErrConfig, describe(err))
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("aivis"), semconv.ServiceVersion(buildinfo.Get().Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES: %v", ErrConfig, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(&reporting{SpanExporter: exp, log: log}), sdktrace.WithResource(res))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Debug("traces: OpenTelemetry", "reason", describe(err))
	}))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	Use(tp)
	log.Info("traces: sent over OTLP", "protocol", protocol)
	return func() {
		Use(nil)
		ctx, cancel := context.WithTimeout(context.Background(), shutdownFlushLimit)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("traces: not every span was sent at shutdown", "reason", describe(err))
		}
	}, nil
}

// Check is the error Setup would return for the OTEL_* variables of
// getenv, without setting anything up.
func Check(getenv func(string) string) error {
	_, _, err := wanted(getenv)
	return err
}

// wanted reads whether the environment turns tracing on, and over which
// OTLP protocol.
func wanted(getenv func(string) string) (on bool, protocol string, err error) {
	if strings.EqualFold(strings.TrimSpace(getenv(envDisabled)), "true") {
		return false, "", nil
	}
	switch e := strings.TrimSpace(getenv(envExporter)); e {
	case "", "otlp":
	case "none":
		return false, "", nil
	default:
		return false, "", fmt.Errorf("%w: %s %q: aivis exports traces over otlp only (or none)", ErrConfig, envExporter, e)
	}
	if getenv(envTracesEndpoint) == "" && getenv(envEndpoint) == "" {
		return false, "", nil
	}
	name, protocol := envTracesProtocol, strings.TrimSpace(getenv(envTracesProtocol))
	if protocol == "" {
		name, protocol = envProtocol, strings.TrimSpace(getenv(envProtocol))
	}
	switch protocol {
	case "":
		protocol = "http/protobuf"
	case "http/protobuf", "grpc":
	default:
		return false, "", fmt.Errorf("%w: %s %q: aivis sends traces over http/protobuf or grpc", ErrConfig, name, protocol)
	}
	return true, protocol, nil
}

// reporting logs the collector's failure to take spans once, as a
// warning, and its return once.
type reporting struct {
	sdktrace.SpanExporter
	log     *slog.Logger
	failing atomic.Bool
}

func (r *reporting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := r.SpanExporter.ExportSpans(ctx, spans)
	switch {
	case err != nil && !r.failing.Swap(true):
		r.log.Warn("traces: the collector does not take spans; they are dropped until it does", "reason", describe(err))
	case err == nil && r.failing.Swap(false):
		r.log.Info("traces: the collector takes spans again")
	}
	return err
}

// urls matches a URL in an exporter's error, which names the collector's.
var urls = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"']+`)

// describe says what went wrong with the collector without its address
// or URL (a log line may leave the system): a gRPC status by its code, a
// network failure as netguard words it, any other error with every URL
// replaced, cut to 300 characters.
func describe(err error) string {
	if s, ok := status.FromError(err); ok && s.Code() != 0 {
		return "the collector answered " + s.Code().String()
	}
	return text.Cut(urls.ReplaceAllString(netguard.Describe(err), "the collector"), 300)
}
