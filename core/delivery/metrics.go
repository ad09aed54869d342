package delivery

import (
	"time"

	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// outcome is what an attempt came to in the metrics: delivered, retried,
// failed for good, or failed and its target disabled (or its
// subscription ended).
func (d decision) outcome() string {
	switch {
	case d.disable != "" || d.unsubscribe != "":
		return metrics.Disabled
	case d.status == store.DeliverySucceeded:
		return metrics.Delivered
	case d.status == store.DeliveryPending:
		return metrics.Retry
	}
	return metrics.Failed
}

// count counts a batch of attempts once their outcomes (outcomes[i] the
// i-th's) are recorded; a delivered one's latency runs from its event's
// time (which its id begins with) to its answer.
func (e *Engine) count(batch []outcome, outcomes []string) {
	m := e.opt.Metrics
	if m == nil {
		return
	}
	for i, o := range batch {
		t := metrics.Webhook
		if o.w.IsConnection() {
			t = metrics.Connector
		}
		var latency time.Duration
		if at, ok := randid.SortedTime(o.d.EventID); ok {
			latency = o.attempt.At.Add(o.attempt.Latency).Sub(at)
		}
		m.Attempt(t, outcomes[i], latency)
	}
}
