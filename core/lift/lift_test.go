package lift

import (
	"math"
	"testing"
)

// A change that lifts its prompts' citation rate from 20% to 45% while
// every prompt gains 5 points (a model update): the
// difference-in-differences finds the 20 points of the change, its
// interval holds them and excludes 0; the targeted prompts' own
// difference holds the 25 points they moved, the others' the 5.
func TestLiftOfATargetedChange(t *testing.T) {
	w := world{prompts: 20, targeted: 10, samples: 3, engines: 4, before: 14, after: 14,
		cite: 0.20, mention: 0.5, spread: 0.2, lift: 0.20, common: 0.05}
	rep, err := Compute(Request{Answers: w.answers(1), Change: change0, Scans: 14, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Targeted || rep.Before.Scans != 14 || rep.After.Scans != 14 || len(rep.Engines) != 4 {
		t.Fatalf("report: targeted %v, scans %d and %d, engines %d; want true, 14, 14, 4", rep.Targeted, rep.Before.Scans, rep.After.Scans, len(rep.Engines))
	}
	c := rep.metric(MetricCitation)
	t.Logf("citation: targeted %.3f → %.3f %+v; control %.3f → %.3f %+v; DiD %+v",
		c.Before.Value, c.After.Value, c.Difference, c.Control.Before.Value, c.Control.After.Value, c.Control.Difference, *c.DiD)
	if !c.DiD.holds(0.20) || !c.DiD.excludes0() || c.DiD.Method != MethodClusterT {
		t.Errorf("DiD %+v: want an interval by %s holding +0.20 and excluding 0", *c.DiD, MethodClusterT)
	}
	if !c.Difference.holds(0.25) || c.Difference.Method != MethodNewcombe {
		t.Errorf("targeted difference %+v: want +0.25 within its interval by %s", c.Difference, MethodNewcombe)
	}
	if !c.Control.Difference.holds(0.05) {
		t.Errorf("untargeted difference %+v: want +0.05 within its interval", c.Control.Difference)
	}
	if c.DiD.Interval.High-c.DiD.Interval.Low > 0.15 {
		t.Errorf("DiD interval %+v wider than 15 points on %d answers a side", c.DiD.Interval, c.Before.Units)
	}
	for _, l := range rep.Engines {
		for _, e := range l.Metrics {
			if e.Metric == MetricCitation && !e.DiD.excludes0() {
				t.Errorf("%s: DiD %+v does not exclude 0", l.Engine, *e.DiD)
			}
		}
	}
	// Nothing else moved: the mention rate's DiD holds 0.
	if m := rep.metric(MetricMention); !m.DiD.holds(0) {
		t.Errorf("mention rate DiD %+v, want 0 within its interval", *m.DiD)
	}
}

// On 200 worlds where the change does nothing (each prompt its own rates,
// drifting by chance from one side to the other), each interval excludes
// 0 in at most 8% of them: the intervals are as wide as the answers'
// clustering on prompts makes the uncertainty.
func TestNullCoverage(t *testing.T) {
	const runs = 200
	w := world{prompts: 20, targeted: 10, samples: 3, engines: 2, before: 7, after: 7,
		cite: 0.25, mention: 0.5, spread: 0.8, drift: 0.25}
	type check struct {
		name string
		diff func(Report) *Diff
	}
	checks := []check{}
	for _, m := range Metrics {
		checks = append(checks,
			check{m + " difference", func(r Report) *Diff { e := r.metric(m); return &e.Difference }},
			check{m + " DiD", func(r Report) *Diff { return r.metric(m).DiD }},
			check{m + " difference, engine-1", func(r Report) *Diff { e := r.Engines[1].Metrics[indexOf(m)]; return &e.Difference }})
	}
	excluded := make([]int, len(checks))
	for seed := range uint64(runs) {
		rep, err := Compute(Request{Answers: w.answers(1000 + seed), Change: change0, Scans: 7, Seed: seed, Resamples: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range checks {
			d := c.diff(rep)
			if d.Status != StatusOK {
				t.Fatalf("seed %d: %s: %s", seed, c.name, d.Reason)
			}
			if d.excludes0() {
				excluded[i]++
			}
		}
	}
	for i, c := range checks {
		t.Logf("%-40s excludes 0 in %3d of %d", c.name, excluded[i], runs)
		if excluded[i] > runs*8/100 {
			t.Errorf("%s: the interval excludes 0 in %d of %d runs of a change without effect, more than 8%%", c.name, excluded[i], runs)
		}
	}
}

func indexOf(metric string) int {
	for k, m := range Metrics {
		if m == metric {
			return k
		}
	}
	return -1
}

// A model update moves every prompt's citation rate by 8 points and the
// change does nothing: the targeted prompts' difference sees the 8
// points, the difference-in-differences removes them, about 0 on
// average, and its interval excludes 0 in at most 8% of 200 worlds.
func TestDiDRemovesACommonMove(t *testing.T) {
	const runs = 200
	w := world{prompts: 20, targeted: 10, samples: 3, engines: 2, before: 14, after: 14,
		cite: 0.25, mention: 0.5, spread: 0.5, drift: 0.15, common: 0.08}
	var diff, did float64
	moved, excluded := 0, 0
	for seed := range uint64(runs) {
		rep, err := Compute(Request{Answers: w.answers(3000 + seed), Change: change0, Seed: seed, Resamples: MinResamples})
		if err != nil {
			t.Fatal(err)
		}
		c := rep.metric(MetricCitation)
		diff += c.Difference.Estimate / runs
		did += c.DiD.Estimate / runs
		if c.Difference.excludes0() {
			moved++
		}
		if c.DiD.excludes0() {
			excluded++
		}
	}
	t.Logf("of %d worlds: the targeted difference %+.3f on average, excludes 0 in %d; the DiD %+.3f, excludes 0 in %d", runs, diff, moved, did, excluded)
	if excluded > runs*8/100 || math.Abs(did) > 0.01 || math.Abs(diff-0.08) > 0.02 {
		t.Errorf("DiD %+.3f excluding 0 in %d of %d (want about 0, at most 8%%), difference %+.3f (want about +0.08)", did, excluded, runs, diff)
	}
}
