package lift

import "math"

// z95 is the normal quantile of a two-sided 95% interval, z80 that of
// 80% power (one-sided).
const (
	z95 = 1.959963984540054
	z80 = 0.8416212335729143
)

// Interval is a 95% confidence interval.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Wilson is the Wilson score interval of a proportion p observed on n
// answers. n may be fractional: an effective sample size, the answers
// divided by their design effect. With n = 0 it is [0, 1].
func Wilson(p, n float64) Interval {
	if n <= 0 {
		return Interval{0, 1}
	}
	z2 := z95 * z95
	center := (p + z2/(2*n)) / (1 + z2/n)
	half := z95 / (1 + z2/n) * math.Sqrt(max(0, p*(1-p)/n+z2/(4*n*n)))
	return Interval{Low: max(0, center-half), High: min(1, center+half)}
}

// Newcombe is the 95% interval of p1 − p2 by Newcombe's hybrid score
// method (method 10 of Newcombe 1998): each proportion's Wilson interval,
// on n1 and n2 answers (effective sizes allowed), combined by the square
// root of the sum of the squared distances on each side.
func Newcombe(p1, n1, p2, n2 float64) Interval {
	a, b := Wilson(p1, n1), Wilson(p2, n2)
	d := p1 - p2
	return Interval{
		Low:  d - math.Sqrt((p1-a.Low)*(p1-a.Low)+(b.High-p2)*(b.High-p2)),
		High: d + math.Sqrt((a.High-p1)*(a.High-p1)+(p2-b.Low)*(p2-b.Low)),
	}
}

// tQuantile is the 97.5% quantile of Student's t with df degrees of
// freedom, rounded down to a whole number and at least 1 (rounding down
// widens the interval): exact up to 4, else the Cornish-Fisher
// expansion about the normal quantile (Hill 1970), within 2e-3 from 5
// degrees on.
func tQuantile(df float64) float64 {
	df = math.Floor(df)
	switch {
	case !(df >= 2): // NaN too
		return 12.706204736174698
	case df == 2:
		return 4.302652729749464
	case df == 3:
		return 3.182446305284263
	case df == 4:
		return 2.776445105197793
	}
	z := z95
	z3, z5, z7, z9 := z*z*z, math.Pow(z, 5), math.Pow(z, 7), math.Pow(z, 9)
	return z + (z3+z)/(4*df) + (5*z5+16*z3+3*z)/(96*df*df) +
		(3*z7+19*z5+17*z3-15*z)/(384*df*df*df) +
		(79*z9+776*z7+1482*z5-1920*z3-945*z)/(92160*df*df*df*df)
}

// cell sums one prompt's units of one measure on one side of the change:
// a unit is an answer that counts towards the measure, y its numerator
// and n its denominator (1 for a rate).
type cell struct{ m, y, n, yy, yn, nn float64 }

func (c *cell) add(y, n float64) {
	c.m++
	c.y += y
	c.n += n
	c.yy += y * y
	c.yn += y * n
	c.nn += n * n
}

// sumOf is the sum of a side's cells.
func sumOf(cells []cell) cell {
	var t cell
	for _, c := range cells {
		t.m += c.m
		t.y += c.y
		t.n += c.n
		t.yy += c.yy
		t.yn += c.yn
		t.nn += c.nn
	}
	return t
}

// moments are the measure of a side and what its interval needs: value
// θ = Σy/Σn, units, prompts with a unit, the variance of one unit's
// linearised residual (y − θn)/n̄ and the design effect of clustering
// the units on their prompts.
type moments struct {
	value, units, n, unitVar, deff float64
	prompts                        int
}

// momentsOf computes a side's moments from its prompts' cells.
func momentsOf(cells []cell) moments {
	t := sumOf(cells)
	if t.m == 0 || t.n == 0 {
		return moments{deff: 1}
	}
	th := t.y / t.n
	mo := moments{value: th, units: t.m, n: t.n, deff: 1}
	nbar := t.n / t.m
	// Σ(y − θn)² over the units, and per prompt Σ(y − θn) and its square sums.
	var ssw, ssb, sm2 float64
	k := 0
	for _, c := range cells {
		if c.m == 0 {
			continue
		}
		k++
		e := c.y - th*c.n
		e2 := c.yy - 2*th*c.yn + th*th*c.nn
		ssb += e * e / c.m
		ssw += e2 - e*e/c.m
		sm2 += c.m * c.m
	}
	mo.prompts = k
	tot := t.yy - 2*th*t.yn + th*th*t.nn
	mo.unitVar = max(0, tot/t.m) / (nbar * nbar)
	mo.deff = designEffect(k, t.m, sm2, ssb, ssw)
	return mo
}

// designEffect is 1 + (m_w − 1)ρ, floored at 1: ρ the one-way ANOVA
// estimator of the intra-prompt correlation of k prompts holding N units
// (Σm² the sum of their squared sizes, ssb and ssw the sums of squares
// between and within prompts about a grand mean of 0), floored at 0, and
// m_w = Σm²/N the size-weighted mean units of a prompt.
func designEffect(k int, N, sm2, ssb, ssw float64) float64 {
	if k < 2 || N <= float64(k) {
		return 1
	}
	msb := ssb / float64(k-1)
	msw := ssw / (N - float64(k))
	m0 := (N - sm2/N) / float64(k-1)
	den := msb + (m0-1)*msw
	if den <= 0 {
		return 1
	}
	rho := min(1, max(0, (msb-msw)/den))
	return max(1, 1+(sm2/N-1)*rho)
}

// pairedVar is the cluster-robust (CR1) variance of θ_after − θ_before
// over an arm's prompts, each prompt a cluster holding its units on both
// sides: the linearised influence of prompt j is
// (y_aj − θ_a n_aj)/N_a − (y_bj − θ_b n_bj)/N_b, and the variance
// G/(G−1) times the sum of their squares. G is the prompts.
func pairedVar(before, after []cell) (v float64, g int) {
	tb, ta := sumOf(before), sumOf(after)
	if tb.n == 0 || ta.n == 0 {
		return math.NaN(), 0
	}
	thb, tha := tb.y/tb.n, ta.y/ta.n
	var s float64
	for j := range before {
		if before[j].m == 0 && after[j].m == 0 {
			continue
		}
		g++
		u := (after[j].y-tha*after[j].n)/ta.n - (before[j].y-thb*before[j].n)/tb.n
		s += u * u
	}
	if g < 2 {
		return math.NaN(), g
	}
	return s * float64(g) / float64(g-1), g
}
