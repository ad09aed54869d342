package tracing

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// What tracing adds to a request and to an event's message: off; on,
// every span sampled, kept by a processor that drops them (the cost of
// making them, not of sending them); on, none sampled (what a span a
// ratio sampler leaves out costs).
func BenchmarkRequest(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{{"off", nil}, {"on", sdktrace.AlwaysSample()}, {"sampled-out", sdktrace.NeverSample()}} {
		if c.sampler != nil {
			Use(sdktrace.NewTracerProvider(sdktrace.WithSampler(c.sampler), sdktrace.WithSpanProcessor(discard{})))
		}
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/v1/visibility?domain=example.com", nil)
			m := message.NewMessage("evt_1", nil)
			b.ReportAllocs()
			for b.Loop() {
				r, end := Request(req)
				ctx, span := Start(r.Context(), "publish")
				Inject(ctx, m)
				span.End()
				end(200)
			}
		})
		Use(nil)
	}
}

// discard is a span processor that keeps nothing.
type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
