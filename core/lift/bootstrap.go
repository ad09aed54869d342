package lift

import (
	"math"
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

const tooFew = "too few prompts with answers that count for the bootstrap"

// promptSums are one prompt's sums on both sides.
type promptSums struct{ yb, nb, ya, na float64 }

// bootstrap is the 95% interval of est = Σ sign_i × (θ_after −
// θ_before) over the arms, resampling each arm's prompts with
// replacement (a prompt brings its answers on both sides, so the pairing
// of the sides by prompt is kept). A resample whose side has no unit is
// dropped; with more than 5% of them dropped, or when every resample
// gives the same value (answers that do not vary bear no interval), it
// gives none and says why.
//
// The percentile interval of a bootstrap over G clusters is too narrow
// when G is small: it reads the spread of the prompts as if G were
// infinite and with the normal's quantiles. So the percentile bounds
// are moved away from est by the factor that turns each arm's bootstrap
// variance V_i into V_i·G_i/(G_i − 1) and the normal's 1.96 into
// Student's t on Satterthwaite's degrees of freedom (G − 1 for one arm).
func bootstrap(arms []*armData, sign []float64, est float64, resamples int, rng *rngState) (Interval, string) {
	pools := make([][]promptSums, len(arms))
	for i, a := range arms {
		for j := range a.cells[0] {
			b, f := a.cells[0][j], a.cells[1][j]
			if b.m > 0 || f.m > 0 {
				pools[i] = append(pools[i], promptSums{b.y, b.n, f.y, f.n})
			}
		}
		if len(pools[i]) < 2 {
			return Interval{}, tooFew
		}
	}
	vals := make([]float64, 0, resamples)
	sum, sum2 := make([]float64, len(arms)), make([]float64, len(arms))
	diffs := make([]float64, len(arms))
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
			diffs[i] = t.ya/t.na - t.yb/t.nb
			s += sign[i] * diffs[i]
		}
		if !ok {
			continue
		}
		vals = append(vals, s)
		for i, d := range diffs {
			sum[i] += d
			sum2[i] += d * d
		}
	}
	if len(vals) < resamples*95/100 {
		return Interval{}, tooFew
	}
	slices.Sort(vals)
	if vals[0] == vals[len(vals)-1] {
		return Interval{}, "the answers do not vary: they bear no interval"
	}
	f := widening(pools, sum, sum2, float64(len(vals)))
	return Interval{Low: est + f*(quantile(vals, 0.025)-est), High: est + f*(quantile(vals, 0.975)-est)}, ""
}

// widening is the factor of the small-sample correction of bootstrap:
// t_df·√(Σ V_i·G_i/(G_i−1)) / (1.96·√(Σ V_i)), at least 1.
func widening(pools [][]promptSums, sum, sum2 []float64, n float64) float64 {
	var v, adj, den float64
	for i, pool := range pools {
		g := float64(len(pool))
		vi := max(0, sum2[i]/n-(sum[i]/n)*(sum[i]/n))
		ai := vi * g / (g - 1)
		v += vi
		adj += ai
		den += ai * ai / (g - 1)
	}
	if v == 0 || den == 0 {
		return 1
	}
	return max(1, tQuantile(adj*adj/den)*math.Sqrt(adj/v)/z95)
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
