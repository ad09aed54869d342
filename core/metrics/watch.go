package metrics

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The figures read when Prometheus scrapes, rather than counted as they
// happen: what the store, the bus, the pools, the connector plugins and
// the readiness checks say at that moment.

// scrapeTimeout bounds what one scrape waits for a figure it reads; one
// not read in time is left out of that scrape.
const scrapeTimeout = 5 * time.Second

// watcher is a collector of figures read at each scrape.
type watcher struct {
	descs   []*prometheus.Desc
	collect func(ctx context.Context, ch chan<- prometheus.Metric)
}

func (w *watcher) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range w.descs {
		ch <- d
	}
}

func (w *watcher) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	w.collect(ctx, ch)
}

// watch registers w once under name: a second watcher of that name (a
// standby that takes the API over, say) is not registered again.
func (m *Metrics) watch(name string, w *watcher) {
	if !m.On() {
		return
	}
	m.mu.Lock()
	seen := m.seen[name]
	m.seen[name] = true
	m.mu.Unlock()
	if !seen {
		m.register(w)
	}
}

var (
	pendingDesc  = desc("aivis_deliveries_pending", "Pending deliveries to enabled webhooks and connections, by target kind (the store's, the same on every instance).", "target")
	oldestDesc   = desc("aivis_deliveries_oldest_due_seconds", "How long the pending delivery due first has been due, by target kind: 0 when none is (the store's).", "target")
	lagDesc      = desc("aivis_bus_consumer_lag", "Events published that the consumer group has yet to acknowledge, as the bus tells it (the bus's, the same on every instance).", "group")
	connsDesc    = desc("aivis_postgres_pool_connections", "The pool's connections, by pool and state (idle, in_use, constructing).", "pool", "state")
	maxConnsDesc = desc("aivis_postgres_pool_max_connections", "The most connections the pool opens, by pool.", "pool")
	acquiresDesc = desc("aivis_postgres_pool_acquires_total", "Connections taken from the pool, by pool.", "pool")
	emptyDesc    = desc("aivis_postgres_pool_empty_acquires_total", "Connections taken from the pool that had to wait for one, by pool.", "pool")
	canceledDesc = desc("aivis_postgres_pool_canceled_acquires_total", "Waits for a connection given up (their context ended), by pool.", "pool")
	waitDesc     = desc("aivis_postgres_pool_acquire_wait_seconds_total", "Time spent waiting for a connection, by pool.", "pool")
	upDesc       = desc("aivis_connector_up", "1 when the connector's plugin runs on this instance, else 0 (starting, restarting, stopped, or its binary missing), by connector.", "connector")
	restartsDesc = desc("aivis_connector_restarts_total", "Restarts of the connector's plugin since this instance started it, by connector.", "connector")
	readyDesc    = desc("aivis_ready", "1 when the process is ready (/readyz answers 200), else 0: a part does not answer, or it drains at shutdown.")
	partDesc     = desc("aivis_ready_part", "1 when the part (store, bus, counter) answers within the readiness deadline, else 0.", "part")
)

// watched are the descriptions of every figure read at a scrape.
var watched = []*prometheus.Desc{pendingDesc, oldestDesc, lagDesc, connsDesc, maxConnsDesc, acquiresDesc, emptyDesc, canceledDesc, waitDesc, upDesc, restartsDesc, readyDesc, partDesc}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// Backlog is what waits for one kind of target.
type Backlog struct {
	// Pending is how many deliveries to enabled targets are pending.
	Pending int
	// OldestDue is how long the pending delivery due first has been due
	// (0: none is due yet).
	OldestDue time.Duration
}

// WatchDeliveries reports at each scrape the backlog that read reads, of
// webhooks and of connectors (by Target). It is the store's: every
// instance on one store reports the same.
func (m *Metrics) WatchDeliveries(read func(ctx context.Context) ([2]Backlog, error)) {
	m.watch("deliveries", &watcher{descs: []*prometheus.Desc{pendingDesc, oldestDesc}, collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
		bs, err := read(ctx)
		if err != nil {
			return
		}
		for t, b := range bs {
			ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(b.Pending), targets[t])
			ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, b.OldestDue.Seconds(), targets[t])
		}
	}})
}

