package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limits counts the API's decisions on authenticated requests.
type Limits struct {
	decisions *cache[[2]string, prometheus.Counter]
	errors    prometheus.Counter
}

// The outcomes of a limit's decision.
const (
	Admitted       = "admitted"
	RefusedWindow  = "refused_window"  // a rate window (minute, hour, day) is full: 429
	RefusedActive  = "refused_active"  // the tier's active content requests: 429
	RefusedBudget  = "refused_budget"  // the month's budget: 402
	RefusedAddress = "refused_address" // the client address is out of failed authentications: 429
	NoTier         = "none"            // the tier of a request refused before its credentials were read
)

var limitOutcomes = []string{Admitted, RefusedWindow, RefusedActive, RefusedBudget, RefusedAddress}

func newLimits(m *Metrics, tiers []string) *Limits {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_limit_decisions_total",
		Help: "The rate limits' and quotas' decisions, by outcome and tier."}, []string{"outcome", "tier"})
	l := &Limits{errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "aivis_limit_counter_errors_total",
		Help: "Requests refused with 503 because the counter or the guard of failed authentications could not be reached."})}
	tiers = slices.Concat(tiers, []string{NoTier})
	l.decisions = newCache(100, [2]string{Other, Other}, func(k [2]string) prometheus.Counter {
		return vec.WithLabelValues(within(k[0], limitOutcomes), within(k[1], tiers))
	})
	m.register(vec, l.errors)
	return l
}

// Decision counts a decision's outcome (Admitted, RefusedWindow, ...) for
// a request of an account of tier ("": NoTier).
func (l *Limits) Decision(outcome, tier string) {
	if l == nil {
		return
	}
	if tier == "" {
		tier = NoTier
	}
	l.decisions.get([2]string{outcome, tier}).Inc()
}

// CounterError counts a request the counter or the guard could not
// decide (answered 503).
func (l *Limits) CounterError() {
	if l != nil {
		l.errors.Inc()
	}
}

// Events counts the events the store's transactions publish, once each
// commits.
type Events struct {
	published *cache[string, prometheus.Counter]
}

func newEvents(m *Metrics, kinds []string) *Events {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_events_published_total",
		Help: "Events committed to the bus's outbox, by kind."}, []string{"kind"})
	m.register(vec)
	return &Events{published: newCache(100, Other, func(k string) prometheus.Counter { return vec.WithLabelValues(within(k, kinds)) })}
}

// Published counts events of kind that committed.
func (e *Events) Published(kind string, n int) {
	if e != nil && n > 0 {
		e.published.get(kind).Add(float64(n))
	}
}

// Target is a kind of delivery target.
type Target uint8

const (
	Webhook Target = iota
	Connector
)

var targets = [...]string{"webhook", "connector"}

func (t Target) String() string { return targets[t] }

// The outcomes of a delivery attempt.
const (
	Delivered = "delivered" // the target took it
	Retry     = "retry"     // it failed, and is tried again on the schedule
	Failed    = "failed"    // it failed for good (past the schedule, or a connector's permanent failure)
	Disabled  = "disabled"  // it failed, and its target was disabled (or its subscription ended)
)

var attemptOutcomes = []string{Delivered, Retry, Failed, Disabled}

// Delivery counts the delivery engine's attempts and what they came to.
type Delivery struct {
	attempts map[[2]string]prometheus.Counter
	latency  [len(targets)]prometheus.Observer
	disabled [len(targets)]prometheus.Counter
}

func newDelivery(m *Metrics) *Delivery {
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_delivery_attempts_total",
		Help: "Delivery attempts, by target kind and outcome."}, []string{"target", "outcome"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aivis_delivery_latency_seconds",
		Help: "From an event's commit to the answer of the attempt that delivered it, by target kind.", Buckets: longSeconds},
		[]string{"target"})
	disabled := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_delivery_targets_disabled_total",
		Help: "Webhooks and connections disabled by their deliveries' failures (or ended by their destination), by target kind."},
		[]string{"target"})
	d := &Delivery{attempts: map[[2]string]prometheus.Counter{}}
	for i, t := range targets {
		for _, o := range attemptOutcomes {
			d.attempts[[2]string{t, o}] = attempts.WithLabelValues(t, o)
		}
		d.latency[i] = latency.WithLabelValues(t)
		d.disabled[i] = disabled.WithLabelValues(t)
	}
	m.register(attempts, latency, disabled)
	return d
}

