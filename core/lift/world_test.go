package lift

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// world scripts the answers of a domain's scans around a change at
// change0: prompts (the first targeted of them targeted), each asked
// samples times of each engine in every scan, one scan a day.
type world struct {
	prompts, targeted, samples int
	engines                    int
	before, after              int // scans
	// cite and mention are each prompt's rate before the change on the
	// probability scale; spread draws each prompt's own offset on the
	// logit scale with this standard deviation, and drift a prompt's
	// offset on each side (a prompt that moves by chance).
	cite, mention float64
	spread, drift float64
	// lift moves the targeted prompts' citation rate after the change,
	// common every prompt's, in points.
	lift, common float64
}

var change0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func logit(p float64) float64    { return math.Log(p / (1 - p)) }
func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// answers are the world's answers drawn with a seed.
func (w world) answers(seed uint64) []Answer {
	r := rand.New(rand.NewPCG(seed, 7))
	type prompt struct {
		cite, mention [2]float64
		rank          [2]float64 // the mean rank above 1 when named
		competitors   float64
	}
	ps := make([]prompt, w.prompts)
	for j := range ps {
		c, m := r.NormFloat64()*w.spread, r.NormFloat64()*w.spread
		k := 1 + 2*r.Float64()
		for s := range 2 {
			ps[j].cite[s] = logistic(logit(w.cite) + c + r.NormFloat64()*w.drift)
			ps[j].mention[s] = logistic(logit(w.mention) + m + r.NormFloat64()*w.drift)
			ps[j].rank[s] = k * math.Exp(r.NormFloat64()*w.drift)
		}
		ps[j].competitors = 1 + 3*r.Float64()
	}
	var out []Answer
	for sc := -w.before; sc < w.after; sc++ {
		side := 0
		if sc >= 0 {
			side = 1
		}
		at := change0.Add(time.Duration(sc)*24*time.Hour + 6*time.Hour)
		for e := range w.engines {
			for j, p := range ps {
				targeted := j < w.targeted
				cite := p.cite[side]
				if side == 1 {
					cite += w.common
					if targeted {
						cite += w.lift
					}
				}
				for range w.samples {
					a := Answer{Scan: fmt.Sprintf("scan-%04d", sc+1000), At: at, Engine: fmt.Sprintf("engine-%d", e),
						Prompt: fmt.Sprintf("prompt %02d", j), Targeted: targeted,
						Mentioned: r.Float64() < p.mention[side], Cited: r.Float64() < cite}
					comp := int(r.ExpFloat64() * p.competitors)
					if a.Mentioned {
						a.Position = 1 + min(comp, int(r.ExpFloat64()*p.rank[side]))
						a.Voice = Count{1, 1 + comp}
					} else {
						a.Voice = Count{0, comp}
					}
					if e > 0 { // the first engine reports no sources
						n := 1 + r.IntN(8)
						a.Sources = Count{Of: n}
						if a.Cited {
							a.Sources.Hits = 1
						}
					}
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// metric is a report's estimate of a measure over all engines.
func (rep Report) metric(name string) Estimate {
	for _, e := range rep.Overall.Metrics {
		if e.Metric == name {
			return e
		}
	}
	panic("no measure " + name)
}

// excludes0 says the interval of an ok difference excludes 0.
func (d *Diff) excludes0() bool {
	return d.Status == StatusOK && (d.Interval.Low > 0 || d.Interval.High < 0)
}

func (d *Diff) holds(v float64) bool {
	return d.Status == StatusOK && d.Interval.Low <= v && v <= d.Interval.High
}
