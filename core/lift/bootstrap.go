package lift

import (
	"math/rand/v2"
	"slices"
)

// rngState is the bootstrap's random source.
type rngState = rand.Rand

// newRNG is the seeded source of group g's measure k: each estimate has
// its own stream, so that one does not depend on the others.
func newRNG(seed uint64, g, k int) *rngState {
	return rand.New(rand.NewPCG(seed, uint64(g)<<8|uint64(k)))
}

// promptSums are one prompt's sums on both sides.
type promptSums struct{ yb, nb, ya, na float64 }

// bootstrap is the 95% percentile interval of Σ sign_i × (θ_after −
// θ_before) over the arms, resampling each arm's prompts with
// replacement (a prompt brings its answers on both sides, so the pairing
// of the sides by prompt is kept). A resample whose side has no unit is
// dropped; with more than 5% of them dropped it gives none.
func bootstrap(arms []*armData, sign []float64, resamples int, rng *rngState) (Interval, bool) {
	pools := make([][]promptSums, len(arms))
	for i, a := range arms {
		for j := range a.cells[0] {
			b, f := a.cells[0][j], a.cells[1][j]
			if b.m > 0 || f.m > 0 {
				pools[i] = append(pools[i], promptSums{b.y, b.n, f.y, f.n})
			}
		}
		if len(pools[i]) == 0 {
			return Interval{}, false
		}
	}
	vals := make([]float64, 0, resamples)
	for range resamples {
		var s float64
		ok := true
		for i, pool := range pools {
			var t promptSums
			for range pool {
				c := &pool[rng.IntN(len(pool))]
				t.yb += c.yb
				t.nb += c.nb
				t.ya += c.ya
				t.na += c.na
			}
			if t.nb == 0 || t.na == 0 {
				ok = false
				break
			}
			s += sign[i] * (t.ya/t.na - t.yb/t.nb)
		}
		if ok {
			vals = append(vals, s)
		}
	}
	if len(vals) < resamples*95/100 {
		return Interval{}, false
	}
	slices.Sort(vals)
	return Interval{Low: quantile(vals, 0.025), High: quantile(vals, 0.975)}, true
}

// quantile is the q-quantile of sorted values, interpolated between the
// two nearest (Hyndman and Fan's type 7).
func quantile(sorted []float64, q float64) float64 {
	h := q * float64(len(sorted)-1)
	i := int(h)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}
