package changes_test

import (
	"testing"
	"time"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/lift"
)

// BenchmarkLift is the lift of a change of a domain with a year of daily
// scans (365 scans of 20 prompts asked 3 times of 4 engines: 87,600
// answers, one in ten failed, each with 1.5 kB of text), on SQLite, end
// to end: the scans around the change, the engines of those before it,
// the windows' answers, lift.Compute. The change went live half way.
func BenchmarkLift(b *testing.B) {
	s, reopen := engines[0].open(b)
	e := newEnv(b, s, 20)
	w := world{prompts: 20, targeted: 10, samples: 3, engines: []string{"gpt", "sonar", "claude", "gemini"}, before: 182, after: 183,
		cite: 0.20, citeTargeted: 0.45, citeOthers: 0.25, seed: 1, textBytes: 1500}
	start := time.Now()
	w.store(b, s, e.d, lift.DefaultScans)
	b.Logf("filled a year of scans (87,600 answers) in %s", time.Since(start).Round(time.Millisecond))
	// Measured on a handle opened after the fill, its writes checkpointed
	// into the file as a server's are (closing checkpoints them).
	must(b, s.Close())
	e.s = reopen(b)
	e.svc.Store = e.s
	var targets []string
	for i := range w.targeted {
		targets = append(targets, promptText(i))
	}
	e.clock.Set(t0.Add(200 * 24 * time.Hour))
	c, err := e.svc.Create(b.Context(), e.d, changes.NewChange{Title: "Rewrote the guides", At: t0, Prompts: targets})
	must(b, err)
	for _, scans := range []int{lift.DefaultScans, lift.MaxScans} {
		b.Run("window="+itoa(scans), func(b *testing.B) {
			for b.Loop() {
				got, err := e.svc.Lift(b.Context(), e.d, c.ID, changes.LiftOptions{Scans: scans})
				if err != nil || got.Report.After.Scans != scans {
					b.Fatalf("lift: %v, %d scans after", err, got.Report.After.Scans)
				}
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
