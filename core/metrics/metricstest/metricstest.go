// Package metricstest reads metrics in tests: a registry's, gathered, or
// a server's, scraped as Prometheus scrapes them.
package metricstest

import (
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/aivis/aivis/core/metrics"
)

// Families are metric families, gathered or scraped.
type Families []*dto.MetricFamily

// Gather gathers m's registry.
func Gather(t testing.TB, m *metrics.Metrics) Families {
	t.Helper()
	fs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return fs
}

// Scrape reads the metrics a server serves at url, in the text format.
func Scrape(t testing.TB, c *http.Client, url string) Families {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, res.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	var fs Families
	for _, f := range byName {
		fs = append(fs, f)
	}
	return fs
}

// Value is m's gathered Value.
func Value(t testing.TB, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	return Gather(t, m).Value(name, labels...)
}

// Value is the value of the first series of name with the labels given
// as name, value pairs (among others): a counter's or a gauge's value, or
// for name_count and name_sum a histogram's count and sum. None: 0.
func (fs Families) Value(name string, labels ...string) float64 {
	v, _ := fs.Find(name, labels...)
	return v
}

// Sum adds up the values of every series of name with the labels given.
func (fs Families) Sum(name string, labels ...string) float64 {
	var sum float64
	fs.each(name, labels, func(v float64) bool { sum += v; return true })
	return sum
}

// Find is Value, and whether such a series exists.
func (fs Families) Find(name string, labels ...string) (v float64, ok bool) {
	fs.each(name, labels, func(x float64) bool { v, ok = x, true; return false })
	return v, ok
}

// each calls f with the value of each series of name with the labels,
// until f returns false.
func (fs Families) each(name string, labels []string, f func(float64) bool) {
	family, part := name, ""
	for _, suffix := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			family, part = base, suffix
		}
	}
	for _, fam := range fs {
		if fam.GetName() != family && fam.GetName() != name {
			continue
		}
		for _, s := range fam.GetMetric() {
			if !Has(s.GetLabel(), labels...) {
				continue
			}
			var v float64
			switch {
			case s.Counter != nil:
				v = s.GetCounter().GetValue()
			case s.Gauge != nil:
				v = s.GetGauge().GetValue()
			case s.Untyped != nil:
				v = s.GetUntyped().GetValue()
			case s.Histogram != nil && part == "_count":
				v = float64(s.GetHistogram().GetSampleCount())
			case s.Histogram != nil && part == "_sum":
				v = s.GetHistogram().GetSampleSum()
			default:
				continue
			}
			if !f(v) {
				return
			}
		}
	}
}

// Has reports whether a series' labels hold the name, value pairs given.
func Has(got []*dto.LabelPair, want ...string) bool {
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
