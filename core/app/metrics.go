package app

import (
	"context"
	"time"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/engines"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/health"
	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
)

// measure gives a server its metrics: counted when it has an admin
// listener to serve them at /metrics, and not at all without one
// (admin_addr ""), since nothing could read them.
func (s *Services) measure(cfg config.Config) {
	s.Metrics = new(metrics.Metrics)
	if cfg.AdminAddr == "" {
		return
	}
	s.Metrics = metrics.New(metrics.Options{Tiers: limits.TierNames(), EventKinds: events.Kinds})
	if s.instrument != nil {
		s.instrument(s.Metrics)
	}
	s.Content.Metrics = s.Metrics.Content
}

// measureCounter times the round trips of a counter on a server of its own.
func measureCounter(m *metrics.Metrics, l engines.Limiter) {
	if m.On() && l.Instrument != nil {
		l.Instrument(m)
	}
}

// watch has the metrics read, at each scrape, the store's backlog of
// deliveries, the fan-out's lag on the bus, the connectors as this
// process runs them, and what /readyz would answer.
func watch(m *metrics.Metrics, svc *Services, w *workers, hc *health.Health, checks []health.Check) {
	if !m.On() {
		return
	}
	w.bus.Instrument(m)
	m.WatchDeliveries(func(ctx context.Context) ([2]metrics.Backlog, error) {
		wh, cn, err := svc.Store.DeliveryBacklog(ctx)
		now := time.Now()
		return [2]metrics.Backlog{backlog(wh.Pending, wh.FirstDue, now), backlog(cn.Pending, cn.FirstDue, now)}, err
	})
	m.WatchBusLag("webhooks", func(ctx context.Context) (int64, error) { return w.bus.Lag(ctx, "webhooks", events.Topic) })
	m.WatchConnectors(func() []metrics.ConnectorState {
		cs := w.connectors.Connectors()
		out := make([]metrics.ConnectorState, len(cs))
		for i, c := range cs {
			out[i] = metrics.ConnectorState{Name: c.Record.Name, Up: c.Health.State == "running", Restarts: c.Health.Restarts}
		}
		return out
	})
	parts := make([]string, len(checks))
	for i, c := range checks {
		parts[i] = c.Part
	}
	m.WatchReadiness(parts, func(ctx context.Context) (bool, []string) {
		if hc.Draining() {
			return false, nil
		}
		failing := hc.Ready(ctx)
		return failing == nil, failing
	})
}

// backlog is what the metrics say of pending deliveries, the first due
// at first: how long it has been due at now.
func backlog(pending int, first, now time.Time) metrics.Backlog {
	b := metrics.Backlog{Pending: pending}
	if !first.IsZero() && first.Before(now) {
		b.OldestDue = now.Sub(first)
	}
	return b
}

// connectorsDown is what /readyz says is degraded: the registered
// connectors that do not run on this instance (their deliveries wait).
func connectorsDown(h *hub.Hub) []string {
	var out []string
	for _, name := range h.Unavailable() {
		out = append(out, "connector:"+name)
	}
	return out
}
