// Package otlptest is an OTLP/HTTP trace receiver for tests: an HTTP
// server that takes what an OpenTelemetry exporter sends to /v1/traces
// (protobuf ExportTraceServiceRequest, gzipped or not) and keeps every
// span, with its resource's attributes.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a span as received, its ids in hexadecimal and its attributes
// as text.
type Span struct {
	Name                  string
	TraceID, ID, ParentID string // ParentID "" for a root
	Kind                  string // SPAN_KIND_SERVER, ...
	Attributes            map[string]string
	Resource              map[string]string
	Links                 []Link
	Status                string // STATUS_CODE_UNSET, _OK, _ERROR
	StatusMessage         string
}

// Link is a span's link to another.
type Link struct{ TraceID, ID string }

// Receiver is a running receiver.
type Receiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []Span
	requests int
	status   int // the answer; 0: 200
}

// New starts a receiver, closed when the test ends. Its URL is what
// OTEL_EXPORTER_OTLP_ENDPOINT takes.
func New(tb testing.TB) *Receiver {
	r := &Receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	tb.Cleanup(r.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, err := io.ReadAll(body)
	var in coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &in)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests++
	status := r.status
	if status == 0 {
		for _, rs := range in.ResourceSpans {
			res := attrs(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), ID: hex.EncodeToString(s.SpanId),
						ParentID: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind.String(), Attributes: attrs(s.Attributes),
						Resource: res, Status: s.GetStatus().GetCode().String(), StatusMessage: s.GetStatus().GetMessage()}
					for _, l := range s.Links {
						sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.TraceId), ID: hex.EncodeToString(l.SpanId)})
					}
					r.spans = append(r.spans, sp)
				}
			}
		}
	}
	r.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// attrs is a list of attributes as text: a string as it is, any other
// value as its protobuf text.
func attrs(kvs []*common.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *common.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *common.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(x.IntValue)
		case *common.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(x.BoolValue)
		case *common.AnyValue_DoubleValue:
			m[kv.Key] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}

// Answer makes the receiver answer every export with status (0: 200,
// keeping the spans); one refused keeps nothing.
func (r *Receiver) Answer(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

// Spans is every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests is how many exports came, taken or refused.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Wait polls, until a deadline, for the spans received to hold what
// found looks for, and returns them; past the deadline the test fails,
// with every span's name.
func (r *Receiver) Wait(tb testing.TB, what string, timeout time.Duration, found func([]Span) bool) []Span {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if found(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			names := make([]string, len(spans))
			for i, s := range spans {
				names[i] = s.Name
			}
			tb.Fatalf("no %s among the %d spans received within %s: %q", what, len(spans), timeout, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Trace is the spans of one trace.
func Trace(spans []Span, traceID string) []Span {
	var out []Span
	for _, s := range spans {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// Named is the first span of a name, and whether there is one.
func Named(spans []Span, name string) (Span, bool) {
	for _, s := range spans {
		if s.Name == name {
			return s, true
		}
	}
	return Span{}, false
}
