package lift

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Without answers every estimate is insufficient, says why, and cannot
// say what scans after the change would do.
func TestEmpty(t *testing.T) {
	rep, err := Compute(Request{Change: change0})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Engines) != 0 || rep.Before.Scans != 0 || rep.After.Scans != 0 || rep.Targeted {
		t.Errorf("report of nothing: %+v", rep)
	}
	for _, e := range rep.Overall.Metrics {
		d := e.Difference
		if d.Status != StatusInsufficient || !strings.Contains(d.Reason, "no scan before") || d.ScansNeeded != -1 || e.DiD != nil {
			t.Errorf("%s: %+v, want insufficient_data, no scan before, scans needed -1, no DiD", e.Metric, d)
		}
	}
}

// Before the first scan after the change, the estimates are insufficient
// and say what window detects a 10-point lift; and that window does, in
// about 80% of worlds where the lift is real (the power the number is
// computed for).
func TestScansNeeded(t *testing.T) {
	w := world{prompts: 30, samples: 2, engines: 1, before: 20, cite: 0.2, mention: 0.5, common: 0.1}
	rep, err := Compute(Request{Answers: w.answers(1), Change: change0, Scans: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.metric(MetricCitation)
	if d := c.Difference; d.Status != StatusInsufficient || d.Reason != "no scan after the change" || d.ScansNeeded < 1 || d.MoreScans != d.ScansNeeded || d.Effect != DefaultEffect {
		t.Fatalf("before any scan after: %+v, want insufficient_data, no scan after the change, scans needed ≥ 1 all to come", d)
	}
	// By hand, for p = c.Before.Value, design effect deff, 60 answers a
	// scan: a window of N scans a side has the variance
	// (p(1−p) + p'(1−p'))·deff/(60N), p' = p + 0.1, which must come to
	// (0.1 / (1.96 + 0.84))²; N within the 20 scans before the change.
	p, deff := c.Before.Value, c.Before.DesignEffect
	budget := math.Pow(0.1/(1.959964+0.841621), 2)
	want := math.Ceil((p*(1-p) + (p+0.1)*(0.9-p)) * deff / 60 / budget)
	if float64(c.Difference.ScansNeeded) != want || want > 20 {
		t.Errorf("scans needed %d, want %v (p %.3f, deff %.3f)", c.Difference.ScansNeeded, want, p, deff)
	}
	t.Logf("p %.3f deff %.3f: a window of %d scans", p, deff, c.Difference.ScansNeeded)

	// With only 4 scans before the change, the window after must make up
	// for them: N scans after, 4 before.
	short := w
	short.before = 4
	rep, _ = Compute(Request{Answers: short.answers(1), Change: change0, Scans: 10})
	c4 := rep.metric(MetricCitation)
	p, deff = c4.Before.Value, c4.Before.DesignEffect
	rest := budget - p*(1-p)*deff/240
	if want := math.Ceil((p + 0.1) * (0.9 - p) * deff / 60 / rest); rest <= 0 || float64(c4.Difference.ScansNeeded) != want {
		t.Errorf("4 scans before: scans needed %d, want %v (p %.3f, deff %.3f)", c4.Difference.ScansNeeded, want, p, deff)
	}
	// With 1 scan before, no window after can make up for it.
	short.before = 1
	rep, _ = Compute(Request{Answers: short.answers(1), Change: change0, Scans: 10})
	if d := rep.metric(MetricCitation).Difference; d.ScansNeeded != -1 || d.MoreScans != -1 {
		t.Errorf("1 scan before: %+v, want -1 scans needed", d)
	}

	n := c.Difference.ScansNeeded
	w.after = n
	detected := 0
	const runs = 200
	for seed := range uint64(runs) {
		rep, err := Compute(Request{Answers: w.answers(100 + seed), Change: change0, Scans: n})
		if err != nil {
			t.Fatal(err)
		}
		if d := rep.metric(MetricCitation).Difference; d.excludes0() && d.Estimate > 0 {
			detected++
		}
	}
	t.Logf("a 10-point lift detected in %d of %d worlds with windows of %d scans", detected, runs, n)
	if detected < runs*70/100 || detected > runs*95/100 {
		t.Errorf("detected in %d of %d, want about 80%%", detected, runs)
	}
}

// Answers that never or always hit give an interval about 0 of a width
// the answers bear, never NaN.
func TestAllOrNothing(t *testing.T) {
	for _, cite := range []float64{0, 1} {
		w := world{prompts: 10, samples: 3, engines: 1, before: 5, after: 5, cite: 0.5, mention: 0.5}
		as := w.answers(3)
		for i := range as {
			as[i].Cited = cite == 1
		}
		rep, err := Compute(Request{Answers: as, Change: change0})
		if err != nil {
			t.Fatal(err)
		}
		d := rep.metric(MetricCitation).Difference
		if d.Status != StatusOK || d.Estimate != 0 || !d.holds(0) || d.Interval.High-d.Interval.Low < 0.01 ||
			math.IsNaN(d.Interval.Low) || math.IsNaN(d.Interval.High) || d.Interval.Low < -1 || d.Interval.High > 1 {
			t.Errorf("citation rate always %v: %+v", cite, d)
		}
	}
}

// Shares that never vary (a domain no source ever names, a brand always
// named first) bear no bootstrap interval: insufficient, not [0, 0].
func TestNoVariation(t *testing.T) {
	w := world{prompts: 10, samples: 3, engines: 2, before: 7, after: 7, cite: 0.3, mention: 0.5}
	as := w.answers(8)
	for i := range as {
		as[i].Sources.Hits = 0
		if as[i].Mentioned {
			as[i].Position = 1
		}
	}
	rep, err := Compute(Request{Answers: as, Change: change0})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{MetricSourceShare, MetricPosition} {
		e := rep.metric(m)
		if d := e.Difference; d.Status != StatusInsufficient || !strings.Contains(d.Reason, "do not vary") || e.Before.Units < MinUnits {
			t.Errorf("%s never varying: %+v over %d answers, want insufficient_data, the answers do not vary", m, d, e.Before.Units)
		}
	}
}

// An insufficient difference has no estimate and no interval on the
// wire; a sufficient one has both, 0 included.
func TestDiffJSON(t *testing.T) {
	for _, tc := range []struct {
		d    Diff
		want string
	}{
		{Diff{Status: StatusInsufficient, Reason: "no scan after the change", Effect: 0.1, ScansNeeded: 6, MoreScans: 6},
			`{"status":"insufficient_data","reason":"no scan after the change","effect":0.1,"scans_needed":6,"more_scans":6}`},
		{Diff{Status: StatusOK, Method: MethodNewcombe, Interval: Interval{-0.1, 0.1}, Effect: 0.1, ScansNeeded: 6},
			`{"status":"ok","method":"newcombe_clustered","estimate":0,"interval_95":{"low":-0.1,"high":0.1},"effect":0.1,"scans_needed":6,"more_scans":0}`},
	} {
		b, err := json.Marshal(tc.d)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v as JSON: %s %v, want %s", tc.d, b, err, tc.want)
		}
	}
}

// One prompt is too few for any interval, and more scans cannot help.
func TestOnePrompt(t *testing.T) {
	w := world{prompts: 1, samples: 3, engines: 2, before: 14, after: 14, cite: 0.3, mention: 0.5}
	rep, err := Compute(Request{Answers: w.answers(4), Change: change0})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range append(rep.Engines, rep.Overall) {
		for _, e := range l.Metrics {
			if d := e.Difference; d.Status != StatusInsufficient || !strings.Contains(d.Reason, "too few prompts") || d.ScansNeeded != -1 || d.MoreScans != -1 {
				t.Errorf("%s %s: %+v, want insufficient_data for too few prompts, scans needed -1", l.Engine, e.Metric, d)
			}
		}
	}
}

// A change that targets every prompt has no control: its DiD is
// insufficient, its difference is not.
func TestNoControl(t *testing.T) {
	w := world{prompts: 10, targeted: 10, samples: 3, engines: 2, before: 7, after: 7, cite: 0.3, mention: 0.5}
	rep, err := Compute(Request{Answers: w.answers(5), Change: change0})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.metric(MetricCitation)
	if !rep.Targeted || c.Difference.Status != StatusOK || c.DiD == nil || c.DiD.Status != StatusInsufficient ||
		!strings.HasPrefix(c.DiD.Reason, "untargeted prompts: too few prompts") || c.Control == nil || c.Control.Before.Units != 0 {
		t.Errorf("every prompt targeted: %+v", c)
	}
}

// The windows are the last N scans before the change and the first N
// after; the rest is left out.
func TestWindows(t *testing.T) {
	w := world{prompts: 6, samples: 2, engines: 3, before: 30, after: 30, cite: 0.3, mention: 0.5}
	rep, err := Compute(Request{Answers: w.answers(6), Change: change0, Scans: 7})
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	want := [2]Window{{7, change0.Add(-7*day + 6*time.Hour), change0.Add(-day + 6*time.Hour)}, {7, change0.Add(6 * time.Hour), change0.Add(6*day + 6*time.Hour)}}
	if rep.Before != want[0] || rep.After != want[1] || rep.Scans != 7 {
		t.Errorf("windows %+v and %+v, want %+v", rep.Before, rep.After, want)
	}
	m := rep.metric(MetricMention)
	if m.Before.Units != 7*6*2*3 || m.After.Units != 7*6*2*3 || m.Before.Scans != 7 || m.Before.Prompts != 6 {
		t.Errorf("mention rate's sides %+v and %+v: want 252 answers of 6 prompts in 7 scans each", m.Before, m.After)
	}
	if e := rep.Engines[2]; e.Engine != "engine-2" || e.Metrics[0].After.Units != 7*6*2 {
		t.Errorf("engine-2: %s with %d answers after, want 84", e.Engine, e.Metrics[0].After.Units)
	}
}

// The same request gives the same report, bootstrap and all.
func TestReproducible(t *testing.T) {
	w := world{prompts: 12, targeted: 6, samples: 3, engines: 3, before: 7, after: 7, cite: 0.3, mention: 0.5, spread: 0.5, drift: 0.2}
	req := Request{Answers: w.answers(7), Change: change0, Seed: 42}
	a, err := Compute(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Compute(req)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same request gave two reports")
	}
	p := a.metric(MetricPosition)
	if p.Difference.Method != MethodBootstrap || p.Difference.Status != StatusOK || !(p.Difference.Interval.Low < p.Difference.Interval.High) {
		t.Errorf("position: %+v, want a bootstrap interval", p.Difference)
	}
}

// A request out of bounds is refused.
func TestBounds(t *testing.T) {
	one := []Answer{{Scan: "s", Engine: "e", Prompt: "p"}}
	for name, req := range map[string]Request{
		"scans":     {Scans: MaxScans + 1},
		"negative":  {Scans: -1},
		"resamples": {Resamples: 10},
		"effect":    {Effect: 1.5},
		"position":  {PositionEffect: -1},
		"part":      {Answers: []Answer{{Scan: "s", Voice: Count{2, 1}}}},
		"rank":      {Answers: []Answer{{Scan: "s", Position: -1}}},
		"no scan":   {Answers: []Answer{{Prompt: "p"}}},
	} {
		if _, err := Compute(req); err == nil || !strings.HasPrefix(err.Error(), "lift: ") {
			t.Errorf("%s: %v, want an error of lift", name, err)
		}
	}
	if _, err := Compute(Request{Answers: one, Scans: MaxScans}); err != nil {
		t.Errorf("at the bounds: %v", err)
	}
}
