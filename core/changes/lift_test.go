package changes_test

import (
	"math"
	"testing"
	"time"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/lift"
)

// scenario is the issue's: targeted prompts cited 20% of the time before
// the change and 45% after, the others 20% and 25% (every prompt gains 5
// points, as after a model update).
var scenario = world{prompts: 20, targeted: 10, samples: 3, engines: []string{"gpt", "sonar"}, before: 21, after: 14,
	cite: 0.20, citeTargeted: 0.45, citeOthers: 0.25, seed: 42, textBytes: 400}

func estimate(t *testing.T, l lift.Lift, metric string) lift.Estimate {
	t.Helper()
	for _, e := range l.Metrics {
		if e.Metric == metric {
			return e
		}
	}
	t.Fatalf("no %s in the lift of %q", metric, l.Engine)
	return lift.Estimate{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The lift of a change that targets half the prompts, read from the
// answers the scans kept: the difference-in-differences of the citation
// rate holds +20 points within its interval, which excludes 0; each side
// of each arm is what the test counts of the answers it stored
// (citations, the brand's share of voice, the domain's source share),
// failed probes left out; the same request gives the same report.
func TestLiftOfATargetedChange(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			s, _ := eng.open(t)
			e := newEnv(t, s, scenario.prompts)
			tl := scenario.store(t, s, e.d, lift.DefaultScans)
			var targets []string
			for i := range scenario.targeted {
				targets = append(targets, promptText(i))
			}
			e.clock.Set(t0.Add(15 * 24 * time.Hour))
			c, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "Rewrote the terrain guides", At: t0, Prompts: targets})
			must(t, err)
			got, err := e.svc.Lift(ctx, e.d, c.ID, changes.LiftOptions{})
			must(t, err)
			rep := got.Report
			if got.Change.ID != c.ID || !rep.Targeted || rep.Scans != lift.DefaultScans || rep.Before.Scans != lift.DefaultScans ||
				rep.After.Scans != lift.DefaultScans || len(rep.Engines) != 2 {
				t.Fatalf("report: change %s, targeted %v, windows %d: %+v / %+v, %d engines", got.Change.ID, rep.Targeted, rep.Scans,
					rep.Before, rep.After, len(rep.Engines))
			}
			cite := estimate(t, rep.Overall, lift.MetricCitation)
			did := cite.DiD
			t.Logf("citation rate: targeted %.3f -> %.3f, others %.3f -> %.3f; DiD %+.3f [%+.3f, %+.3f] (%s)", cite.Before.Value, cite.After.Value,
				cite.Control.Before.Value, cite.Control.After.Value, did.Estimate, did.Interval.Low, did.Interval.High, did.Method)
			if did.Status != lift.StatusOK || did.Interval.Low > 0.20 || did.Interval.High < 0.20 || did.Interval.Low <= 0 {
				t.Errorf("DiD of the citation rate: %+v; want +0.20 within its interval, which excludes 0", did)
			}
			if d := cite.Difference; d.Status != lift.StatusOK || d.Interval.Low > 0.25 || d.Interval.High < 0.25 {
				t.Errorf("targeted prompts' difference: %+v; want +0.25 within its interval", d)
			}
			for arm, a := range []lift.Arm{cite.Arm, *cite.Control} {
				for side, sd := range []lift.Side{a.Before, a.After} {
					want := float64(tl.cited[arm][side]) / float64(tl.answers[arm][side])
					if sd.Units != tl.answers[arm][side] || !near(sd.Value, want) || sd.Prompts != 10 || sd.Scans != lift.DefaultScans {
						t.Errorf("citation rate, arm %d, side %d: %+v; want %d answers, %.4f, 10 prompts, %d scans", arm, side, sd,
							tl.answers[arm][side], want, lift.DefaultScans)
					}
				}
			}
			voice, src := estimate(t, rep.Overall, lift.MetricShareOfVoice), estimate(t, rep.Overall, lift.MetricSourceShare)
			for side, sd := range []lift.Side{voice.Before, voice.After} {
				if want := float64(tl.voice[0][side]) / float64(tl.voiceOf[0][side]); !near(sd.Value, want) {
					t.Errorf("share of voice, targeted, side %d: %.4f, want %.4f", side, sd.Value, want)
				}
			}
			for side, sd := range []lift.Side{src.Before, src.After} {
				if want := float64(tl.src[0][side]) / float64(tl.srcOf[0][side]); !near(sd.Value, want) {
					t.Errorf("source share, targeted, side %d: %.4f, want %.4f", side, sd.Value, want)
				}
			}
			again, err := e.svc.Lift(ctx, e.d, c.ID, changes.LiftOptions{})
			must(t, err)
			if a := estimate(t, again.Report.Overall, lift.MetricPosition); a.Difference != estimate(t, rep.Overall, lift.MetricPosition).Difference {
				t.Errorf("the same lift twice: position %+v, then %+v", estimate(t, rep.Overall, lift.MetricPosition).Difference, a.Difference)
			}
		})
	}
}

