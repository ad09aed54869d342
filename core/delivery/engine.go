// Package delivery delivers aivis's events to webhook endpoints and
// connections, as the best webhook services do: durable, at least once,
// retried on a schedule, with a log of every attempt. A webhook gets a
// POST signed per Standard Webhooks; a connection gets its events through
// its connector plugin (core/hub), in batches as large as the plugin takes.
//
// The engine's stages, a file each, can be read alone:
//
//   - fanout.go: a Watermill handler of the event topic writes, for each
//     event, one delivery per webhook or connection that wants it, in one
//     transaction, before it acknowledges the message, so an event is never
//     lost between the bus and the deliveries.
//   - dispatch.go: the queues. New deliveries go straight to their target's
//     queue; due ones are claimed from the store; both leased. Each target
//     has its share of attempts in flight, the engine a bound on them all.
//   - attempt.go: one attempt, a signed POST to a webhook or a call of a
//     connection's connector.
//   - policy.go: what an attempt comes to, a pure function: the next
//     attempt on the schedule, giving up, disabling the target.
//   - hold.go: the deliveries of a connection whose connector does not
//     run wait, consuming no attempt, until it runs again.
//   - record.go: writes each attempt and what the policy decided.
//   - retention.go: prunes what is older than the retention.
//
// engine.go ties them together (Options, New, Run); webhooks.go and
// connections.go are the services behind the API. A lease outlives an
// attempt, so after a crash a leased delivery is attempted again once its
// lease ends: at least once, with the same webhook-id.
package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/core/bus/buslog"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/plugins/sdk"
)

// Connectors delivers through connector plugins (core/hub).
type Connectors interface {
	// Deliver hands events to the named connector with a connection's
	// settings and returns one result per event. An error is the plugin's
	// own failure (not running, crashed, past its deadline), not the
	// destination's.
	Deliver(ctx context.Context, connector string, settings json.RawMessage, evs []sdk.Event) ([]sdk.Result, error)
	// MaxBatch is how many events one Deliver of the connector may carry.
	MaxBatch(connector string) int
}

// Options tune the engine; the zero value of each field takes its default.
type Options struct {
	Timeout     time.Duration // per attempt, default 15 s
	Workers     int           // deliveries in flight at once, default 256
	PerEndpoint int           // attempts in flight per webhook or connection, default 16
	// Connectors delivers connections' events; without it they fail and
	// are retried like any failure.
	Connectors Connectors
	// ConnectorWait is how long the deliveries of a connection whose
	// connector is unavailable (hub.ErrUnavailable: registered, but not
	// running here) wait before they are tried again (default
	// DefaultConnectorWait); they consume no attempt meanwhile.
	ConnectorWait time.Duration
	Now           func() time.Time
	// Idle is the longest the dispatcher sleeps without looking for due
	// deliveries that another process wrote (default 1 s).
	Idle time.Duration
	// Retention is how long a delivery and its attempts are kept after it
	// was made (default DefaultRetention); PruneEvery, how often what is
	// older is pruned (default hourly).
	Retention  time.Duration
	PruneEvery time.Duration
	// Prune are more of what the retention forgets, after the deliveries
	// and the events (the scans' answers).
	Prune []Pruning
	// Holder names this process in the leases it takes (default: a new
	// random one); each claim's lease is the holder and the claim's number.
	Holder string
	// Metrics counts the attempts and what they came to (nil: none).
	Metrics *metrics.Delivery
}

// Engine runs the fan-out and the dispatcher.
type Engine struct {
	store  Store
	sub    message.Subscriber
	client *http.Client
	log    *slog.Logger
	opt    Options
	lease  time.Duration
	claims atomic.Uint64 // the number of the last lease taken

	wake     chan struct{}
	refills  chan struct{} // endpoints wait in refill
	outcomes chan outcome
	inserts  chan insertion
	stopped  chan struct{} // closed when the fan-out has stopped

	mu        sync.Mutex
	inflight  int
	reserved  int // leased by the fan-out, about to be queued
	endpoints map[string]*endpoint
	waiting   map[*endpoint]struct{} // with queued deliveries, stopped by Workers
	refill    map[*endpoint]struct{} // spilled, down to half their share
	runCtx    context.Context        // the dispatcher's, for attempts the fan-out hands over
	sends     *sync.WaitGroup
	backlog   atomic.Bool // due deliveries may wait in the store for a claim

	healthMu sync.Mutex
	healthy  map[string]time.Time // see knownHealthy

	// held are the connections whose connector was unavailable: until
	// when their deliveries wait (hold.go).
	heldMu sync.Mutex
	held   map[string]time.Time
}

// New builds an engine. client makes the attempts (a netguard client: it
// must not follow redirects); sub is the subscriber of the event topic.
func New(st Store, sub message.Subscriber, client *http.Client, log *slog.Logger, opt Options) *Engine {
	if opt.Timeout <= 0 {
		opt.Timeout = 15 * time.Second
	}
	if opt.Workers <= 0 {
		opt.Workers = 256
	}
	if opt.PerEndpoint <= 0 {
		opt.PerEndpoint = 16
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Idle <= 0 {
		opt.Idle = time.Second
	}
	if opt.Retention <= 0 {
		opt.Retention = DefaultRetention
	}
	if opt.PruneEvery <= 0 {
		opt.PruneEvery = time.Hour
	}
	if opt.Holder == "" {
		opt.Holder = randid.New("proc")
	}
	if opt.ConnectorWait <= 0 {
		opt.ConnectorWait = DefaultConnectorWait
	}
	return &Engine{store: st, sub: sub, client: client, log: log, opt: opt,
		// A claimed delivery may wait behind a full endpoint for as long
		// as its queued rounds of attempts, then take its own.
		lease:     time.Duration(queueRounds+2)*opt.Timeout + 5*time.Second,
		wake:      make(chan struct{}, 1),
		outcomes:  make(chan outcome, 1024),
		inserts:   make(chan insertion),
		stopped:   make(chan struct{}),
		refills:   make(chan struct{}, 1),
		endpoints: make(map[string]*endpoint), waiting: make(map[*endpoint]struct{}), refill: make(map[*endpoint]struct{}),
		healthy: make(map[string]time.Time), held: make(map[string]time.Time)}
}

// Run runs the fan-out and the dispatcher until ctx ends; attempts in
// flight are given until their timeout to finish and be recorded.
func (e *Engine) Run(ctx context.Context) error {
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: e.opt.Timeout}, buslog.New(e.log))
	if err != nil {
		return err
	}
	// With tracing on, each event is handled in a span of the trace that
	// published it, whose context its deliveries keep for their attempts.
	router.AddConsumerHandler("webhook-fanout", events.Topic, e.sub, e.fanout).AddMiddleware(events.Consumed("webhooks"))

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	inserted := make(chan struct{})
	go func() { e.insert(); close(inserted) }()
	wg.Go(func() {
		errs <- router.Run(ctx)
		close(e.stopped)
		<-inserted
	})
	recorded := make(chan struct{})
	go func() { e.record(); close(recorded) }()
	wg.Go(func() { e.prune(ctx) })
	var sends sync.WaitGroup
	e.mu.Lock()
	e.runCtx, e.sends = ctx, &sends
	e.mu.Unlock()
	e.dispatch(ctx, &sends)
	sends.Wait()
	close(e.outcomes)
	<-recorded
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// newLease names a new claim's lease: unique to it, so that an outcome
// recorded under a lease that ended and was claimed again, by this process
// or another, is refused.
func (e *Engine) newLease() string {
	return e.opt.Holder + "/" + strconv.FormatUint(e.claims.Add(1), 10)
}
