package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
)

// BenchmarkScanProbes runs a scan's probes of one domain, 3 engines × 20
// prompts × 3 runs (180 requests), against the fake engine, with engines
// of each kind in turn and then one engine of every kind at once:
// answering at once (aivis's own rate), then answering in 50 ms (aivis's
// overhead over the ideal wall time the engines' latency and concurrency
// allow). Every answer cites the subject's domain and two others, in the
// shape of its kind.
func BenchmarkScanProbes(b *testing.B) {
	f := probefake.New()
	defer f.Close()
	text := "For rocket skates, Acme leads; Globex and Initech follow. Acme is fast and reliable, Globex is cheaper."
	reply := probefake.Reply{Text: text, Queries: []string{"best rocket skates"},
		Sources: []probefake.Source{{URL: "https://acme.example/skates", Title: "acme.example"},
			{URL: "https://reviews.example/skates", Title: "reviews.example"}, {URL: "https://globex.example/", Title: "globex.example"}},
		Citations: []probefake.Citation{{URL: "https://acme.example/skates", Title: "acme.example", Quote: "Acme leads"},
			{URL: "https://reviews.example/skates", Title: "reviews.example", Quote: "Acme is fast and reliable"}}}
	const conc = 4
	engine := func(kind string, i int) probe.Engine {
		// A chat model cites as search models do, which take no temperature.
		model := fmt.Sprintf("%s-search-%d", kind, i)
		label := model
		switch kind {
		case probe.KindDataForSEO:
			model = probe.DataForSEOOverview // its model names the page it reads
		case probe.KindSerpAPI:
			model = "google_ai_overview"
		}
		f.Script(model, reply)
		base := f.Root()
		switch {
		case strings.HasPrefix(kind, "openai"):
			base = f.URL()
		case kind == probe.KindXAI:
			base = f.XAI()
		}
		return probe.Engine{Label: label, Kind: kind, BaseURL: base, Model: model, APIKey: "bench-login:bench-key", Concurrency: conc}
	}
	type phase struct {
		name    string
		engines []probe.Engine
	}
	var phases []phase
	var every []probe.Engine
	for _, kind := range probe.Kinds {
		ph := phase{name: kind}
		for i := range 3 {
			ph.engines = append(ph.engines, engine(kind, i))
		}
		phases = append(phases, ph)
		every = append(every, engine(kind, 3))
	}
	phases = append(phases, phase{name: "every kind", engines: every})
	prompts := make([]probe.Prompt, 20)
	for i := range prompts {
		prompts[i] = probe.Prompt{Text: fmt.Sprintf("Which rocket skates are best for use case %d?", i)}
	}
	subject := probe.Subject{Domain: "acme.example", Brands: []string{"Acme"}, Competitors: []string{"Globex", "Initech"}, Prompts: prompts}
	client := &probe.Client{HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	for range b.N {
		for _, ph := range phases {
			p := &probe.Prober{Client: client, Engines: ph.engines, Runs: 3, MaxPrompts: 20}
			want := len(ph.engines) * 60
			for _, delay := range []time.Duration{0, 50 * time.Millisecond} {
				f.Delay = delay
				before := f.Requests()
				start := time.Now()
				res := p.Run(context.Background(), subject)
				wall := time.Since(start)
				n := f.Requests() - before
				if n != want || res.Overall.Failed != 0 || res.Overall.Mention.Value != 1 || res.Overall.Citation.Value != 1 {
					b.Fatalf("%s: %d requests, %+v", ph.name, n, res.Overall)
				}
				for _, e := range res.Engines {
					if e.MaxInFlight > conc {
						b.Fatalf("%s had %d in flight, configured %d", e.Label, e.MaxInFlight, conc)
					}
				}
				key := strings.ReplaceAll(ph.name, " ", "-")
				if delay == 0 {
					b.Logf("%s, answering at once: %d requests in %v, %.0f requests/s, at most %d in flight per engine (configured %d)",
						ph.name, n, wall.Round(time.Microsecond), float64(n)/wall.Seconds(), res.Engines[0].MaxInFlight, conc)
					b.ReportMetric(float64(n)/wall.Seconds(), key+"-requests/s")
					continue
				}
				// Each engine: 60 requests, conc at a time, delay each.
				ideal := time.Duration(math.Ceil(60.0/conc)) * delay
				overhead := (wall.Seconds()/ideal.Seconds() - 1) * 100
				b.Logf("%s, answering in %v: %v against an ideal %v: aivis overhead %.1f%%", ph.name, delay, wall.Round(time.Microsecond), ideal, overhead)
				b.ReportMetric(overhead, fmt.Sprintf("%s-overhead-%%-at-%dms", key, delay.Milliseconds()))
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}