// WatchBusLag reports at each scrape how many events the consumer group
// has yet to acknowledge, as the bus tells it.
func (m *Metrics) WatchBusLag(group string, read func(ctx context.Context) (int64, error)) {
	m.watch("bus lag", &watcher{descs: []*prometheus.Desc{lagDesc}, collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
		if n, err := read(ctx); err == nil {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(n), group)
		}
	}})
}

// PoolStats are a PostgreSQL connection pool's figures (pgxpool's Stat).
type PoolStats struct {
	Max, Idle, InUse, Constructing  int32
	Acquires, EmptyAcquires, Cancel int64
	AcquireWait                     time.Duration
}

// WatchPool reports at each scrape the figures of the PostgreSQL pool
// named pool (store, bus, forwarder), which stat reads.
func (m *Metrics) WatchPool(pool string, stat func() PoolStats) {
	if !m.On() {
		return
	}
	m.mu.Lock()
	m.pools = append(m.pools, namedPool{pool, stat})
	m.mu.Unlock()
	m.watch("pools", &watcher{descs: []*prometheus.Desc{connsDesc, maxConnsDesc, acquiresDesc, emptyDesc, canceledDesc, waitDesc},
		collect: func(_ context.Context, ch chan<- prometheus.Metric) {
			m.mu.Lock()
			pools := slices.Clone(m.pools)
			m.mu.Unlock()
			for _, p := range pools {
				s := p.stat()
				ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(s.Idle), p.name, "idle")
				ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(s.InUse), p.name, "in_use")
				ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(s.Constructing), p.name, "constructing")
				ch <- prometheus.MustNewConstMetric(maxConnsDesc, prometheus.GaugeValue, float64(s.Max), p.name)
				ch <- prometheus.MustNewConstMetric(acquiresDesc, prometheus.CounterValue, float64(s.Acquires), p.name)
				ch <- prometheus.MustNewConstMetric(emptyDesc, prometheus.CounterValue, float64(s.EmptyAcquires), p.name)
				ch <- prometheus.MustNewConstMetric(canceledDesc, prometheus.CounterValue, float64(s.Cancel), p.name)
				ch <- prometheus.MustNewConstMetric(waitDesc, prometheus.CounterValue, s.AcquireWait.Seconds(), p.name)
			}
		}})
}

type namedPool struct {
	name string
	stat func() PoolStats
}

// ConnectorState is a registered connector as this instance runs it.
type ConnectorState struct {
	Name     string
	Up       bool // its plugin runs and answers
	Restarts int  // since this instance started it
}

// WatchConnectors reports at each scrape the connectors that read lists.
func (m *Metrics) WatchConnectors(read func() []ConnectorState) {
	m.watch("connectors", &watcher{descs: []*prometheus.Desc{upDesc, restartsDesc}, collect: func(_ context.Context, ch chan<- prometheus.Metric) {
		for _, c := range read() {
			v := 0.0
			if c.Up {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, v, c.Name)
			ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(c.Restarts), c.Name)
		}
	}})
}

// WatchReadiness reports at each scrape what /readyz would answer: ready
// says whether the process is ready (not draining, every part answering),
// failing the parts (of parts) that do not answer.
func (m *Metrics) WatchReadiness(parts []string, read func(ctx context.Context) (ready bool, failing []string)) {
	m.watch("readiness", &watcher{descs: []*prometheus.Desc{readyDesc, partDesc}, collect: func(ctx context.Context, ch chan<- prometheus.Metric) {
		ok, failing := read(ctx)
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, b2f(ok))
		for _, p := range parts {
			down := false
			for _, f := range failing {
				down = down || f == p
			}
			ch <- prometheus.MustNewConstMetric(partDesc, prometheus.GaugeValue, b2f(!down), p)
		}
	}})
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
