package tracing

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/aivis/aivis/internal/buildinfo"
	"github.com/aivis/aivis/internal/otlptest"
	"github.com/aivis/aivis/internal/syncbuf"
)

// recording turns tracing on for the test, its spans kept in memory.
func recording(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { Use(nil) })
	return rec
}

func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// The environment turns tracing on with an OTLP endpoint, over
// http/protobuf unless it says grpc; OTEL_SDK_DISABLED and
// OTEL_TRACES_EXPORTER=none keep it off; what aivis cannot follow is
// refused, naming the variable.
func TestWanted(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		on       bool
		protocol string
		err      string
	}{
		{env: nil},
		{env: map[string]string{envProtocol: "grpc"}},
		{env: map[string]string{envEndpoint: "http://collector:4318"}, on: true, protocol: "http/protobuf"},
		{env: map[string]string{envTracesEndpoint: "http://collector:4318/v1/traces"}, on: true, protocol: "http/protobuf"},
		{env: map[string]string{envEndpoint: "http://c:4317", envProtocol: "grpc"}, on: true, protocol: "grpc"},
		{env: map[string]string{envEndpoint: "http://c:4317", envProtocol: "http/protobuf", envTracesProtocol: "grpc"}, on: true, protocol: "grpc"},
		{env: map[string]string{envEndpoint: "http://c:4318", envExporter: "otlp"}, on: true, protocol: "http/protobuf"},
		{env: map[string]string{envEndpoint: "http://c:4318", envExporter: "none"}},
		{env: map[string]string{envEndpoint: "http://c:4318", envDisabled: "TRUE"}},
		{env: map[string]string{envEndpoint: "http://c:4318", envDisabled: "false"}, on: true, protocol: "http/protobuf"},
		{env: map[string]string{envEndpoint: "http://c:4318", envProtocol: "http/json"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{env: map[string]string{envEndpoint: "http://c:4318", envTracesProtocol: "udp"}, err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{env: map[string]string{envEndpoint: "http://c:4318", envExporter: "zipkin"}, err: "OTEL_TRACES_EXPORTER"},
	} {
		on, protocol, err := wanted(func(k string) string { return tc.env[k] })
		if tc.err != "" {
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || on != tc.on || protocol != tc.protocol {
			t.Errorf("%v: on %v, protocol %q, %v; want %v %q", tc.env, on, protocol, err, tc.on, tc.protocol)
		}
	}
}

// Off, nothing is traced and nothing is wrapped: the handler is the
// router itself, a span records nothing, a message gets no metadata, the
// logger is the one given.
func TestOffCostsNothing(t *testing.T) {
	Use(nil)
	t.Setenv(envEndpoint, "")
	t.Setenv(envTracesEndpoint, "")
	stop, err := Setup(context.Background(), slog.New(slog.DiscardHandler))
	if err != nil || Enabled() {
		t.Fatalf("Setup without an endpoint: %v, enabled %v", err, Enabled())
	}
	stop()
	req := httptest.NewRequest("GET", "/", nil)
	if r, _ := Request(req); r != req {
		t.Error("Request changed the request with tracing off")
	}
	ctx, span := Start(context.Background(), "x")
	if span.IsRecording() || trace.SpanContextFromContext(ctx).IsValid() {
		t.Error("a span started with tracing off")
	}
	m := message.NewMessage("1", nil)
	Inject(ctx, m)
	if len(m.Metadata) != 0 {
		t.Errorf("metadata %v with tracing off", m.Metadata)
	}
	log := slog.New(slog.DiscardHandler)
	if Logger(log) != log {
		t.Error("Logger wrapped the logger with tracing off")
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, s := Start(context.Background(), "x")
		s.End()
		_, end := Request(req)
		end(200)
	})
	if allocs != 0 {
		t.Errorf("Start with tracing off allocates %v times", allocs)
	}
}

// A request's span is named after its route's pattern and carries the
// method, the route and the status, never the path or the query; a
// caller's traceparent is its parent; the log records made in it carry
// its trace's id.
func TestHandler(t *testing.T) {
	rec := recording(t)
	var logs bytes.Buffer
	log := Logger(slog.New(slog.NewTextHandler(&logs, nil)))
	r := chi.NewRouter()
	r.Use(Route, middleware.GetHead)
	r.Get("/v1/webhooks/{id}", func(w http.ResponseWriter, r *http.Request) {
		log.InfoContext(r.Context(), "handled")
		w.WriteHeader(http.StatusTeapot)
	})
	r.Post("/boom", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	// As the API's base serves it: the span's request through the router,
	// ended with the status.
	serve := func(method, target, traceparent string) {
		req := httptest.NewRequest(method, target, nil)
		req.TLS = &tls.ConnectionState{}
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		req, end := Request(req)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		end(w.Code)
	}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	serve("GET", "/v1/webhooks/wh_secret123?token=hunter2", parent)
	serve("POST", "/boom", "")
	serve("POST", "/nowhere", "")
	serve("BREW", "/v1/webhooks/x", "")
	serve("HEAD", "/v1/webhooks/wh_1", "")

	spans := rec.Ended()
	if len(spans) != 5 {
		t.Fatalf("%d spans, want 5", len(spans))
	}
	s := spans[0]
	want := map[string]string{"http.request.method": "GET", "http.route": "/v1/webhooks/{id}", "http.response.status_code": "418",
		"url.scheme": "https", "network.protocol.version": "1.1"}
	if s.Name() != "GET /v1/webhooks/{id}" || s.SpanKind() != trace.SpanKindServer || fmt.Sprint(attrsOf(s)) != fmt.Sprint(want) {
		t.Errorf("span %q (%v) %v; want GET /v1/webhooks/{id}, server, %v", s.Name(), s.SpanKind(), attrsOf(s), want)
	}
	if s.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" ||
		!s.Parent().IsRemote() {
		t.Errorf("parent %v, want the caller's traceparent", s.Parent())
	}
	if line := logs.String(); !strings.Contains(line, "trace_id=4bf92f3577b34da6a3ce929d0e0e4736") ||
		!strings.Contains(line, "span_id="+s.SpanContext().SpanID().String()) {
		t.Errorf("log %q: want the request's trace_id and span_id", line)
	}
	if b := spans[1]; b.Name() != "POST /boom" || b.Status().Code.String() != "Error" || attrsOf(b)["error.type"] != "502" || b.Parent().IsValid() {
		t.Errorf("a 502: %q %v %v, parent %v; want an error of a root span", b.Name(), b.Status(), attrsOf(b), b.Parent())
	}
	if n := spans[2]; n.Name() != "POST" || attrsOf(n)["http.route"] != "" || attrsOf(n)["http.response.status_code"] != "404" {
		t.Errorf("no route: %q %v; want the method alone, no route", n.Name(), attrsOf(n))
	}
	if o := spans[3]; o.Name() != "_OTHER" && !strings.HasPrefix(o.Name(), "_OTHER ") {
		t.Errorf("a method HTTP does not define is named %q, want _OTHER", o.Name())
	}
	if h := spans[4]; h.Name() != "HEAD /v1/webhooks/{id}" || attrsOf(h)["http.response.status_code"] != "418" {
		t.Errorf("HEAD, served by GET's route: %q %v", h.Name(), attrsOf(h))
	}
	for _, s := range spans {
		for k, v := range attrsOf(s) {
			if strings.Contains(v, "secret") || strings.Contains(v, "hunter2") || strings.Contains(v, "nowhere") {
				t.Errorf("%s: attribute %s=%q holds the path or the query", s.Name(), k, v)
			}
		}
	}
}

// An event's trace context travels in its message's metadata: the
// consumer's span is a child of the span that published it, and the
// handler's message carries the consumer's span.
func TestConsume(t *testing.T) {
	rec := recording(t)
	ctx, pub := Start(context.Background(), "publish")
	m := message.NewMessage("evt_1", nil)
	m.Metadata.Set("event", "ai_visibility_change")
	Inject(ctx, m)
	pub.End()
	if m.Metadata.Get(Traceparent) != Parent(ctx) || Parent(ctx) == "" {
		t.Fatalf("metadata %v, want traceparent %s", m.Metadata, Parent(ctx))
	}
	var inHandler trace.SpanContext
	h := Consume("aivis.events", "webhooks", "event")(func(msg *message.Message) ([]*message.Message, error) {
		inHandler = trace.SpanContextFromContext(msg.Context())
		return nil, errors.New("nack")
	})
	if _, err := h(m); err == nil {
		t.Fatal("the handler's error was lost")
	}
	spans := rec.Ended()
	c := spans[len(spans)-1]
	if c.Name() != "process aivis.events" || c.SpanKind() != trace.SpanKindConsumer || c.Parent().SpanID() != pub.SpanContext().SpanID() ||
		c.SpanContext().TraceID() != pub.SpanContext().TraceID() || inHandler.SpanID() != c.SpanContext().SpanID() {
		t.Errorf("consumer span %q %v, parent %v, handler's %v; want a child of the publish %v", c.Name(), c.SpanKind(), c.Parent(), inHandler, pub.SpanContext())
	}
	want := map[string]string{"messaging.operation.type": "process", "messaging.destination.name": "aivis.events",
		"messaging.consumer.group.name": "webhooks", "messaging.message.id": "evt_1", "aivis.event.kind": "ai_visibility_change",
		"error.type": "handler"}
	if fmt.Sprint(attrsOf(c)) != fmt.Sprint(want) {
		t.Errorf("attributes %v, want %v", attrsOf(c), want)
	}
	if sc := SpanContext(Parent(ctx)); sc.TraceID() != pub.SpanContext().TraceID() || sc.SpanID() != pub.SpanContext().SpanID() {
		t.Errorf("SpanContext(Parent(ctx)) = %v, want %v", sc, pub.SpanContext())
	}
	if SpanContext("").IsValid() || SpanContext("00-zz").IsValid() {
		t.Error("a span context from no traceparent")
	}
}

// setUp sets tracing up with the environment's endpoint a receiver of the
// test's, and more variables (name, value, ...); its log is kept.
func setUp(t *testing.T, env ...string) (*otlptest.Receiver, *syncbuf.Buffer, func()) {
	t.Helper()
	rc := otlptest.New(t)
	t.Setenv(envEndpoint, rc.URL)
	for i := 0; i+1 < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	logs := &syncbuf.Buffer{}
	stop, err := Setup(context.Background(), slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Use(nil) })
	return rc, logs, stop
}

// Spans go to the OTLP endpoint of the environment, as aivis of this
// version; a collector that refuses them is logged once, without its
// URL, and its return once; stop sends what is left.
func TestSetup(t *testing.T) {
	rc, logs, stop := setUp(t, "OTEL_BSP_SCHEDULE_DELAY", "50")
	_, span := Start(context.Background(), "first")
	span.End()
	spans := rc.Wait(t, "the first span", 10*time.Second, func(s []otlptest.Span) bool { return len(s) > 0 })
	if r := spans[0].Resource; r["service.name"] != "aivis" || r["service.version"] != buildinfo.Get().Version {
		t.Errorf("resource %v, want service.name aivis and this build's version", r)
	}

	rc.Answer(http.StatusUnauthorized)
	for range 3 {
		n := rc.Requests()
		_, span := Start(context.Background(), "refused")
		span.End()
		rc.Wait(t, "another export", 10*time.Second, func([]otlptest.Span) bool { return rc.Requests() > n })
	}
	rc.Answer(0)
	_, span = Start(context.Background(), "last")
	span.End()
	stop()
	if _, ok := otlptest.Named(rc.Spans(), "last"); !ok {
		t.Error("stop did not send the last span")
	}
	if Enabled() {
		t.Error("tracing on after stop")
	}
	out := logs.String()
	if strings.Count(out, "the collector does not take spans") != 1 || strings.Count(out, "the collector takes spans again") != 1 {
		t.Errorf("log: want the failure once and the return once:\n%s", out)
	}
	if strings.Contains(out, rc.URL) || strings.Contains(out, "127.0.0.1") {
		t.Errorf("log names the collector's address:\n%s", out)
	}
}

// What OpenTelemetry says of a setting it cannot read goes to aivis's
// log without the setting's value: a header written with ':' for '='
// (a common slip) would otherwise print a vendor's key.
func TestSettingsNotLogged(t *testing.T) {
	_, logs, stop := setUp(t, "OTEL_EXPORTER_OTLP_HEADERS", "authorization:Bearer sekrit-123,x-team=%zzsekrit-456")
	stop()
	out := logs.String()
	if !strings.Contains(out, "parse headers") || !strings.Contains(out, "escape header value") || strings.Contains(out, "sekrit") {
		t.Errorf("log: want what could not be read, without the headers' values:\n%s", out)
	}
}

// describe names no URL and no address.
func TestDescribe(t *testing.T) {
	for _, err := range []error{
		errors.New(`failed to send to http://user:pw@collector.internal:4318/v1/traces: 401 Unauthorized (body: no)`),
		fmt.Errorf("traces export: %w", &netError{"dial tcp 10.1.2.3:4317: connect: connection refused"}),
	} {
		d := describe(err)
		if strings.Contains(d, "collector.internal") || strings.Contains(d, "10.1.2.3") || strings.Contains(d, "pw") {
			t.Errorf("describe(%v) = %q", err, d)
		}
	}
}

type netError struct{ s string }

func (e *netError) Error() string { return e.s }

// grpcCollector takes OTLP over gRPC and counts the spans.
type grpcCollector struct {
	coltrace.UnimplementedTraceServiceServer
	spans atomic.Int64
}

func (c *grpcCollector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans.Add(int64(len(ss.Spans)))
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends the spans over gRPC.
func TestSetupGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	c := &grpcCollector{}
	coltrace.RegisterTraceServiceServer(srv, c)
	go srv.Serve(ln)
	defer srv.Stop()
	t.Setenv(envEndpoint, "http://"+ln.Addr().String())
	t.Setenv(envProtocol, "grpc")
	stop, err := Setup(context.Background(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, span := Start(context.Background(), "over grpc")
		span.End()
	}
	stop()
	if n := c.spans.Load(); n != 3 {
		t.Errorf("the collector got %d spans over gRPC, want 3", n)
	}
}
