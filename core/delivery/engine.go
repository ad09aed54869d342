// Package delivery delivers aivis's events to webhook endpoints and
// connections, as the best webhook services do: durable, at least once,
// retried on a schedule, with a log of every attempt. A webhook gets a
// POST signed per Standard Webhooks; a connection gets its events through
// its connector plugin (core/hub), in batches as large as the plugin takes.
//
// Two consumers do the work. The fan-out is an ordinary Watermill handler
// of the event topic: for each event it writes one delivery per matching
// webhook, in one transaction, before it acknowledges the message, so an
// event is never lost between the bus and the deliveries. The dispatcher
// leases due deliveries from the store, sends them, and records each
// attempt and what follows from it (the next attempt, success, failure,
// disabling the endpoint). A lease outlives an attempt, so after a crash a
// leased delivery is attempted again once its lease ends: at least once,
// with the same webhook-id.
package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/retryafter"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/plugins/sdk"
	"github.com/aivis/aivis/webhook"
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
	Now        func() time.Time
	// Idle is the longest the dispatcher sleeps without looking for due
	// deliveries that another process wrote (default 1 s).
	Idle time.Duration
	// Retention is how long a delivery and its attempts are kept after it
	// was made (default DefaultRetention); PruneEvery, how often what is
	// older is pruned (default hourly).
	Retention  time.Duration
	PruneEvery time.Duration
}

// DefaultRetention is how long deliveries and their attempts are kept, as
// Svix keeps payloads and Stripe its events: 30 days.
const DefaultRetention = 30 * 24 * time.Hour

// Engine runs the fan-out and the dispatcher.
type Engine struct {
	store  Store
	sub    message.Subscriber
	client *http.Client
	log    *slog.Logger
	opt    Options
	lease  time.Duration

	wake     chan struct{}
	refills  chan struct{} // endpoints wait in refill
	outcomes chan outcome
	inserts  chan insertion
	stopped  chan struct{} // closed when the fan-out has stopped

	mu        sync.Mutex
	inflight  int
	endpoints map[string]*endpoint
	waiting   map[*endpoint]struct{} // with queued deliveries, stopped by Workers
	refill    map[*endpoint]struct{} // spilled, down to half their share
	runCtx    context.Context        // the dispatcher's, for attempts the fan-out hands over
	sends     *sync.WaitGroup
	backlog   atomic.Bool // due deliveries may wait in the store for a claim

	healthMu sync.Mutex
	healthy  map[string]time.Time // see knownHealthy
}

type endpoint struct {
	id       string // the webhook's or connection's
	account  string
	spilled  bool // some of its deliveries wait in the store: its queue was full
	inflight int  // deliveries
	queue    []claimed
	batch    int // deliveries per attempt: 1 for a webhook
	limit    int // deliveries in flight: PerEndpoint attempts' worth
}

// queueRounds is how many rounds of an endpoint's attempts may wait in
// memory, leased, behind those in flight: a fast endpoint is fed from
// memory as new events come, without a claim from the store per attempt.
const queueRounds = 7

// held is how many deliveries an endpoint holds (in flight or queued) at
// most, for a limit of in-flight ones.
func held(limit int) int { return limit * (1 + queueRounds) }

// maxHeld is how many deliveries the engine holds at most: enough for the
// queues of many endpoints at once (8,192 by default, about 10 MB).
func (e *Engine) maxHeld() int { return 32 * e.opt.Workers }

func (e *Engine) newEndpoint(w *store.Webhook) *endpoint {
	ep := &endpoint{id: w.ID, account: w.AccountID, batch: 1}
	if w.IsConnection() && e.opt.Connectors != nil {
		ep.batch = max(1, min(e.opt.Connectors.MaxBatch(w.Connector), e.opt.Workers/e.opt.PerEndpoint))
	}
	ep.limit = ep.batch * e.opt.PerEndpoint
	return ep
}

// full reports that an endpoint has its share.
func (ep *endpoint) full() bool { return ep.inflight+len(ep.queue) >= held(ep.limit) }

// idle reports that an endpoint has nothing to do: it may be forgotten.
func (ep *endpoint) idle() bool { return ep.inflight == 0 && len(ep.queue) == 0 && !ep.spilled }

// claimed is a delivery on its way, with its target. Both are shared, and
// read only: the target may be the fan-out's cached match.
type claimed struct {
	d *store.Delivery
	w *store.Webhook
}

