package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
)

// BenchmarkScanProbes runs a scan's probes of one domain, 3 engines × 20
// prompts × 3 runs (180 requests), against the fake engine: answering at
// once (aivis's own rate), then answering in 50 ms (aivis's overhead over
// the ideal wall time the engines' latency and concurrency allow).
func BenchmarkScanProbes(b *testing.B) {
	f := probefake.New()
	defer f.Close()
	answer := "For rocket skates, Acme (https://acme.example/skates) leads; Globex and Initech follow. Acme is fast and reliable, Globex is cheaper."
	const conc = 4
	var engines []probe.Engine
	for i := range 3 {
		model := fmt.Sprint("model-", i)
		f.Answer(model, answer)
		engines = append(engines, probe.Engine{Label: model, BaseURL: f.URL(), Model: model, Concurrency: conc})
	}
	prompts := make([]string, 20)
	for i := range prompts {
		prompts[i] = fmt.Sprintf("Which rocket skates are best for use case %d?", i)
	}
	subject := probe.Subject{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex", "Initech"}, Prompts: prompts}
	p := &probe.Prober{Client: &probe.Client{HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}, Engines: engines, Runs: 3, MaxPrompts: 20}
	for range b.N {
		for _, delay := range []time.Duration{0, 50 * time.Millisecond} {
			f.Delay = delay
			before := f.Requests()
			start := time.Now()
			res := p.Run(context.Background(), subject)
			wall := time.Since(start)
			n := f.Requests() - before
			if n != 180 || res.Overall.Failed != 0 || res.Overall.Mention.Value != 1 {
				b.Fatalf("%d requests, %+v", n, res.Overall)
			}
			for _, e := range res.Engines {
				if e.MaxInFlight > conc {
					b.Fatalf("%s had %d in flight, configured %d", e.Label, e.MaxInFlight, conc)
				}
			}
			if delay == 0 {
				b.Logf("answering at once: 180 requests in %v, %.0f requests/s, at most %d in flight per engine (configured %d)",
					wall.Round(time.Microsecond), float64(n)/wall.Seconds(), res.Engines[0].MaxInFlight, conc)
				b.ReportMetric(float64(n)/wall.Seconds(), "requests/s")
				b.ReportMetric(float64(wall.Microseconds())/1000, "wall-ms")
				continue
			}
			// Each engine: 60 requests, conc at a time, delay each.
			ideal := time.Duration(math.Ceil(60.0/conc)) * delay
			overhead := (wall.Seconds()/ideal.Seconds() - 1) * 100
			b.Logf("answering in %v: %v against an ideal %v: aivis overhead %.1f%%", delay, wall.Round(time.Microsecond), ideal, overhead)
			b.ReportMetric(overhead, fmt.Sprintf("overhead-%%-at-%dms", delay.Milliseconds()))
		}
	}
}
