// Package lift measures what a change to a site did to how AI answer
// engines answer about it: for each measure of the answers (mention
// rate, citation rate, share of voice, source share, average position),
// per engine and over all engines, the difference between the answers
// of the scans after the change and those before it, with its 95%
// interval and, when the change targets some prompts, the
// difference-in-differences against the prompts it did not target.
// Where the answers are too few it says so, with the scans still needed,
// rather than give a figure it cannot stand behind. docs/visibility.md
// (Measured lift) gives the method, its assumptions and a worked example.
package lift

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The measures, as the scans' figures name them.
const (
	MetricMention      = "mention_rate"
	MetricCitation     = "citation_rate"
	MetricShareOfVoice = "share_of_voice"
	MetricSourceShare  = "source_share"
	MetricPosition     = "average_position"
)

// Metrics are the measures a lift reports, in its order.
var Metrics = []string{MetricMention, MetricCitation, MetricShareOfVoice, MetricSourceShare, MetricPosition}

// Statuses of a difference.
const (
	StatusOK           = "ok"
	StatusInsufficient = "insufficient_data"
)

// Methods of an interval.
const (
	// MethodNewcombe: Newcombe's hybrid score interval on effective
	// sample sizes (the answers over their design effect).
	MethodNewcombe = "newcombe_clustered"
	// MethodClusterT: a cluster-robust variance on prompts and Student's
	// t with Satterthwaite's degrees of freedom.
	MethodClusterT = "cluster_robust_t"
	// MethodBootstrap: a percentile interval of a bootstrap over prompts.
	MethodBootstrap = "cluster_bootstrap"
)

// Bounds and defaults of a request.
const (
	// DefaultScans is the scans a window holds on each side by default;
	// MaxScans bounds it.
	DefaultScans = 14
	MaxScans     = 180
	// MinPrompts and MinUnits are what each side of each arm needs for an
	// interval: prompts with an answer that counts towards the measure,
	// and such answers (for the average position, answers that name the
	// brand; for the source share, answers that report a source; for
	// share of voice, answers that name a brand).
	MinPrompts = 5
	MinUnits   = 30
	// DefaultEffect is the difference, in points of a rate or share (0.10
	// is 10 points), the scans needed are computed to detect with 80%
	// power at the 5% level; DefaultPositionEffect, in ranks.
	DefaultEffect         = 0.10
	DefaultPositionEffect = 0.5
	// DefaultResamples is the bootstrap's resamples, within
	// [MinResamples, MaxResamples].
	DefaultResamples = 2000
	MinResamples     = 200
	MaxResamples     = 20000
)

// Count is a part of a whole within one answer: Hits of Of.
type Count struct {
	Hits int `json:"hits"`
	Of   int `json:"of"`
}

// Answer is one engine's answer to one prompt in one scan, failures left
// out (a failed probe is no answer).
type Answer struct {
	// Scan identifies the scan; At is when it ended (a scan's time is the
	// earliest At of its answers).
	Scan string
	At   time.Time
	// Engine is the engine's label.
	Engine string
	// Prompt identifies the prompt across scans (its text, or its index
	// while the prompt set is unchanged); Targeted says the change
	// targets it (a prompt is targeted when any of its answers says so).
	Prompt   string
	Targeted bool
	// Mentioned: the answer names the brand; Cited: it cites the domain.
	Mentioned bool
	Cited     bool
	// Position is the brand's rank among the brands named, 0 when not
	// named.
	Position int
	// Voice is the brand's mentions (0 or 1) of all brand mentions in the
	// answer (the brand's and each competitor's, one each): of a kept
	// answer, Mentioned of Mentioned + its detail's competitors.
	Voice Count
	// Sources is the domain's part of the answer's distinct source
	// domains (those of its detail's sources and citations; the domain's
	// subdomains its own); Of 0 when the engine reported no sources
	// (SourcesReported false), as the scans' source share counts them.
	Sources Count
}

// Request asks for the lift of a change.
type Request struct {
	Answers []Answer
	// Change is when the change went live: a scan that ended before it is
	// before it.
	Change time.Time
	// Scans is the window on each side: the last Scans scans before the
	// change and the first Scans after (0: DefaultScans).
	Scans int
	// Effect (0: DefaultEffect) and PositionEffect (0:
	// DefaultPositionEffect) are the differences the scans needed are
	// computed for.
	Effect         float64
	PositionEffect float64
	// Resamples (0: DefaultResamples) and Seed drive the bootstrap: the
	// same request gives the same report.
	Resamples int
	Seed      uint64
}

