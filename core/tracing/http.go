package tracing

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// w3c reads and writes the W3C trace context (traceparent, tracestate).
var w3c propagation.TraceContext

// Request starts the server span of an HTTP request when tracing is on,
// and returns the request with the span in its context, and the function
// that ends the span once the status is known (0: nothing was written,
// net/http's 200). Off, it returns r as it is and a function that does
// nothing. A caller's W3C traceparent is the span's parent. The span is
// named after the method alone until Route, a middleware of the router,
// names it after the route's pattern as chi matched it ("POST
// /v1/visibility", "GET /v1/webhooks/{id}"), never the path; its
// attributes are the method, the route, the status, the scheme and the
// protocol's version: no query, no path, no header, no address.
func Request(r *http.Request) (*http.Request, func(status int)) {
	if !Enabled() {
		return r, noEnd
	}
	ctx := w3c.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method := methodName(r.Method)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	ctx, span := Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(method), semconv.URLSchemeKey.String(scheme),
		semconv.NetworkProtocolVersionKey.String(protocolVersion(r))))
	return r.WithContext(ctx), func(status int) {
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(status))
		if status >= 500 {
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

func noEnd(int) {}

// Route is the router's first middleware: once the request is served, it
// names the request's span (Request's) after the route's pattern chi
// matched, and sets http.route. The pattern is known only once the
// request is routed, inside the router. Off, it is next.
func Route(next http.Handler) http.Handler {
	if !Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		rctx := chi.RouteContext(r.Context())
		if rctx == nil {
			return
		}
		if route := rctx.RoutePattern(); route != "" {
			span := trace.SpanFromContext(r.Context())
			span.SetName(methodName(r.Method) + " " + route)
			span.SetAttributes(semconv.HTTPRouteKey.String(route))
		}
	})
}

// methodName is the method as a span names it: one of HTTP's, else
// _OTHER (a client may send any word).
func methodName(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor >= 2:
		return strconv.Itoa(r.ProtoMajor)
	case r.ProtoMinor == 0:
		return "1.0"
	}
	return "1.1"
}
