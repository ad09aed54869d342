package delivery_test

import (
	"net/http"
	"testing"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/delivery"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
	"github.com/aivis/aivis/webhook"
)

// The engine counts each attempt once it is recorded, by what it came
// to: an endpoint that answers 503 then 200 makes a retry and a delivery
// (whose latency, from the event's commit, is observed), one that answers
// 410 a disabling, which counts its webhook disabled.
func TestMetrics(t *testing.T) {
	fastSchedule(t)
	m := metrics.New(metrics.Options{})
	e := newEnv(t, delivery.Options{Metrics: m.Delivery})
	flaky := newReceiver(t, func(n int, ev webhook.Event) int {
		if n == 2 { // the first attempt of the event (the first request is the setup's test)
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	gone := newReceiver(t, func(n int, ev webhook.Event) int {
		if ev.Event == events.WebhookTest {
			return http.StatusOK
		}
		return http.StatusGone
	})
	e.create(t, flaky, client.CreateWebhook{Domain: "example.com", Events: []string{events.VisibilityChange}})
	e.create(t, gone, client.CreateWebhook{Domain: "gone.example", Events: []string{events.VisibilityChange}})
	e.reading(t, "example.com", 40)
	e.reading(t, "gone.example", 40)
	value := func(name string, labels ...string) float64 { return metricstest.Value(t, m, name, labels...) }
	eventually(t, "the delivery and the disabling counted", func() bool {
		return value("aivis_delivery_attempts_total", "target", "webhook", "outcome", "delivered") == 1 &&
			value("aivis_delivery_attempts_total", "target", "webhook", "outcome", "disabled") == 1
	})
	if n := value("aivis_delivery_attempts_total", "target", "webhook", "outcome", "retry"); n != 1 {
		t.Errorf("retries counted: %v, want 1", n)
	}
	if n := value("aivis_delivery_attempts_total", "target", "webhook", "outcome", "failed"); n != 0 {
		t.Errorf("failures counted: %v, want 0", n)
	}
	if n := value("aivis_delivery_targets_disabled_total", "target", "webhook"); n != 1 {
		t.Errorf("webhooks disabled: %v, want 1", n)
	}
	if n, sum := value("aivis_delivery_latency_seconds_count", "target", "webhook"), value("aivis_delivery_latency_seconds_sum", "target", "webhook"); n != 1 || sum <= 0 || sum > 10 {
		t.Errorf("latency observed %v times, %v s in all; want once, of the retry's wait and less than 10 s", n, sum)
	}
	if n := value("aivis_delivery_attempts_total", "target", "connector"); n != 0 {
		t.Errorf("a connector's attempts counted: %v", n)
	}
}