type outcome struct {
	d         *store.Delivery
	w         *store.Webhook
	attempt   store.Attempt
	ok        bool          // delivered
	retryIn   time.Duration // honoured Retry-After
	gone      bool          // 410, or a connector's Gone
	permanent bool          // a connector's permanent failure: no retry
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
		healthy: make(map[string]time.Time)}
}

// BusLogger is Watermill's logger for the product: its routine messages
// (handlers added, started, stopped) at debug, its warnings and errors as
// they are.
func BusLogger(log *slog.Logger) watermill.LoggerAdapter {
	return busLogger{watermill.NewSlogLoggerWithLevelMapping(log, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug}), log}
}

// busLogger skips Watermill's per-message trace unless the log shows it:
// the adapter would build its attributes for each message first.
type busLogger struct {
	watermill.LoggerAdapter
	log *slog.Logger
}

func (l busLogger) Trace(msg string, fields watermill.LogFields) {
	if l.log.Enabled(context.Background(), watermill.LevelTrace) {
		l.LoggerAdapter.Trace(msg, fields)
	}
}

func (l busLogger) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return busLogger{l.LoggerAdapter.With(fields), l.log}
}

// Wake makes the dispatcher look for due deliveries at once.
func (e *Engine) Wake() { signal(e.wake) }

// signal wakes the dispatcher's wait on c, once however often it is called
// meanwhile.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// forgetIfIdleLocked drops an endpoint that has nothing to do.
func (e *Engine) forgetIfIdleLocked(ep *endpoint) bool {
	if !ep.idle() {
		return false
	}
	if e.endpoints[ep.id] == ep {
		delete(e.endpoints, ep.id)
	}
	delete(e.waiting, ep)
	return true
}

// Run runs the fan-out and the dispatcher until ctx ends; attempts in
// flight are given until their timeout to finish and be recorded.
func (e *Engine) Run(ctx context.Context) error {
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: e.opt.Timeout}, BusLogger(e.log))
	if err != nil {
		return err
	}
	router.AddConsumerHandler("webhook-fanout", events.Topic, e.sub, e.fanout)

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

// EventLogRetention is how long the event log keeps an event (as long as
// the bus keeps its messages).
const EventLogRetention = 7 * 24 * time.Hour

// PruneBatch bounds the rows one write of the retention removes, so that
// the writer is never held long: a batch of deliveries, each with its
// attempts, holds it for about 3 ms (docs/benchmarks.md).
const PruneBatch = 200

