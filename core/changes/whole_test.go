package changes_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

// everyAnswer is every kept answer of the domain's scans as lift's field
// docs map them, read through the API's own reading of an answer
// (visibility.AnswerView), failures left out.
func everyAnswer(t *testing.T, s store.Store, d store.MonitoredDomain, targets []string) []lift.Answer {
	t.Helper()
	var out []lift.Answer
	f := store.ScanFilter{AccountID: d.AccountID, ClientID: d.ClientID, Domain: d.Domain, Limit: 100}
	for {
		scans, next, err := s.ListScans(ctx, f)
		must(t, err)
		for _, sc := range scans {
			af := store.AnswerFilter{AccountID: d.AccountID, ScanID: sc.ID, Limit: 100}
			for {
				page, next, err := s.ListScanAnswers(ctx, af)
				must(t, err)
				for _, a := range page {
					if a.Error != "" {
						continue
					}
					v, err := visibility.AnswerView(a)
					must(t, err)
					la := lift.Answer{Scan: sc.ID, At: sc.FinishedAt, Engine: a.Engine, Prompt: a.Prompt, Mentioned: a.Mentioned, Cited: a.Cited,
						Position: a.Position, Targeted: slices.ContainsFunc(targets, func(p string) bool { return strings.EqualFold(p, a.Prompt) })}
					if a.Mentioned {
						la.Voice.Hits = 1
					}
					la.Voice.Of = la.Voice.Hits + len(v.Competitors)
					if a.SourcesReported {
						var domains []string
						for _, src := range v.Sources {
							domains = append(domains, src.Domain)
						}
						for _, c := range v.Citations {
							domains = append(domains, c.Domain)
						}
						seen := map[string]bool{}
						for _, dom := range domains {
							if dom == "" || seen[dom] {
								continue
							}
							seen[dom] = true
							la.Sources.Of++
							if dom == domainName || strings.HasSuffix(strings.TrimPrefix(dom, "www."), "."+domainName) || dom == "www."+domainName {
								la.Sources.Hits++
							}
						}
					}
					out = append(out, la)
				}
				if af.Cursor = next; next == "" {
					break
				}
			}
		}
		if f.Cursor = next; next == "" {
			break
		}
	}
	return out
}

// A lift that reads the windows' answers and only which engines answered
// in the scans before them is the lift of every answer the domain kept:
// the same windows, figures and intervals of the rates, and the same
// scans needed (which count the scans before the window), every measure
// of every engine.
func TestLiftIsTheLiftOfEveryAnswer(t *testing.T) {
	s, _ := engines[0].open(t)
	e := newEnv(t, s, scenario.prompts)
	w := scenario
	w.before, w.after = 40, 12
	w.store(t, s, e.d, 7)
	targets := []string{promptText(0), promptText(1), promptText(2), promptText(3), promptText(4), promptText(5)}
	e.clock.Set(t0.Add(20 * 24 * time.Hour))
	c, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "Rewrote six guides", At: t0, Prompts: targets})
	must(t, err)
	all := everyAnswer(t, s, e.d, targets)
	for _, n := range []int{3, 7, 30} {
		got, err := e.svc.Lift(ctx, e.d, c.ID, changes.LiftOptions{Scans: n, Effect: 0.05})
		must(t, err)
		want, err := lift.Compute(lift.Request{Answers: all, Change: t0, Scans: n, Effect: 0.05})
		must(t, err)
		g, w := got.Report, want
		if g.Before != w.Before || g.After != w.After || g.Targeted != w.Targeted || len(g.Engines) != len(w.Engines) {
			t.Fatalf("windows of %d: before %+v, after %+v, targeted %v, %d engines; want %+v, %+v, %v, %d", n, g.Before, g.After, g.Targeted,
				len(g.Engines), w.Before, w.After, w.Targeted, len(w.Engines))
		}
		for i, gl := range append([]lift.Lift{g.Overall}, g.Engines...) {
			wl := append([]lift.Lift{w.Overall}, w.Engines...)[i]
			for k, ge := range gl.Metrics {
				we := wl.Metrics[k]
				same := func(what string, a, b lift.Diff) {
					if a.ScansNeeded != b.ScansNeeded || a.MoreScans != b.MoreScans || a.Status != b.Status {
						t.Errorf("windows of %d, %q %s %s: needed %d (%d more), %s; want %d (%d more), %s", n, gl.Engine, ge.Metric, what,
							a.ScansNeeded, a.MoreScans, a.Status, b.ScansNeeded, b.MoreScans, b.Status)
					}
					if ge.Metric != lift.MetricMention && ge.Metric != lift.MetricCitation {
						return // a bootstrap's resamples differ with the seed
					}
					if math.Abs(a.Estimate-b.Estimate) > 1e-9 || math.Abs(a.Interval.Low-b.Interval.Low) > 1e-9 ||
						math.Abs(a.Interval.High-b.Interval.High) > 1e-9 {
						t.Errorf("windows of %d, %q %s %s: %+v; want %+v", n, gl.Engine, ge.Metric, what, a, b)
					}
				}
				same("difference", ge.Difference, we.Difference)
				if (ge.DiD == nil) != (we.DiD == nil) {
					t.Fatalf("windows of %d, %q %s: DiD %v, want %v", n, gl.Engine, ge.Metric, ge.DiD, we.DiD)
				}
				if ge.DiD != nil {
					same("DiD", *ge.DiD, *we.DiD)
					same("control", ge.Control.Difference, we.Control.Difference)
				}
				for s, side := range [][2]lift.Side{{ge.Before, we.Before}, {ge.After, we.After}} {
					if side[0].Units != side[1].Units || side[0].Prompts != side[1].Prompts || side[0].Scans != side[1].Scans ||
						math.Abs(side[0].Value-side[1].Value) > 1e-9 {
						t.Errorf("windows of %d, %q %s, side %d: %+v; want %+v", n, gl.Engine, ge.Metric, s, side[0], side[1])
					}
				}
			}
		}
	}
}