// Attempt counts an attempt to t and its outcome (Delivered, Retry,
// Failed, Disabled); a delivered one's commit-to-delivery latency is
// observed, and a disabled one counts its target disabled.
func (d *Delivery) Attempt(t Target, outcome string, latency time.Duration) {
	if d == nil {
		return
	}
	if c, ok := d.attempts[[2]string{targets[t], outcome}]; ok {
		c.Inc()
	}
	switch outcome {
	case Delivered:
		d.latency[t].Observe(max(latency, 0).Seconds())
	case Disabled:
		d.disabled[t].Inc()
	}
}

// Engines counts the calls of the configured AI engines.
type Engines struct {
	calls    *cache[[3]string, prometheus.Counter]
	duration *cache[[2]string, prometheus.Observer]
	spend    *cache[string, prometheus.Counter]
}

// EngineOK is the outcome of an engine's call that answered; a failure's
// is its category (core/probe's rate_limited, refused_key, provider_error,
// timeout, bad_request).
const EngineOK = "ok"

var engineOutcomes = []string{EngineOK, "rate_limited", "refused_key", "provider_error", "timeout", "bad_request"}

// maxEngines bounds the engines' children (their labels are the
// operator's configuration).
const maxEngines = 200

func newEngines(m *Metrics) *Engines {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_engine_calls_total",
		Help: "Requests to the AI engines (each attempt), by engine label, engine kind and outcome."}, []string{"engine", "kind", "outcome"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aivis_engine_call_duration_seconds",
		Help: "How long an AI engine took to answer a request, by engine label and kind.", Buckets: longSeconds}, []string{"engine", "kind"})
	spend := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_engine_spend_usd_total",
		Help: "What the AI engines' answers cost at their configured prices, in US dollars, by engine label."}, []string{"engine"})
	m.register(calls, duration, spend)
	return &Engines{
		calls: newCache(maxEngines*len(engineOutcomes), [3]string{Other, Other, Other}, func(k [3]string) prometheus.Counter {
			return calls.WithLabelValues(k[0], k[1], within(k[2], engineOutcomes))
		}),
		duration: newCache(maxEngines, [2]string{Other, Other}, func(k [2]string) prometheus.Observer {
			return duration.WithLabelValues(k[0], k[1])
		}),
		spend: newCache(maxEngines, Other, func(k string) prometheus.Counter { return spend.WithLabelValues(k) }),
	}
}

// Call counts a request to the engine labelled engine, of kind, which
// took d and came to outcome (EngineOK or a failure's category), and
// what its answer cost.
func (e *Engines) Call(engine, kind, outcome string, d time.Duration, usd float64) {
	if e == nil {
		return
	}
	e.calls.get([3]string{engine, kind, outcome}).Inc()
	e.duration.get([2]string{engine, kind}).Observe(d.Seconds())
	if usd > 0 {
		e.spend.get(engine).Add(usd)
	}
}

// Scans counts the ends of scans' attempts.
type Scans struct{ ended map[string]prometheus.Counter }

// What a scan's attempt came to.
const (
	ScanCompleted = "completed"
	ScanFailed    = "failed" // for good: its last attempt
	ScanRetried   = "retried"
)

func newScans(m *Metrics) *Scans {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_scans_total",
		Help: "Scans' ends by status: completed, failed (after its last attempt) and retried (an attempt failed, another follows)."},
		[]string{"status"})
	s := &Scans{ended: map[string]prometheus.Counter{}}
	for _, st := range []string{ScanCompleted, ScanFailed, ScanRetried} {
		s.ended[st] = vec.WithLabelValues(st)
	}
	m.register(vec)
	return s
}

// Ended counts a scan's attempt that ended with status.
func (s *Scans) Ended(status string) {
	if s == nil {
		return
	}
	if c, ok := s.ended[status]; ok {
		c.Inc()
	}
}

// Content counts content requests' changes of state and their money.
type Content struct {
	states   *cache[string, prometheus.Counter]
	reserved prometheus.Counter
	spent    prometheus.Counter
}

var contentStates = []string{"queued", "processing", "completed", "failed", "cancelled"}

func newContent(m *Metrics) *Content {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_content_requests_total",
		Help: "Content requests that entered a state: queued, processing, completed, failed, cancelled."}, []string{"state"})
	c := &Content{
		states: newCache(20, Other, func(k string) prometheus.Counter { return vec.WithLabelValues(within(k, contentStates)) }),
		reserved: prometheus.NewCounter(prometheus.CounterOpts{Name: "aivis_content_budget_reserved_usd_total",
			Help: "Budget reserved by the content requests created, in US dollars."}),
		spent: prometheus.NewCounter(prometheus.CounterOpts{Name: "aivis_content_budget_spent_usd_total",
			Help: "Budget the content requests' steps spent, in US dollars."}),
	}
	m.register(vec, c.reserved, c.spent)
	return c
}