// prune forgets what retention no longer keeps, every PruneEvery until ctx
// ends.
func (e *Engine) prune(ctx context.Context) {
	t := time.NewTicker(e.opt.PruneEvery)
	defer t.Stop()
	for {
		e.pruneOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneOnce forgets the deliveries, with their attempts, made before the
// retention; then the deleted webhooks and connections whose deliveries
// have all gone; then the logged events past EventLogRetention. Each batch
// of PruneBatch rows is a write of its own: the group commit's callers
// take their turn between two.
func (e *Engine) pruneOnce(ctx context.Context) {
	now := e.opt.Now()
	for _, step := range []struct {
		what   string
		before time.Time
		prune  func(context.Context, time.Time, int) (int, error)
	}{
		{"deliveries", now.Add(-e.opt.Retention), e.store.PruneDeliveries},
		{"deleted webhooks and connections", now.Add(-e.opt.Retention), e.store.PruneDeleted},
		{"logged events", now.Add(-EventLogRetention), e.store.PruneEvents},
	} {
		total, batches, longest := 0, 0, time.Duration(0)
		for {
			start := time.Now()
			n, err := step.prune(ctx, step.before, PruneBatch)
			if err != nil {
				if ctx.Err() == nil {
					e.log.Warn("retention: pruning failed", "what", step.what, "err", err)
				}
				return
			}
			total, batches, longest = total+n, batches+1, max(longest, time.Since(start))
			if n < PruneBatch {
				break
			}
		}
		if total > 0 {
			e.log.Info("retention: pruned", "what", step.what, "count", total, "batches", batches, "longest_batch", longest)
		}
	}
}

// fanout turns one event into its log entry and its deliveries.
func (e *Engine) fanout(msg *message.Message) error {
	ev, err := events.FromMessage(msg)
	if err != nil {
		e.log.Error("webhooks: unreadable event dropped", "message", msg.UUID, "err", err)
		return nil // a malformed message would be redelivered forever
	}
	ctx := msg.Context()
	var targets []*store.Webhook
	var logged *store.LoggedEvent
	if ev.WebhookID != "" {
		w, err := e.store.Webhook(ctx, ev.AccountID, ev.WebhookID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && w.Deleted()) {
			return nil
		} else if err != nil {
			return err
		}
		targets = append(targets, &w)
	} else {
		ws, err := e.store.MatchWebhooks(ctx, ev.AccountID, ev.ClientID, ev.Domain)
		if err != nil {
			return err
		}
		for i := range ws {
			if Wants(ws[i], ev) {
				targets = append(targets, &ws[i])
			}
		}
		logged = &store.LoggedEvent{ID: ev.ID, AccountID: ev.AccountID, ClientID: ev.ClientID, Event: ev.Event,
			Domain: ev.Domain, Payload: msg.Payload, CreatedAt: ev.Timestamp}
	}
	if len(targets) == 0 && logged == nil {
		return nil
	}
	now := e.opt.Now()
	ds := make([]claimed, 0, len(targets))
	for _, w := range targets {
		d := &store.Delivery{ID: store.NewDeliveryID(now), WebhookID: w.ID, AccountID: w.AccountID,
			EventID: ev.ID, Event: ev.Event, Payload: msg.Payload, Status: store.DeliveryPending,
			NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
		if !w.Enabled {
			// Kept, not attempted: a replay after enabling sends it.
			d.Status, d.NextAttemptAt, d.LastError = store.DeliveryFailed, time.Time{}, "the "+targetNoun(*w)+" was disabled"
		}
		ds = append(ds, claimed{d, w})
	}
	req := insertion{log: logged, ds: ds, done: make(chan error, 1)}
	select {
	case e.inserts <- req:
	case <-e.stopped:
		return errors.New("webhooks: stopping")
	}
	return <-req.done // acked only once the deliveries are committed
}

// FanoutInFlight is the MaxInFlight to give the fan-out's subscriber: how
// many events it handles at once, their deliveries committed together.
// FanoutBatch is its BatchSize: the subscriber reads the next messages only
// once a batch is all acknowledged, so a batch of several windows keeps
// that pause (the last events' commit) rare.
const (
	FanoutInFlight = 256
	FanoutBatch    = 4 * FanoutInFlight
)

// insertion is one event's log entry and deliveries, waiting for a
// transaction.
type insertion struct {
	log  *store.LoggedEvent // nil for an event aimed at one target
	ds   []claimed
	done chan error
}

func targetNoun(w store.Webhook) string {
	if w.IsConnection() {
		return "connection"
	}
	return "webhook"
}

// insert commits the deliveries of the events handled meanwhile in one
// transaction (group commit): with several events in flight (the
// subscriber's MaxInFlight), one write serves them all.
func (e *Engine) insert() {
	batch := make([]insertion, 0, 256)
	for {
		select {
		case req := <-e.inserts:
			batch = append(batch[:0], req)
		case <-e.stopped:
			return
		}
	drain:
		for len(batch) < cap(batch) {
			select {
			case req := <-e.inserts:
				batch = append(batch, req)
			default:
				break drain
			}
		}
		var added []claimed
		written := time.Now()
		err := e.store.Update(context.Background(), func(tx store.Tx) error {
			added = added[:0]
			for _, req := range batch {
				if req.log != nil {
					if err := tx.LogEvent(*req.log); err != nil {
						return err
					}
				}
				for _, c := range req.ds {
					ok, err := tx.InsertDelivery(*c.d)
					if errors.Is(err, store.ErrConflict) {
						continue // the webhook was deleted meanwhile
					} else if err != nil {
						return err
					}
					if ok && c.d.Status == store.DeliveryPending {
						added = append(added, c)
					}
				}
			}
			return nil
		})
		for _, req := range batch {
			req.done <- err
		}
		if err == nil {
			e.offer(added, written)
		}
	}
}

// Wants reports whether a webhook or connection is to receive an event: it
// subscribes to the kind and the domain (a connection with no domains takes
// every domain) and, for a visibility change, the score moved at least its
// minimum (the first reading of a domain always counts). A disabled one
// wants its events too: they are kept as failed deliveries.
func Wants(w store.Webhook, ev events.Event) bool {
	if !containsKind(w.Events, ev.Event) {
		return false
	}
	if w.IsConnection() {
		if len(w.Domains) > 0 && !containsKind(w.Domains, ev.Domain) {
			return false
		}
	} else if w.Domain != ev.Domain {
		return false
	}
	if ev.Event == events.VisibilityChange && ev.ScoreChange >= 0 && w.MinScoreChange > 0 {
		return ev.ScoreChange >= w.MinScoreChange
	}
	return true
}

func containsKind(kinds []string, k string) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// dispatch leases due deliveries and starts their attempts, each endpoint
// within its own limit, until ctx ends.
func (e *Engine) dispatch(ctx context.Context, sends *sync.WaitGroup) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastClaim time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.refills:
			e.refillAll(ctx, sends)
			continue
		case <-e.wake:
		case <-timer.C:
		}
		// Each claim is a query: at most one a millisecond, each taking
		// whatever has come due meanwhile.
		if d := time.Since(lastClaim); d < time.Millisecond {
			time.Sleep(time.Millisecond - d)
		}
		lastClaim = time.Now()
		full := false
		for {
			n, f, err := e.claim(ctx, sends)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				e.log.Error("webhooks: claim deliveries", "err", err)
				break
			}
			if full = f; n == 0 || full {
				break
			}
		}
		wait := e.opt.Idle
		if !full { // else a finished attempt wakes the loop
			next, err := e.store.NextDue(ctx, e.opt.Now())
			if err == nil && !next.IsZero() {
				wait = min(wait, max(next.Sub(e.opt.Now()), time.Millisecond))
			}
		}
		timer.Reset(wait)
	}
}

