package lift

import (
	"math"
	"testing"

	"github.com/aivis/aivis/core/probe"
)

// Newcombe (1998), Statistics in Medicine 17:873-890, Table II, method 10
// (hybrid score, no continuity correction), to four decimals.
func TestNewcombeTableII(t *testing.T) {
	for _, tc := range []struct {
		k1, n1, k2, n2 int
		low, high      float64
	}{
		{56, 70, 48, 80, 0.0524, 0.3339},
		{9, 10, 3, 10, 0.1705, 0.8090},
		{6, 7, 2, 7, 0.0582, 0.8062},
		{5, 56, 0, 29, -0.0381, 0.1926},
		{0, 10, 0, 20, -0.1611, 0.2775},
		{0, 10, 0, 10, -0.2775, 0.2775},
		{10, 10, 0, 20, 0.6791, 1.0000},
		{10, 10, 0, 10, 0.6075, 1.0000},
	} {
		iv := Newcombe(float64(tc.k1)/float64(tc.n1), float64(tc.n1), float64(tc.k2)/float64(tc.n2), float64(tc.n2))
		if math.Abs(iv.Low-tc.low) > 5e-5 || math.Abs(iv.High-tc.high) > 5e-5 {
			t.Errorf("Newcombe(%d/%d − %d/%d) = [%.4f, %.4f], want [%.4f, %.4f]", tc.k1, tc.n1, tc.k2, tc.n2, iv.Low, iv.High, tc.low, tc.high)
		}
	}
}

// Wilson on whole counts is probe's Wilson, the interval of the scans'
// own figures.
func TestWilsonAsProbe(t *testing.T) {
	for _, c := range [][2]int{{0, 10}, {3, 10}, {10, 10}, {7, 31}, {56, 70}} {
		got, want := Wilson(float64(c[0])/float64(c[1]), float64(c[1])), probe.Wilson(c[0], c[1])
		if math.Abs(got.Low-want.Low) > 1e-12 || math.Abs(got.High-want.High) > 1e-12 {
			t.Errorf("Wilson(%d/%d) = %+v, probe's %+v", c[0], c[1], got, want)
		}
	}
	if iv := Wilson(0, 0); iv.Low != 0 || iv.High != 1 {
		t.Errorf("Wilson on no answer = %+v, want [0, 1]", iv)
	}
}

// Student's t, 97.5% quantiles from the tables.
func TestTQuantile(t *testing.T) {
	for _, tc := range []struct{ df, want float64 }{
		{1, 12.7062}, {2, 4.3027}, {3, 3.1824}, {4, 2.7764}, {5, 2.5706}, {9, 2.2622},
		{10, 2.2281}, {19, 2.0930}, {30, 2.0423}, {120, 1.9799}, {10.7, 2.2281}, {0.3, 12.7062}, {math.NaN(), 12.7062},
	} {
		if got := tQuantile(tc.df); math.Abs(got-tc.want) > 2e-3 {
			t.Errorf("t(%.1f) = %.4f, want %.4f", tc.df, got, tc.want)
		}
	}
}

// The design effect of prompts that each always or never hit is their
// size (every answer of a prompt says the same); of answers independent
// of their prompt it is about 1, and never below.
func TestDesignEffect(t *testing.T) {
	same := make([]cell, 10)
	for j := range same {
		for range 6 {
			same[j].add(float64(j%2), 1)
		}
	}
	if mo := momentsOf(same); math.Abs(mo.deff-6) > 1e-9 || mo.value != 0.5 || math.Abs(mo.unitVar-0.25) > 1e-12 {
		t.Errorf("prompts all or nothing: %+v, want deff 6, value 0.5, unit variance 0.25", mo)
	}
	mixed := make([]cell, 10)
	for j := range mixed {
		for i := range 6 {
			mixed[j].add(float64(i%2), 1)
		}
	}
	if mo := momentsOf(mixed); mo.deff != 1 {
		t.Errorf("every prompt half: deff %v, want 1 (the floor)", mo.deff)
	}
}