// Report is the lift of a change.
type Report struct {
	Change time.Time `json:"change"`
	Scans  int       `json:"scans"`
	Before Window    `json:"before"`
	After  Window    `json:"after"`
	// Targeted says the change targets some prompts: each estimate's
	// figures are those of the targeted prompts, Control those of the
	// others, and DiD the difference between their differences.
	Targeted bool   `json:"targeted"`
	Overall  Lift   `json:"overall"`
	Engines  []Lift `json:"engines"`
}

// Window is the scans of one side of the change.
type Window struct {
	Scans int       `json:"scans"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
}

// Lift is the estimates of one engine ("" over all engines).
type Lift struct {
	Engine  string     `json:"engine"`
	Metrics []Estimate `json:"metrics"`
}

// Estimate is the lift of one measure.
type Estimate struct {
	Metric string `json:"metric"`
	// Arm is the targeted prompts' (every prompt's when the change
	// targets none).
	Arm
	// Control is the prompts the change did not target, and DiD the
	// difference-in-differences; nil when the change targets none.
	Control *Arm  `json:"control,omitempty"`
	DiD     *Diff `json:"did,omitempty"`
}

// Arm is a set of prompts on both sides of the change.
type Arm struct {
	Before     Side `json:"before"`
	After      Side `json:"after"`
	Difference Diff `json:"difference"`
}

// Side is a measure over one side's answers.
type Side struct {
	// Value is the rate or share (0 to 1), or the mean rank.
	Value float64 `json:"value"`
	// Units are the answers that count towards it, over Prompts prompts
	// and Scans scans.
	Units   int `json:"units"`
	Prompts int `json:"prompts"`
	Scans   int `json:"scans"`
	// DesignEffect is how much the clustering of answers on prompts
	// inflates the variance (at least 1).
	DesignEffect float64 `json:"design_effect"`
}

// Diff is a difference after − before (or a difference of differences)
// with its interval, or why there is none.
type Diff struct {
	Status   string   `json:"status"`
	Reason   string   `json:"reason,omitempty"`
	Method   string   `json:"method,omitempty"`
	Estimate float64  `json:"estimate"`
	Interval Interval `json:"interval_95"`
	// ScansNeeded is the window (Request.Scans: scans on each side, those
	// before as far as there are) that detects a difference of Effect
	// with 80% power at the 5% level, and MoreScans how many of its scans
	// after the change are still to come; both -1 when no window can
	// (too few prompts, or too few scans before the change).
	Effect      float64 `json:"effect"`
	ScansNeeded int     `json:"scans_needed"`
	MoreScans   int     `json:"more_scans"`
}

// MarshalJSON leaves out the estimate and interval of an insufficient
// difference: it has none.
func (d Diff) MarshalJSON() ([]byte, error) {
	type plain Diff
	if d.Status == StatusOK {
		return json.Marshal(plain(d))
	}
	return json.Marshal(struct {
		plain
		Estimate *float64  `json:"estimate,omitempty"`
		Interval *Interval `json:"interval_95,omitempty"`
	}{plain: plain(d)})
}

// Compute computes the lift of a change. It errs only on a malformed
// request; too few answers give insufficient_data.
func Compute(req Request) (Report, error) {
	req, err := normalize(req)
	if err != nil {
		return Report{}, err
	}
	d := collect(req)
	rep := Report{Change: req.Change, Scans: req.Scans, Before: d.windows[0], After: d.windows[1], Targeted: d.targetedMode}
	rep.Engines = make([]Lift, len(d.engines))
	for g := range d.engines {
		rep.Engines[g] = d.lift(req, g)
	}
	rep.Overall = d.lift(req, len(d.engines))
	return rep, nil
}

// normalize fills a request's defaults and checks its bounds and answers.
func normalize(req Request) (Request, error) {
	req.Scans = cmpOr(req.Scans, DefaultScans)
	req.Resamples = cmpOr(req.Resamples, DefaultResamples)
	if req.Effect == 0 {
		req.Effect = DefaultEffect
	}
	if req.PositionEffect == 0 {
		req.PositionEffect = DefaultPositionEffect
	}
	switch {
	case req.Scans < 1 || req.Scans > MaxScans:
		return req, fmt.Errorf("lift: scans %d outside [1, %d]", req.Scans, MaxScans)
	case req.Resamples < MinResamples || req.Resamples > MaxResamples:
		return req, fmt.Errorf("lift: resamples %d outside [%d, %d]", req.Resamples, MinResamples, MaxResamples)
	case !(req.Effect > 0 && req.Effect < 1):
		return req, errors.New("lift: effect outside (0, 1)")
	case !(req.PositionEffect > 0) || math.IsInf(req.PositionEffect, 0):
		return req, errors.New("lift: position effect must be positive")
	}
	for i, a := range req.Answers {
		if a.Position < 0 || a.Voice.Hits < 0 || a.Voice.Hits > a.Voice.Of || a.Sources.Hits < 0 || a.Sources.Hits > a.Sources.Of {
			return req, fmt.Errorf("lift: answer %d: a negative position or a part greater than its whole", i)
		}
		if strings.TrimSpace(a.Scan) == "" {
			return req, fmt.Errorf("lift: answer %d: no scan", i)
		}
	}
	return req, nil
}

func cmpOr(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// proportion says the measure is a rate of answers (one unit, 0 or 1,
// per answer), whose difference Newcombe's interval bounds.
func proportion(k int) bool {
	return Metrics[k] == MetricMention || Metrics[k] == MetricCitation
}

// effect is the difference the scans needed are computed for.
func effect(req Request, k int) float64 {
	if Metrics[k] == MetricPosition {
		return req.PositionEffect
	}
	return req.Effect
}

// unit is what an answer adds to measure k: its numerator and
// denominator, and whether it counts at all.
func unit(a *Answer, k int) (y, n float64, ok bool) {
	switch Metrics[k] {
	case MetricMention:
		return b2f(a.Mentioned), 1, true
	case MetricCitation:
		return b2f(a.Cited), 1, true
	case MetricShareOfVoice:
		return float64(a.Voice.Hits), float64(a.Voice.Of), a.Voice.Of > 0
	case MetricSourceShare:
		return float64(a.Sources.Hits), float64(a.Sources.Of), a.Sources.Of > 0
	default: // MetricPosition
		return float64(a.Position), 1, a.Position > 0
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// data is a request's answers summed by group (each engine, then all),
// measure, side and prompt.
type data struct {
	engines      []string
	windows      [2]Window
	targetedMode bool
	// arms[0] are the targeted prompts' indexes (all when none is),
	// arms[1] the others'.
	arms [2][]int
	// cells[g][k][side][prompt]
	cells [][][2][]cell
	// scans[g][side]: the window's scans with an answer of group g;
	// history[g], all the scans before the change with one.
	scans   [][2]int
	history []int
}

// The sides of a scan: before the change (in the window), after it, and
// before the window.
const (
	sideBefore = iota
	sideAfter
	sideEarlier
)

// collect picks the windows' scans and sums their answers.
func collect(req Request) *data {
	type scanAt struct {
		id string
		at time.Time
	}
	first := map[string]time.Time{}
	for _, a := range req.Answers {
		if t, ok := first[a.Scan]; !ok || a.At.Before(t) {
			first[a.Scan] = a.At
		}
	}
	var before, after []scanAt
	for id, at := range first {
		if at.Before(req.Change) {
			before = append(before, scanAt{id, at})
		} else {
			after = append(after, scanAt{id, at})
		}
	}
	byTime := func(a, b scanAt) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	}
	slices.SortFunc(before, byTime)
	slices.SortFunc(after, byTime)
	earlier := before[:max(0, len(before)-req.Scans)]
	before = before[len(earlier):]
	after = after[:min(len(after), req.Scans)]

	d := &data{}
	// scan → its side (earlier: before the window) and place among the
	// scans up to the end of the window after.
	type placed struct{ side, idx int }
	where := map[string]placed{}
	for s, w := range [3][]scanAt{before, after, earlier} {
		for _, sc := range w {
			where[sc.id] = placed{s, len(where)}
		}
		if s < 2 && len(w) > 0 {
			d.windows[s] = Window{Scans: len(w), From: w[0].at, To: w[len(w)-1].at}
		}
	}
	engines, prompts := map[string]int{}, map[string]int{}
	targeted := map[string]bool{}
	for _, a := range req.Answers {
		if pl, ok := where[a.Scan]; !ok || pl.side == sideEarlier {
			continue
		}
		engines[a.Engine] = 0
		prompts[a.Prompt] = 0
		targeted[a.Prompt] = targeted[a.Prompt] || a.Targeted
	}
	d.engines = sortedKeys(engines)
	for i, e := range d.engines {
		engines[e] = i
	}
	pnames := sortedKeys(prompts)
	for i, p := range pnames {
		prompts[p] = i
		if targeted[p] {
			d.targetedMode = true
		}
	}
	for i, p := range pnames {
		arm := 0
		if d.targetedMode && !targeted[p] {
			arm = 1
		}
		d.arms[arm] = append(d.arms[arm], i)
	}
	groups := len(d.engines) + 1
	d.cells = make([][][2][]cell, groups)
	for g := range d.cells {
		d.cells[g] = make([][2][]cell, len(Metrics))
		for k := range Metrics {
			d.cells[g][k] = [2][]cell{make([]cell, len(pnames)), make([]cell, len(pnames))}
		}
	}
	seen := make([][]bool, groups)
	d.scans, d.history = make([][2]int, groups), make([]int, groups)
	for g := range seen {
		seen[g] = make([]bool, len(where))
	}
	for i := range req.Answers {
		a := &req.Answers[i]
		pl, ok := where[a.Scan]
		e, known := engines[a.Engine]
		if !ok || !known {
			continue
		}
		for _, g := range [2]int{e, groups - 1} {
			if !seen[g][pl.idx] {
				seen[g][pl.idx] = true
				if pl.side != sideAfter {
					d.history[g]++
				}
				if pl.side != sideEarlier {
					d.scans[g][pl.side]++
				}
			}
		}
		if pl.side == sideEarlier {
			continue
		}
		p := prompts[a.Prompt]
		for _, g := range [2]int{e, groups - 1} {
			for k := range Metrics {
				if y, n, ok := unit(a, k); ok {
					d.cells[g][k][pl.side][p].add(y, n)
				}
			}
		}
	}
	return d
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// armCells are group g's cells of measure k on a side, for an arm's prompts.
func (d *data) armCells(g, k, side, arm int) []cell {
	out := make([]cell, len(d.arms[arm]))
	for i, p := range d.arms[arm] {
		out[i] = d.cells[g][k][side][p]
	}
	return out
}

// lift is group g's estimates (len(d.engines): all engines).
func (d *data) lift(req Request, g int) Lift {
	l := Lift{Metrics: make([]Estimate, len(Metrics))}
	if g < len(d.engines) {
		l.Engine = d.engines[g]
	}
	for k := range Metrics {
		l.Metrics[k] = d.estimate(req, g, k)
	}
	return l
}

// estimate is group g's lift of measure k.
func (d *data) estimate(req Request, g, k int) Estimate {
	e := Estimate{Metric: Metrics[k]}
	arms := []*armData{d.armData(g, k, 0)}
	if d.targetedMode {
		arms = append(arms, d.armData(g, k, 1))
	}
	rng := newRNG(req.Seed, g, k)
	for i, a := range arms {
		arm := Arm{Before: a.side(0), After: a.side(1), Difference: a.difference(req, k, rng)}
		if i == 0 {
			e.Arm = arm
		} else {
			e.Control = &arm
		}
	}
	if d.targetedMode {
		did := didOf(req, k, arms[0], arms[1], rng)
		e.DiD = &did
	}
	return e
}

// armData is an arm's cells and moments on both sides.
type armData struct {
	cells   [2][]cell
	mo      [2]moments
	scans   [2]int
	history int // the scans before the change, window or not
}

func (d *data) armData(g, k, arm int) *armData {
	a := &armData{scans: d.scans[g], history: d.history[g]}
	for s := range 2 {
		a.cells[s] = d.armCells(g, k, s, arm)
		a.mo[s] = momentsOf(a.cells[s])
	}
	return a
}

func (a *armData) side(s int) Side {
	mo := a.mo[s]
	return Side{Value: mo.value, Units: int(mo.units), Prompts: mo.prompts, Scans: a.scans[s], DesignEffect: mo.deff}
}

// short says why an arm cannot give an interval, "" when it can.
func (a *armData) short() string {
	for s, w := range [2]string{"before", "after"} {
		mo := a.mo[s]
		switch {
		case a.scans[s] == 0:
			return fmt.Sprintf("no scan %s the change", w)
		case mo.prompts < MinPrompts:
			return fmt.Sprintf("too few prompts with answers that count %s the change: %d of at least %d", w, mo.prompts, MinPrompts)
		case mo.units < MinUnits:
			return fmt.Sprintf("too few answers that count %s the change: %d of at least %d", w, int(mo.units), MinUnits)
		}
	}
	return ""
}

// difference is an arm's after − before.
func (a *armData) difference(req Request, k int, rng *rngState) Diff {
	df := Diff{Status: StatusOK, Effect: effect(req, k)}
	df.ScansNeeded, df.MoreScans = needed(req, k, []*armData{a})
	if why := a.short(); why != "" {
		df.Status, df.Reason = StatusInsufficient, why
		return df
	}
	b, f := a.mo[0], a.mo[1]
	df.Estimate = f.value - b.value
	if proportion(k) {
		df.Method = MethodNewcombe
		df.Interval = Newcombe(f.value, f.units/f.deff, b.value, b.units/b.deff)
		return df
	}
	df.Method = MethodBootstrap
	iv, why := bootstrap([]*armData{a}, []float64{1}, df.Estimate, req.Resamples, rng)
	if why != "" {
		df.Status, df.Reason = StatusInsufficient, why
		return df
	}
	df.Interval = iv
	return df
}

// didOf is the targeted arm's difference less the control arm's.
func didOf(req Request, k int, t, c *armData, rng *rngState) Diff {
	df := Diff{Status: StatusOK, Effect: effect(req, k)}
	df.ScansNeeded, df.MoreScans = needed(req, k, []*armData{t, c})
	for _, arm := range []struct {
		name string
		a    *armData
	}{{"targeted", t}, {"untargeted", c}} {
		if why := arm.a.short(); why != "" {
			df.Status, df.Reason = StatusInsufficient, arm.name+" prompts: "+why
			return df
		}
	}
	df.Estimate = (t.mo[1].value - t.mo[0].value) - (c.mo[1].value - c.mo[0].value)
	if !proportion(k) {
		df.Method = MethodBootstrap
		iv, why := bootstrap([]*armData{t, c}, []float64{1, -1}, df.Estimate, req.Resamples, rng)
		if why != "" {
			df.Status, df.Reason = StatusInsufficient, why
			return df
		}
		df.Interval = iv
		return df
	}
	df.Method = MethodClusterT
	vt, gt := pairedVar(t.cells[0], t.cells[1])
	vc, gc := pairedVar(c.cells[0], c.cells[1])
	v := vt + vc
	// Satterthwaite's degrees of freedom of the sum of the two variances.
	dof := float64(min(gt, gc) - 1)
	if den := vt*vt/float64(gt-1) + vc*vc/float64(gc-1); den > 0 {
		dof = v * v / den
	}
	half := tQuantile(dof) * math.Sqrt(v)
	df.Interval = Interval{Low: df.Estimate - half, High: df.Estimate + half}
	return df
}

// needed is the window, in scans on each side, that detects a difference
// of the request's effect (arms[0] moving by it, arms[1], if any, by
// nothing) with 80% power at the 5% level, and how many of its scans
// after the change are still to come. The estimate's variance, the sum
// over arms and sides of deff × (a unit's variance) / units, must come
// down to (effect / (z_0.975 + z_0.8))²; with a window of N scans a side
// holds N times the units a scan gave it (after: before's when no scan
// came yet), before the change at most the scans there are. A rate's
// unit variance after the change is p'(1 − p'), p' = p_before + effect
// (− effect above 1); a share's or the position's, the one observed.
// -1: no window can (too few prompts, or too few scans before).
func needed(req Request, k int, arms []*armData) (scans, more int) {
	eff := effect(req, k)
	budget := math.Pow(eff/(z95+z80), 2)
	// fb and ca: the variance a window of one scan a side would have, of
	// the sides before and after.
	var fb, ca, minScans float64
	for i, a := range arms {
		b, f := a.mo[0], a.mo[1]
		if b.prompts < MinPrompts || a.scans[0] == 0 || b.units == 0 {
			return -1, -1
		}
		fb += b.deff * b.unitVar * float64(a.scans[0]) / b.units
		unitVar, deff := b.unitVar, b.deff
		if f.units >= MinUnits {
			unitVar = f.unitVar
		}
		if f.prompts >= MinPrompts {
			deff = f.deff
		}
		if proportion(k) {
			p := b.value
			if i == 0 {
				p = b.value + eff
				if p > 1 {
					p = b.value - eff
				}
			}
			unitVar = p * (1 - p)
		}
		ups := b.units / float64(a.scans[0])
		if a.scans[1] > 0 && f.units > 0 {
			ups = f.units / float64(a.scans[1])
		}
		ca += deff * unitVar / ups
		minScans = max(minScans, math.Ceil(MinUnits/ups), math.Ceil(MinUnits*float64(a.scans[0])/b.units))
	}
	history := float64(arms[0].history)
	n := math.Ceil((fb + ca) / budget)
	if n > history {
		rest := budget - fb/history
		if rest <= 0 {
			return -1, -1
		}
		n = math.Ceil(ca / rest)
	}
	scans = int(max(n, minScans))
	return scans, max(0, scans-arms[0].scans[1])
}