// refillAll refills the queues of the spilled endpoints that ran low, each
// from its own deliveries in the store, oldest first: the cost of a claim
// of the store-wide due index is not paid for an endpoint that only needs
// its own backlog.
func (e *Engine) refillAll(ctx context.Context, sends *sync.WaitGroup) {
	e.mu.Lock()
	eps := slices.Collect(maps.Keys(e.refill))
	clear(e.refill)
	e.mu.Unlock()
	for _, ep := range eps {
		if err := e.refillOne(ctx, ep, sends); err != nil && ctx.Err() == nil {
			e.log.Error("webhooks: refill deliveries", "target", ep.id, "err", err)
		}
	}
}

func (e *Engine) refillOne(ctx context.Context, ep *endpoint, sends *sync.WaitGroup) error {
	var got []store.Delivery
	more := false
	// The target is read afresh (a new secret, URL or disabling counts).
	w, err := e.store.Webhook(ctx, ep.account, ep.id)
	if err == nil && w.Enabled {
		e.mu.Lock()
		room, holding := held(ep.limit)-ep.inflight-len(ep.queue), ep.inflight+len(ep.queue)
		e.mu.Unlock()
		more = room <= 0 // refilled meanwhile: its turn comes again
		if room > 0 {
			now := e.opt.Now()
			got, more, err = e.store.ClaimWebhookDeliveries(ctx, ep.id, now, now.Add(e.lease), room, holding)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		err = nil // its deleted row pruned meanwhile, its deliveries with it
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !more {
		ep.spilled = false
	} else if len(got) == 0 && ep.inflight+len(ep.queue) == 0 {
		// Nothing leased and nothing to come back for: the store-wide
		// claims take what is left.
		ep.spilled = false
		e.backlog.Store(true)
		defer e.Wake()
	}
	for i := range got {
		ep.queue = append(ep.queue, claimed{&got[i], &w})
	}
	e.startLocked(ctx, ep, sends)
	e.forgetIfIdleLocked(ep)
	return err
}

// claim leases what the free capacity allows and starts it; full reports
// that no capacity is left.
func (e *Engine) claim(ctx context.Context, sends *sync.WaitGroup) (n int, full bool, err error) {
	e.mu.Lock()
	free := e.maxHeld() - e.inflight
	var skip []string // endpoints with a full share: their turn comes later
	for id, ep := range e.endpoints {
		free -= len(ep.queue)
		if ep.full() {
			skip = append(skip, id)
		}
	}
	e.mu.Unlock()
	if free <= 0 {
		return 0, true, nil
	}
	now := e.opt.Now()
	ds, hooks, err := e.store.ClaimDeliveries(ctx, now, now.Add(e.lease), min(free, 1024), held(e.opt.PerEndpoint), skip)
	if err != nil {
		return 0, false, err
	}
	targets := make(map[string]*store.Webhook, len(hooks))
	for id, w := range hooks {
		targets[id] = &w
	}
	got := make([]claimed, len(ds))
	for i := range ds {
		got[i] = claimed{&ds[i], targets[ds[i].WebhookID]}
	}
	e.mu.Lock()
	for _, c := range got {
		ep := e.endpoints[c.w.ID]
		if ep == nil {
			ep = e.newEndpoint(c.w)
			e.endpoints[c.w.ID] = ep
		}
		ep.queue = append(ep.queue, c)
	}
	for _, c := range got {
		e.startLocked(ctx, e.endpoints[c.w.ID], sends)
	}
	e.mu.Unlock()
	if len(got) == 0 && len(skip) == 0 {
		// Nothing due is left in the store. (A claim that took some may
		// have left more: it takes at most an endpoint's share of a target.)
		e.backlog.Store(false)
	}
	return len(got), len(got) >= free, nil
}

// offer hands new deliveries straight to their endpoints' queues where
// there is room, leased like claimed ones; the rest wait in the store for a
// claim. The common case, an event on its way at once, costs no query.
func (e *Engine) offer(cs []claimed, written time.Time) {
	if len(cs) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runCtx == nil || e.runCtx.Err() != nil {
		return
	}
	queued := 0
	for _, ep := range e.endpoints {
		queued += len(ep.queue)
	}
	var take []claimed
	var ids []string
	for _, c := range cs {
		ep := e.endpoints[c.w.ID]
		if ep == nil {
			ep = e.newEndpoint(c.w)
			e.endpoints[c.w.ID] = ep
		}
		if ep.full() {
			ep.spilled = true // a refill takes them when its queue runs low
			continue
		}
		if e.inflight+queued+len(take) >= e.maxHeld() {
			e.backlog.Store(true)
			continue
		}
		ep.queue = append(ep.queue, c) // holds its room until leased below
		take = append(take, c)
		ids = append(ids, c.d.ID)
	}
	leased := map[string]bool{}
	got, err := e.store.LeaseDeliveries(e.runCtx, ids, written, e.opt.Now().Add(e.lease))
	if err != nil {
		// Those not leased stay in the store, where the claims find them.
		e.log.Warn("webhooks: lease new deliveries", "err", err)
	}
	for _, id := range got {
		leased[id] = true
	}
	for _, c := range take {
		ep := e.endpoints[c.w.ID]
		if !leased[c.d.ID] {
			// A claim has it already, and may have queued it too: drop the
			// copy queued above (the last), not the claim's.
			for i, q := range slices.Backward(ep.queue) {
				if q.d.ID == c.d.ID {
					ep.queue = slices.Delete(ep.queue, i, i+1)
					break
				}
			}
		}
	}
	for _, c := range cs {
		if ep := e.endpoints[c.w.ID]; ep != nil && !e.forgetIfIdleLocked(ep) {
			e.startLocked(e.runCtx, ep, e.sends)
		}
	}
	if e.backlog.Load() {
		e.Wake()
	}
}

// startLocked starts queued attempts of an endpoint within its limit and
// the engine's, each carrying up to the endpoint's batch of deliveries.
// An endpoint stopped by the engine's limit waits for the next free slot.
func (e *Engine) startLocked(ctx context.Context, ep *endpoint, sends *sync.WaitGroup) {
	for ep.inflight < ep.limit && len(ep.queue) > 0 {
		if e.inflight >= e.opt.Workers {
			e.waiting[ep] = struct{}{}
			return
		}
		n := min(len(ep.queue), ep.batch, ep.limit-ep.inflight)
		cs := slices.Clone(ep.queue[:n])
		ep.queue = ep.queue[n:]
		ep.inflight += n
		e.inflight += n
		sends.Go(func() {
			// An attempt started before shutdown runs to its own timeout.
			for _, o := range e.attempt(context.WithoutCancel(ctx), cs) {
				e.outcomes <- o
			}
			e.mu.Lock()
			ep.inflight -= n
			e.inflight -= n
			if ctx.Err() == nil {
				e.startLocked(ctx, ep, sends)
				for w := range e.waiting {
					if e.inflight >= e.opt.Workers {
						break
					}
					delete(e.waiting, w)
					e.startLocked(ctx, w, sends)
				}
			}
			refill := ep.spilled && ep.inflight+len(ep.queue) <= held(ep.limit)/2
			if refill {
				e.refill[ep] = struct{}{}
			} else {
				e.forgetIfIdleLocked(ep)
			}
			e.mu.Unlock()
			if refill {
				signal(e.refills)
			}
			if e.backlog.Load() { // deliveries wait in the store for room
				e.Wake()
			}
		})
	}
}

// maxResponseBody is how much of an endpoint's answer the log keeps.
const maxResponseBody = 1024

// attempt makes one attempt of a batch of deliveries to one target: a
// signed request to a webhook (a batch of one), or a call of a
// connection's connector.
func (e *Engine) attempt(ctx context.Context, cs []claimed) []outcome {
	if cs[0].w.IsConnection() {
		return e.connect(ctx, cs)
	}
	return []outcome{e.sign(ctx, cs[0])}
}

// sign makes one signed request.
func (e *Engine) sign(ctx context.Context, c claimed) outcome {
	now := e.opt.Now()
	secrets := []string{c.w.Secret}
	if c.w.PrevSecret != "" && now.Before(c.w.PrevSecretEnd) {
		secrets = append(secrets, c.w.PrevSecret)
	}
	o := outcome{d: c.d, w: c.w}
	var h http.Header
	o.attempt, h = post(ctx, e.client, e.opt.Timeout, c.w.URL, secrets, c.d.EventID, c.d.Payload,
		store.Attempt{DeliveryID: c.d.ID, N: c.d.Attempts + 1, At: now})
	o.ok = o.attempt.StatusCode >= 200 && o.attempt.StatusCode < 300
	switch o.attempt.StatusCode {
	case http.StatusGone:
		o.gone = true
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		o.retryIn = retryafter.Header(h, now)
	}
	return o
}

// post makes one attempt, signed with secrets at a.At (Standard
// Webhooks), and returns a with what came back, and the answer's headers
// (nil when no answer came).
func post(ctx context.Context, client *http.Client, timeout time.Duration, url string, secrets []string, eventID string,
	payload []byte, a store.Attempt) (store.Attempt, http.Header) {
	signer, err := webhook.NewSigner(secrets...)
	if err != nil {
		a.Error = "signing: " + err.Error()
		return a, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		a.Error = sdk.ErrorText(err)
		return a, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aivis-webhooks/1")
	signer.Headers(req.Header, eventID, a.At, payload)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		a.Latency = time.Since(start)
		a.Error = attemptError(err, timeout)
		return a, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	resp.Body.Close()
	a.Latency = time.Since(start)
	a.StatusCode = resp.StatusCode
	a.ResponseBody = strings.ToValidUTF8(string(body), string(utf8.RuneError))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		a.Error = fmt.Sprintf("redirect to %q not followed", sdk.Redact(resp.Header.Get("Location")))
	}
	return a, resp.Header
}

// attemptError says why an attempt got no answer, naming no address and
// not the URL (its query or path may carry a secret).
func attemptError(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no response within %s", timeout)
	}
	return netguard.Describe(err)
}

// record writes outcomes in batches, one transaction each, until the
// channel closes.
func (e *Engine) record() {
	batch := make([]outcome, 0, 256)
	for o := range e.outcomes {
		batch = append(batch[:0], o)
	drain:
		for len(batch) < cap(batch) {
			select {
			case o, ok := <-e.outcomes:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		// The attempts happened: keep trying to write them down. Should that
		// fail for good, their leases end and they are attempted again.
		for try := 1; ; try++ {
			var notes healthNotes
			err := e.store.Update(context.Background(), func(tx store.Tx) error {
				notes = healthNotes{}
				return e.apply(tx, batch, &notes)
			})
			if err == nil {
				e.noteHealth(notes)
				for _, o := range batch {
					if !o.ok {
						e.Wake() // a retry is scheduled: the dispatcher's timer learns when
						break
					}
				}
				break
			}
			e.log.Error("webhooks: record attempts", "count", len(batch), "try", try, "err", err)
			if try == 10 {
				break
			}
			time.Sleep(time.Duration(try) * 100 * time.Millisecond)
		}
	}
}

// healthNotes is what a batch of outcomes wrote of its targets' health:
// the success times written (with the failures reset), and the targets
// that failed.
type healthNotes struct {
	healthy map[string]time.Time
	failed  map[string]bool
}

// noteHealth remembers, once their transaction committed, the successes
// this engine wrote and forgets the targets that failed since.
func (e *Engine) noteHealth(n healthNotes) {
	e.healthMu.Lock()
	defer e.healthMu.Unlock()
	for id := range n.failed {
		delete(e.healthy, id)
	}
	for id, at := range n.healthy {
		if len(e.healthy) >= maxHealthy {
			clear(e.healthy)
		}
		e.healthy[id] = at
	}
}

// maxHealthy bounds the memory of healthy targets; past it, it starts
// afresh (and the next success of each reads its target again).
const maxHealthy = 100_000

// knownHealthy reports that this engine wrote a success of the target,
// with its failures reset, less than a minute before at and saw no failure
// since: a success at at has nothing to write of the target's health.
// (Failures another process records are reset by this engine's next
// success a minute on at the latest, long before they could disable it.)
func (e *Engine) knownHealthy(id string, at time.Time) bool {
	e.healthMu.Lock()
	last, ok := e.healthy[id]
	e.healthMu.Unlock()
	return ok && at.Sub(last) <= time.Minute
}

// apply writes a batch of outcomes and their consequences for the webhooks.
func (e *Engine) apply(tx store.Tx, batch []outcome, notes *healthNotes) error {
	hooks := make(map[string]*store.Webhook)
	changed := make(map[string]bool)  // written back
	disabled := make(map[string]bool) // turned off too
	notes.healthy, notes.failed = make(map[string]time.Time), make(map[string]bool)
	for _, o := range batch {
		w := hooks[o.w.ID]
		if w == nil && o.ok && !notes.failed[o.w.ID] && e.knownHealthy(o.w.ID, o.attempt.At) {
			// The common case costs no read of the target.
			res := store.DeliveryOutcome{Attempt: o.attempt, Step: o.d.Step + 1, Status: store.DeliverySucceeded}
			if err := tx.RecordOutcome(o.d.ID, res); err != nil {
				return err
			}
			continue
		}
		if w == nil {
			cur, err := tx.Webhook(o.w.AccountID, o.w.ID)
			if errors.Is(err, store.ErrNotFound) || (err == nil && cur.Deleted()) {
				cur = *o.w // deleted meanwhile: nothing of it changes, and its deliveries end
				cur.ID = ""
			} else if err != nil {
				return err
			}
			w = &cur
			hooks[o.w.ID] = w
		}
		res := store.DeliveryOutcome{Attempt: o.attempt, Step: o.d.Step + 1}
		at := o.attempt.At
		if !o.ok {
			notes.failed[o.w.ID] = true
			delete(notes.healthy, o.w.ID)
		}
		switch {
		case o.ok:
			res.Status = store.DeliverySucceeded
			if !w.FailingSince.IsZero() || w.Failures > 0 || at.Sub(w.LastSuccessAt) > time.Minute {
				w.FailingSince, w.Failures, w.LastSuccessAt = time.Time{}, 0, at
				changed[o.w.ID] = true
			}
			if !notes.failed[o.w.ID] {
				notes.healthy[o.w.ID] = w.LastSuccessAt
			}
		case o.gone && w.Subscription && w.ID != "":
			// The destination's own subscription ended (Zapier REST Hooks):
			// deleted, its history kept until it ages out.
			res.Status = store.DeliveryFailed
			err := tx.DeleteWebhook(w.AccountID, w.ID, "the destination ended the subscription: "+o.attempt.Error, at)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			e.log.Info("connections: subscription deleted: the destination is gone", "connection", w.ID, "why", o.attempt.Error)
			w.ID = "" // its deliveries end
		case o.gone:
			res.Status = store.DeliveryFailed
			if w.Enabled && w.ID != "" {
				why := "the endpoint answered 410 Gone"
				if w.IsConnection() {
					why = "the destination is gone: " + o.attempt.Error
				}
				if err := e.disable(tx, w, at, why); err != nil {
					return err
				}
				changed[o.w.ID], disabled[o.w.ID] = true, true
			}
		default:
			if res.Step < len(Schedule) && !o.permanent {
				res.Status = store.DeliveryPending
				res.Next = at.Add(retryDelay(res.Step, o.retryIn))
			} else {
				res.Status = store.DeliveryFailed
			}
			if w.FailingSince.IsZero() {
				w.FailingSince = at
			}
			w.Failures++
			changed[o.w.ID] = true
			if w.Enabled && w.ID != "" && at.Sub(w.FailingSince) >= DisableAfter && w.Failures >= DisableMinFailures {
				err := e.disable(tx, w, at, fmt.Sprintf("no successful delivery since %s (%d failed attempts)",
					w.FailingSince.Format(time.RFC3339), w.Failures))
				if err != nil {
					return err
				}
				disabled[o.w.ID] = true
			}
		}
		if w.ID == "" && res.Status == store.DeliveryPending {
			res.Status, res.Next = store.DeliveryFailed, time.Time{} // no retry to a deleted target
		}
		if err := tx.RecordOutcome(o.d.ID, res); err != nil {
			return err
		}
	}
	for id := range changed {
		w := hooks[id]
		if w.ID == "" {
			continue
		}
		w.UpdatedAt = e.opt.Now()
		update := tx.UpdateWebhookHealth // the common case: what matching reads is unchanged
		if disabled[id] {
			update = tx.UpdateWebhook
		}
		if err := update(*w); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// disable turns a webhook or connection off and emits webhook_disabled
// (to the owner's webhooks of the domain) or connection_disabled (to the
// owner's connections), in the same transaction.
func (e *Engine) disable(tx store.Tx, w *store.Webhook, at time.Time, reason string) error {
	w.Enabled, w.DisabledReason, w.DisabledAt = false, reason, at
	var failing *time.Time
	if !w.FailingSince.IsZero() {
		fs := w.FailingSince.UTC()
		failing = &fs
	}
	var ev events.Event
	var err error
	if w.IsConnection() {
		ev, err = events.New(events.ConnectionDisabled, at, w.AccountID, w.ClientID, "", events.ConnectionDisabledData{
			ConnectionID: w.ID, Connector: w.Connector, Name: w.Name, Reason: reason, DisabledAt: at.UTC(),
			FailingSince: failing, ClientID: events.Optional(w.ClientID)})
	} else {
		ev, err = events.New(events.WebhookDisabled, at, w.AccountID, w.ClientID, w.Domain, events.WebhookDisabledData{
			WebhookID: w.ID, Domain: w.Domain, URL: w.URL, Reason: reason, DisabledAt: at.UTC(), FailingSince: failing})
	}
	if err == nil {
		err = events.Publish(tx, ev)
	}
	if err != nil {
		return err
	}
	e.log.Warn("deliveries: "+targetNoun(*w)+" disabled", "id", w.ID, "reason", reason)
	return nil
}

// connect delivers a batch of a connection's deliveries through its
// connector: one call, one outcome per delivery.
func (e *Engine) connect(ctx context.Context, cs []claimed) []outcome {
	w := cs[0].w
	now := e.opt.Now()
	evs := make([]sdk.Event, len(cs))
	for i, c := range cs {
		evs[i] = SDKEvent(*c.d, w.ClientID)
	}
	ctx, cancel := context.WithTimeout(ctx, e.opt.Timeout)
	defer cancel()
	start := time.Now()
	var rs []sdk.Result
	err := errors.New("no connector host is running")
	if e.opt.Connectors != nil {
		rs, err = e.opt.Connectors.Deliver(ctx, w.Connector, w.Settings, evs)
	}
	if err == nil && len(rs) != len(cs) {
		err = fmt.Errorf("it returned %d results for %d events", len(rs), len(cs))
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// Said plainly: gRPC words a deadline in several ways.
		err = fmt.Errorf("no answer within the %s deadline (%v)", e.opt.Timeout, err)
	}
	latency := time.Since(start)
	out := make([]outcome, len(cs))
	for i, c := range cs {
		o := outcome{d: c.d, w: c.w, attempt: store.Attempt{DeliveryID: c.d.ID, N: c.d.Attempts + 1, At: now, Latency: latency}}
		if err != nil {
			o.attempt.Result, o.attempt.Error = ResultError, truncate("connector "+w.Connector+": "+err.Error())
		} else {
			o.read(rs[i])
		}
		out[i] = o
	}
	return out
}

// read takes in what a connector answered for a delivery.
func (o *outcome) read(r sdk.Result) {
	o.attempt.Error = truncate(r.Reason)
	switch r.Outcome {
	case sdk.Delivered:
		o.ok, o.attempt.Result, o.attempt.Error = true, ResultDelivered, ""
	case sdk.Retry:
		o.retryIn, o.attempt.Result = min(r.RetryAfter, MaxRetryAfter), ResultRetry
	case sdk.Gone:
		o.gone, o.attempt.Result = true, ResultGone
	default:
		o.permanent, o.attempt.Result = true, ResultFailed
	}
}

// What a connector answered, as an attempt records it.
const (
	ResultDelivered = "delivered"
	ResultRetry     = "retry"
	ResultFailed    = "failed"
	ResultGone      = "gone"
	ResultError     = "error" // the plugin failed: not running, crashed, past its deadline
)

func truncate(s string) string {
	if len(s) <= maxResponseBody {
		return s
	}
	return strings.ToValidUTF8(s[:maxResponseBody], "")
}

// SDKEvent is a delivery as a connector receives it.
func SDKEvent(d store.Delivery, clientID string) sdk.Event {
	var b struct {
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			Domain string `json:"domain"`
		} `json:"data"`
	}
	_ = json.Unmarshal(d.Payload, &b) // the bus checked it; a zero field is all a failure costs
	return sdk.Event{ID: d.EventID, Kind: d.Event, Timestamp: b.Timestamp, Body: d.Payload, AccountID: d.AccountID,
		ClientID: clientID, Domain: b.Data.Domain}
}
