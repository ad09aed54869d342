package content_test

import (
	"math"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
)

// The service and the engine count each request's states once they
// commit, the budgets reserved and what the steps spent: one cancelled
// while queued, one completed, one failed with nothing spent.
func TestMetrics(t *testing.T) {
	e := newEnv(t)
	m := metrics.New(metrics.Options{})
	e.svc.Metrics = m.Content
	cancelled := e.create(t, e.starter, req(client.Dollars(1)))
	if _, _, err := e.svc.Cancel(ctx, e.starter, cancelled.ID, nil); err != nil {
		t.Fatal(err)
	}
	in := req(client.Dollars(2))
	in.Type, in.Content = client.TypeAnalyze, "# Widgets\n\nA widget is a small device that automates one chore at home."
	done := e.create(t, e.starter, in)
	failed := e.create(t, e.starter, req(client.Dollars(3))) // nothing to analyse
	en := e.engine(nil)
	en.Metrics = m.Content
	start(t, en)
	done, failed = e.waitEnded(t, e.starter, done.ID), e.waitEnded(t, e.starter, failed.ID)
	if done.Status != client.StatusCompleted || failed.Status != client.StatusFailed || done.Spent <= 0 {
		t.Fatalf("ended %s (spent %d) and %s", done.Status, done.Spent, failed.Status)
	}
	value := func(name string, labels ...string) float64 { return metricstest.Value(t, m, name, labels...) }
	for state, want := range map[string]float64{"queued": 3, "cancelled": 1, "processing": 2, "completed": 1, "failed": 1} {
		if n := value("aivis_content_requests_total", "state", state); n != want {
			t.Errorf("requests %s: %v, want %v", state, n, want)
		}
	}
	if n := value("aivis_content_budget_reserved_usd_total"); n != 6 {
		t.Errorf("reserved: $%v, want $6", n)
	}
	if n, want := value("aivis_content_budget_spent_usd_total"), float64(done.Spent)/1e6; math.Abs(n-want) > 1e-9 {
		t.Errorf("spent: $%v, want $%v", n, want)
	}
}
