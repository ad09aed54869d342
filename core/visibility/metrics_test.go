package visibility_test

import (
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
)

// The scans count each attempt's end once recorded: a scan that
// completes, one that fails once and completes on its next attempt, and
// one that fails every attempt (three by default) until it fails for good.
func TestScanMetrics(t *testing.T) {
	f := &fakeScanner{scores: map[string]int{"example.com": 64, "flaky.com": 30},
		failing: map[string]int{"flaky.com": 1, "broken.com": 99}, calls: map[string]int{}}
	fx := newScanFixture(t, f)
	m := metrics.New(metrics.Options{})
	fx.scans.Metrics = m.Scans
	for _, d := range []string{"example.com", "flaky.com", "broken.com"} {
		if _, err := fx.domains.Create(ctx, fx.p, client.CreateDomain{Domain: d}); err != nil {
			t.Fatal(err)
		}
	}
	fx.start()
	value := func(status string) float64 { return metricstest.Value(t, m, "aivis_scans_total", "status", status) }
	deadline := time.Now().Add(10 * time.Second)
	for value("completed") < 2 || value("failed") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("scans counted: completed %v, failed %v, retried %v", value("completed"), value("failed"), value("retried"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	fx.stop()
	if c, f, r := value("completed"), value("failed"), value("retried"); c != 2 || f != 1 || r != 3 {
		t.Errorf("scans counted: completed %v, failed %v, retried %v; want 2, 1 and 3 (flaky's first attempt, broken's first two)", c, f, r)
	}
}
