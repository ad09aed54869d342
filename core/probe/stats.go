package probe

import "math"

// Interval is a 95% confidence interval of a proportion.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// z of a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the Wilson score interval of k successes in n trials: unlike
// the normal approximation it stays within [0, 1] and is sound for small
// n and for rates near 0 or 1, which is what a few dozen probes give.
func Wilson(k, n int) Interval {
	if n == 0 {
		return Interval{0, 1}
	}
	p := float64(k) / float64(n)
	nn := float64(n)
	z2 := z95 * z95
	center := (p + z2/(2*nn)) / (1 + z2/nn)
	half := z95 / (1 + z2/nn) * math.Sqrt(p*(1-p)/nn+z2/(4*nn*nn))
	return Interval{Low: max(0, center-half), High: min(1, center+half)}
}

// Rate is a proportion with its interval.
type Rate struct {
	Value    float64  `json:"value"`
	Hits     int      `json:"hits"`
	Of       int      `json:"of"`
	Interval Interval `json:"interval_95"`
}

// NewRate is k of n.
func NewRate(k, n int) Rate {
	r := Rate{Hits: k, Of: n, Interval: Wilson(k, n)}
	if n > 0 {
		r.Value = float64(k) / float64(n)
	}
	return r
}
