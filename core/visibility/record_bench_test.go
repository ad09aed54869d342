package visibility_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aivis/aivis/client"
)

// BenchmarkRecord records readings that each change their domain's score,
// from 64 concurrent callers over 64 domains, on a database file: the
// write path of a reading and its event (the first stage of the event
// path BenchmarkDelivery measures whole), without the delivery engine.
func BenchmarkRecord(b *testing.B) {
	r, p, _ := setup(b)
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(n.Add(1))
		d := fmt.Sprintf("d%d.example.com", i%64)
		for j := 0; pb.Next(); j++ {
			score := 10 + j%2*10
			if _, _, err := r.Record(ctx, p, client.RecordReading{Domain: d, VisibilityScore: &score, Sentiment: "neutral"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "readings/s")
}
