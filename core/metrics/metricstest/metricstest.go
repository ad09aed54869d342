// Package metricstest reads a registry's metrics in tests, as Prometheus
// would scrape them.
package metricstest

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/aivis/aivis/core/metrics"
)

// Value is the value of the series name with the labels given as name,
// value pairs (the series of that name with those labels among others):
// a counter's or a gauge's value, or, for name_count and name_sum, a
// histogram's count and sum. A series with no value yet is 0.
func Value(t testing.TB, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	family, part := name, ""
	for _, suffix := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			family, part = base, suffix
		}
	}
	for _, f := range families {
		if f.GetName() != family && f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if !has(s.GetLabel(), labels) {
				continue
			}
			switch {
			case s.Counter != nil:
				return s.GetCounter().GetValue()
			case s.Gauge != nil:
				return s.GetGauge().GetValue()
			case s.Histogram != nil && part == "_count":
				return float64(s.GetHistogram().GetSampleCount())
			case s.Histogram != nil && part == "_sum":
				return s.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0
}

func has(got []*dto.LabelPair, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range got {
			found = found || l.GetName() == want[i] && l.GetValue() == want[i+1]
		}
		if !found {
			return false
		}
	}
	return true
}
