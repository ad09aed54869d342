// Package metrics is aivis's Prometheus metrics: the registry of one
// server (New: a registry of its own, never the global one, so that a
// process may run several), the collectors each part of the server counts
// with, and the /metrics handler the admin listener serves.
//
// The parts that count are handed the piece of Metrics they need (HTTP,
// Limits, Delivery, ...), whose methods name what happened in their own
// words: no package outside this one speaks to Prometheus. Every piece's
// methods do nothing on a nil receiver, which is how a server without an
// admin listener, a test or a benchmark runs uncounted: a zero Metrics
// (new(Metrics)) has none, and counts nothing.
//
// Labels come from bounded sets only: route patterns, methods and status
// classes; tiers, event kinds, outcomes and states from the code; engine
// labels from the operator's configuration and connector names from the
// registered plugins. None carries an account, client, key, domain, URL or
// any text a tenant sent. A label child is resolved once (WithLabelValues)
// and kept, so that counting is an atomic add.
package metrics

import (
	"net/http"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aivis/aivis/internal/buildinfo"
)

// Options are the bounded sets some labels take: a value outside its set
// is counted as "other".
type Options struct {
	Tiers      []string // limits.TierNames()
	EventKinds []string // events.Kinds
}

// Metrics is one server's registry and the pieces that count into it.
type Metrics struct {
	reg *prometheus.Registry

	HTTP       *HTTP
	Limits     *Limits
	Events     *Events
	Delivery   *Delivery
	Engines    *Engines
	Scans      *Scans
	Content    *Content
	Connectors *Connectors
	Store      *Store
	Redis      *Redis

	mu    sync.Mutex
	own   []prometheus.Collector // aivis's own, for Names
	seen  map[string]bool        // the watchers registered, by name
	pools []namedPool
}

// New makes the registry, with Go's runtime and process collectors and
// aivis_build_info, and every piece of aivis's metrics.
func New(o Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), seen: map[string]bool{}}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bi := buildinfo.Get()
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "aivis_build_info",
		Help: "Always 1: the version, commit and Go version of this build."}, []string{"version", "commit", "go_version"})
	info.WithLabelValues(bi.Version, bi.Commit, bi.GoVersion).Set(1)
	m.register(info)
	m.HTTP = newHTTP(m)
	m.Limits = newLimits(m, o.Tiers)
	m.Events = newEvents(m, o.EventKinds)
	m.Delivery = newDelivery(m)
	m.Engines = newEngines(m)
	m.Scans = newScans(m)
	m.Content = newContent(m)
	m.Connectors = newConnectors(m)
	m.Store = newStore(m)
	m.Redis = newRedis(m)
	return m
}

// On says whether m counts: it is not nil, nor a zero Metrics.
func (m *Metrics) On() bool { return m != nil && m.reg != nil }

// register adds aivis's own collectors.
func (m *Metrics) register(cs ...prometheus.Collector) {
	m.reg.MustRegister(cs...)
	m.mu.Lock()
	m.own = append(m.own, cs...)
	m.mu.Unlock()
}

// Handler serves the registry in Prometheus's exposition formats. A
// collector that fails leaves its metrics out of the answer, not the
// others.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Registry is the registry itself (tests gather it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names are the names of every metric aivis defines (not Go's and the
// process's), whether or not it has a value yet, sorted.
func (m *Metrics) Names() []string {
	m.mu.Lock()
	own := slices.Clone(m.own)
	m.mu.Unlock()
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range own {
			c.Describe(ch)
		}
		for _, d := range watched {
			ch <- d
		}
		close(ch)
	}()
	var out []string
	for d := range ch {
		if f := fqName.FindStringSubmatch(d.String()); f != nil {
			out = append(out, f[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Other is the label value of what falls outside a label's bounded set.
const Other = "other"

// cache holds the label children of one metric by a comparable key,
// resolved once each: a read is a map lookup without a lock, an addition
// copies the map (the sets are small and stop growing). Past max keys,
// every new key is overflow's.
type cache[K comparable, V any] struct {
	m        atomic.Pointer[map[K]V]
	mu       sync.Mutex
	max      int
	overflow K
	make     func(K) V
}

func newCache[K comparable, V any](max int, overflow K, make func(K) V) *cache[K, V] {
	return &cache[K, V]{max: max, overflow: overflow, make: make}
}

func (c *cache[K, V]) get(k K) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var cur map[K]V
	if p := c.m.Load(); p != nil {
		cur = *p
	}
	if v, ok := cur[k]; ok {
		return v
	}
	if len(cur) >= c.max && k != c.overflow {
		if v, ok := cur[c.overflow]; ok {
			return v
		}
		k = c.overflow
	}
	next := make(map[K]V, len(cur)+1)
	for kk, v := range cur {
		next[kk] = v
	}
	v := c.make(k)
	next[k] = v
	c.m.Store(&next)
	return v
}

// within is v if it is one of set, else Other.
func within(v string, set []string) string {
	if slices.Contains(set, v) {
		return v
	}
	return Other
}

// seconds are the buckets of the durations of requests and calls: 0.5 ms
// to 30 s.
var seconds = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// longSeconds are the buckets of what may take minutes: an engine's
// answer, an event's way to its destination through retries.
var longSeconds = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600, 4 * 3600, 24 * 3600}

func since(start time.Time) float64 { return time.Since(start).Seconds() }
