package bench

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

var tracesFlag = flag.Bool("traces", false, "the `aivis serve` processes trace every request and event (OTEL_TRACES_SAMPLER=always_on) "+
	"to an OTLP/HTTP receiver in this process, which counts the spans")

// traceSink is the receiver of -traces: it reads each export, counts its
// spans and keeps nothing.
type traceSink struct {
	*httptest.Server
	spans, exports, bytes atomic.Int64
}

var (
	sinkOnce sync.Once
	sink     *traceSink
)

// serverEnv is the environment of an `aivis serve` the benchmarks start:
// this process's, and with -traces the OTLP endpoint of the sink, every
// span sampled, with a queue that holds what a busy second makes (so that
// the cost measured is that of every span sent); when tb ends, how many
// spans the sink got from it is printed.
func serverEnv(tb testing.TB) []string {
	if !*tracesFlag {
		return nil
	}
	sinkOnce.Do(func() {
		sink = &traceSink{}
		sink.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var req coltrace.ExportTraceServiceRequest
			if proto.Unmarshal(b, &req) == nil {
				n := 0
				for _, rs := range req.ResourceSpans {
					for _, ss := range rs.ScopeSpans {
						n += len(ss.Spans)
					}
				}
				sink.spans.Add(int64(n))
			}
			sink.exports.Add(1)
			sink.bytes.Add(int64(len(b)))
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
	})
	spans, exports, bytes := sink.spans.Load(), sink.exports.Load(), sink.bytes.Load()
	tb.Cleanup(func() {
		fmt.Printf("traces of an aivis serve: %d spans in %d exports (%.1f MB)\n",
			sink.spans.Load()-spans, sink.exports.Load()-exports, float64(sink.bytes.Load()-bytes)/(1<<20))
	})
	return append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_TRACES_SAMPLER=always_on",
		"OTEL_BSP_MAX_QUEUE_SIZE=65536")
}
