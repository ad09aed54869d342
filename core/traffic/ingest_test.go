package traffic

import (
	"bufio"
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// BenchmarkIngest reads, classifies and aggregates generated batches of
// combined lines and Cloudflare records (plain and gzipped), a new
// Aggregator a batch, as the endpoint does. It reports lines/s (per core
// with -cpu 1) and bytes allocated per line; two batch sizes show the
// memory does not grow with the lines.
func BenchmarkIngest(b *testing.B) {
	loadGenAgents(b)
	c := NewCatalog(Snapshot())
	for _, src := range []struct {
		name, source string
		gzip         bool
	}{
		{"combined", store.TrafficFile, false},
		{"cloudflare", store.TrafficCloudflare, false},
		{"cloudflare-gzip", store.TrafficCloudflare, true},
	} {
		for _, lines := range []int{10_000, 100_000} {
			body := genBatch(b, src.source, lines)
			if src.gzip {
				body = gz(b, body, "", time.Time{}, 6)
			}
			b.Run(fmt.Sprintf("%s/%d", src.name, lines), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.ResetTimer()
				for b.Loop() {
					agg := NewAggregator(c, Assistant, "acc", "dom")
					batch, err := Read(src.source, bytes.NewReader(body), agg, 0)
					if err != nil || batch.Lines != int64(lines) {
						b.Fatalf("%+v %v", batch, err)
					}
					agg.CrawlerHits()
					agg.ReferralVisits()
				}
				b.StopTimer()
				runtime.ReadMemStats(&after)
				total := float64(lines) * float64(b.N)
				b.ReportMetric(total/b.Elapsed().Seconds(), "lines/s")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/total, "B/line")
			})
		}
	}
}

// genBatch is a batch of n generated requests of source.
func genBatch(b testing.TB, source string, n int) []byte {
	g := newGenerator(uint64(n))
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for range n {
		q := g.request()
		switch source {
		case store.TrafficFile:
			g.combinedLine(w, q)
		case store.TrafficCloudflare:
			g.cloudflareRecord(w, q)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}
