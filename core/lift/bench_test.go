package lift

import (
	"testing"
	"time"
)

// BenchmarkLift is the lift of a change half-way through a year of daily
// scans of 20 prompts (10 targeted), 3 samples each, on 4 engines:
// 87,600 answers, windows of the default 14 scans and of the longest
// (180, the whole year), 2,000 resamples per bootstrap.
func BenchmarkLift(b *testing.B) {
	w := world{prompts: 20, targeted: 10, samples: 3, engines: 4, before: 183, after: 182,
		cite: 0.2, mention: 0.5, spread: 0.5, drift: 0.2, lift: 0.1}
	answers := w.answers(1)
	for _, scans := range []int{DefaultScans, MaxScans} {
		b.Run(map[int]string{DefaultScans: "window=14", MaxScans: "window=180"}[scans], func(b *testing.B) {
			req := Request{Answers: answers, Change: change0, Scans: scans}
			for b.Loop() {
				if _, err := Compute(req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Millisecond), "ms/lift")
		})
	}
}