// A window of 21 scans reaches the scans before the default window; the
// scans after the change are those that ended at or after it.
func TestLiftWindows(t *testing.T) {
	s, _ := engines[0].open(t)
	e := newEnv(t, s, scenario.prompts)
	scenario.store(t, s, e.d, lift.DefaultScans)
	e.clock.Set(t0.Add(15 * 24 * time.Hour))
	c, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "Site-wide FAQ markup", At: t0.Add(-3 * 24 * time.Hour)})
	must(t, err)
	got, err := e.svc.Lift(ctx, e.d, c.ID, changes.LiftOptions{Scans: 30})
	must(t, err)
	// 18 scans before the change, 17 after it.
	if r := got.Report; r.Targeted || r.Before.Scans != 18 || r.After.Scans != 17 ||
		!r.Before.From.Equal(t0.Add(-21*24*time.Hour+6*time.Hour)) || !r.After.From.Equal(t0.Add(-3*24*time.Hour+6*time.Hour)) {
		t.Errorf("windows of 30: targeted %v, before %+v, after %+v", r.Targeted, r.Before, r.After)
	}
	cite := estimate(t, got.Report.Overall, lift.MetricCitation)
	if cite.Control != nil || cite.DiD != nil || cite.Before.Prompts != 20 {
		t.Errorf("a change targeting no prompt: control %v, DiD %v, %d prompts", cite.Control, cite.DiD, cite.Before.Prompts)
	}
	for _, o := range []changes.LiftOptions{{Scans: -1}, {Scans: lift.MaxScans + 1}, {Effect: 1}, {Effect: -0.1}, {Effect: math.NaN()},
		{PositionEffect: -1}, {PositionEffect: math.NaN()}, {PositionEffect: math.Inf(1)}, {Resamples: 10}} {
		if _, err := e.svc.Lift(ctx, e.d, c.ID, o); !isField(err, "") {
			t.Errorf("Lift with %+v: %v, want a VALIDATION_ERROR", o, err)
		}
	}
	if _, err := e.svc.Lift(ctx, e.d, "chg_none", changes.LiftOptions{}); !isCode(err, fault.NotFound) {
		t.Errorf("Lift of an unknown change: %v, want NOT_FOUND", err)
	}
	other := e.d
	other.AccountID = "acct_2"
	if _, err := e.svc.Lift(ctx, other, c.ID, changes.LiftOptions{}); !isCode(err, fault.NotFound) {
		t.Errorf("Lift of another account's change: %v, want NOT_FOUND", err)
	}
}

// Answers the retention forgot bring nothing: with the answers before the
// change gone, every measure is insufficient_data, never a figure.
func TestLiftOfForgottenAnswers(t *testing.T) {
	s, _ := engines[0].open(t)
	e := newEnv(t, s, scenario.prompts)
	scenario.store(t, s, e.d, lift.DefaultScans)
	e.clock.Set(t0.Add(15 * 24 * time.Hour))
	c, err := e.svc.Create(ctx, e.d, changes.NewChange{Title: "Rewrote the guides", At: t0, Prompts: []string{promptText(0), promptText(1)}})
	must(t, err)
	for {
		n, err := s.PruneScanAnswers(ctx, t0.Add(-3*24*time.Hour), 1000)
		must(t, err)
		if n < 1000 {
			break
		}
	}
	got, err := e.svc.Lift(ctx, e.d, c.ID, changes.LiftOptions{})
	must(t, err)
	if got.Report.Before.Scans != 3 {
		t.Errorf("scans before the change with answers kept: %d, want 3", got.Report.Before.Scans)
	}
	for _, l := range append([]lift.Lift{got.Report.Overall}, got.Report.Engines...) {
		for _, m := range l.Metrics {
			if m.DiD == nil || m.DiD.Status != lift.StatusInsufficient || m.DiD.Reason == "" {
				t.Errorf("%q %s with 2 targeted prompts and 3 scans before: DiD %+v; want insufficient_data with a reason", l.Engine, m.Metric, m.DiD)
			}
		}
	}
	for {
		n, err := s.PruneScanAnswers(ctx, t0, 1000)
		must(t, err)
		if n < 1000 {
			break
		}
	}
	got, err = e.svc.Lift(ctx, e.d, c.ID, changes.LiftOptions{})
	must(t, err)
	if d := estimate(t, got.Report.Overall, lift.MetricCitation).Difference; d.Status != lift.StatusInsufficient || d.Reason != "no scan before the change" {
		t.Errorf("with no answer before the change: %+v; want insufficient_data, no scan before", d)
	}
}