// State counts a content request that entered state.
func (c *Content) State(state string) {
	if c != nil {
		c.states.get(state).Inc()
	}
}

// Reserved counts a new request's budget, in micro-dollars.
func (c *Content) Reserved(micro int64) {
	if c != nil && micro > 0 {
		c.reserved.Add(float64(micro) / 1e6)
	}
}

// Spent counts a step's charge, in micro-dollars.
func (c *Content) Spent(micro int64) {
	if c != nil && micro > 0 {
		c.spent.Add(float64(micro) / 1e6)
	}
}

// Connectors counts the calls of the connector plugins.
type Connectors struct {
	calls    *cache[[3]string, prometheus.Counter]
	duration *cache[[2]string, prometheus.Observer]
}

// The calls of a connector, and their outcomes: the plugin answered (its
// answer may be any result), or it failed (not running, crashed, past its
// deadline).
const (
	CallDeliver  = "deliver"
	CallTest     = "test"
	CallValidate = "validate"
	CallOK       = "ok"
	CallError    = "error"
)

// maxConnectors bounds the connectors' children (their names are those of
// registered plugins).
const maxConnectors = 200

func newConnectors(m *Metrics) *Connectors {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aivis_connector_calls_total",
		Help: "Calls of the connector plugins, by connector, call (deliver, test, validate) and outcome (ok: the plugin answered; error: it failed)."},
		[]string{"connector", "call", "outcome"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aivis_connector_call_duration_seconds",
		Help: "How long the connector plugins' calls took, by connector and call.", Buckets: seconds}, []string{"connector", "call"})
	m.register(calls, duration)
	calls3 := []string{CallDeliver, CallTest, CallValidate}
	return &Connectors{
		calls: newCache(maxConnectors*6, [3]string{Other, Other, Other}, func(k [3]string) prometheus.Counter {
			return calls.WithLabelValues(k[0], within(k[1], calls3), within(k[2], []string{CallOK, CallError}))
		}),
		duration: newCache(maxConnectors*3, [2]string{Other, Other}, func(k [2]string) prometheus.Observer {
			return duration.WithLabelValues(k[0], within(k[1], calls3))
		}),
	}
}

// Call counts a call of the connector plugin registered as connector,
// which took d; err is the plugin's failure (nil: it answered).
func (c *Connectors) Call(connector, call string, d time.Duration, err error) {
	if c == nil {
		return
	}
	outcome := CallOK
	if err != nil {
		outcome = CallError
	}
	c.calls.get([3]string{connector, call, outcome}).Inc()
	c.duration.get([2]string{connector, call}).Observe(d.Seconds())
}

// Store counts what the store's engine does beyond its statements.
type Store struct {
	retries  prometheus.Counter
	lockWait prometheus.Observer
	events   *Events
}

func newStore(m *Metrics) *Store {
	s := &Store{
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "aivis_store_transaction_retries_total",
			Help: "PostgreSQL transactions run again after a serialization failure or a deadlock."}),
		events: m.Events,
	}
	lockWait := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aivis_sqlite_write_lock_wait_seconds",
		Help: "How long SQLite's writer waited for the database file's write lock (BEGIN IMMEDIATE) before each transaction: " +
			"long waits are another process's writes (busy waits).",
		Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 10}})
	s.lockWait = lockWait
	m.register(s.retries, lockWait)
	return s
}

// Retry counts a transaction run again.
func (s *Store) Retry() {
	if s != nil {
		s.retries.Inc()
	}
}

// LockWait observes how long a transaction waited for the write lock.
func (s *Store) LockWait(d time.Duration) {
	if s != nil {
		s.lockWait.Observe(d.Seconds())
	}
}

// Published counts the events a committed transaction published, by
// kind (see Events).
func (s *Store) Published(kinds []string) {
	if s == nil {
		return
	}
	for _, k := range kinds {
		s.events.Published(k, 1)
	}
}

// Redis times the round trips to the Redis counter's server.
type Redis struct{ roundTrip prometheus.Observer }

func newRedis(m *Metrics) *Redis {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aivis_redis_round_trip_seconds",
		Help:    "Round trips to the Redis counter's server (a command, or a pipeline of the commands of concurrent requests).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}})
	m.register(h)
	return &Redis{roundTrip: h}
}

// RoundTrip observes a round trip's duration.
func (r *Redis) RoundTrip(d time.Duration) {
	if r != nil {
		r.roundTrip.Observe(d.Seconds())
	}
}
