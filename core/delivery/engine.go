// Package delivery delivers aivis's events to webhook endpoints, as the
// best webhook services do: durable, at least once, signed per Standard
// Webhooks, retried on a schedule, with a log of every attempt.
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
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/webhook"
)

// Options tune the engine; the zero value of each field takes its default.
type Options struct {
	Timeout     time.Duration // per attempt, default 15 s
	Workers     int           // attempts in flight at once, default 256
	PerEndpoint int           // attempts in flight per webhook, default 16
	Now         func() time.Time
	// Idle is the longest the dispatcher sleeps without looking for due
	// deliveries that another process wrote (default 1 s).
	Idle time.Duration
}

// Engine runs the fan-out and the dispatcher.
type Engine struct {
	store  store.Store
	sub    message.Subscriber
	client *http.Client
	log    *slog.Logger
	opt    Options
	lease  time.Duration

	wake     chan struct{}
	outcomes chan outcome
	inserts  chan insertion
	stopped  chan struct{} // closed when the fan-out has stopped

	mu        sync.Mutex
	inflight  int
	endpoints map[string]*endpoint
	runCtx    context.Context // the dispatcher's, for attempts the fan-out hands over
	sends     *sync.WaitGroup
	backlog   atomic.Bool // due deliveries may wait in the store for a claim
}

type endpoint struct {
	inflight int
	queue    []claimed
}

type claimed struct {
	d store.Delivery
	w store.Webhook
}

type outcome struct {
	d       store.Delivery
	w       store.Webhook
	attempt store.Attempt
	retryIn time.Duration // honoured Retry-After
	gone    bool          // 410
}

// New builds an engine. client makes the attempts (a netguard client: it
// must not follow redirects); sub is the subscriber of the event topic.
func New(st store.Store, sub message.Subscriber, client *http.Client, log *slog.Logger, opt Options) *Engine {
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
	return &Engine{store: st, sub: sub, client: client, log: log, opt: opt,
		// A claimed delivery may wait behind a full endpoint for as long
		// as one round of its attempts.
		lease:     3*opt.Timeout + 5*time.Second,
		wake:      make(chan struct{}, 1),
		outcomes:  make(chan outcome, 1024),
		inserts:   make(chan insertion),
		stopped:   make(chan struct{}),
		endpoints: make(map[string]*endpoint)}
}

// BusLogger is Watermill's logger for the product: its routine messages
// (handlers added, started, stopped) at debug, its warnings and errors as
// they are.
func BusLogger(log *slog.Logger) watermill.LoggerAdapter {
	return watermill.NewSlogLoggerWithLevelMapping(log, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug})
}

// Wake makes the dispatcher look for due deliveries at once.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
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

// fanout turns one event into its deliveries.
func (e *Engine) fanout(msg *message.Message) error {
	ev, err := events.FromMessage(msg)
	if err != nil {
		e.log.Error("webhooks: unreadable event dropped", "message", msg.UUID, "err", err)
		return nil // a malformed message would be redelivered forever
	}
	ctx := msg.Context()
	var targets []store.Webhook
	if ev.WebhookID != "" {
		w, err := e.store.Webhook(ctx, ev.AccountID, ev.WebhookID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		targets = append(targets, w)
	} else if ev.Domain != "" {
		ws, err := e.store.MatchWebhooks(ctx, ev.AccountID, ev.ClientID, ev.Domain)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if Wants(w, ev) {
				targets = append(targets, w)
			}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	now := e.opt.Now()
	ds := make([]claimed, 0, len(targets))
	for _, w := range targets {
		d := store.Delivery{ID: randid.New("dlv"), WebhookID: w.ID, AccountID: w.AccountID,
			EventID: ev.ID, Event: ev.Event, Payload: msg.Payload, Status: store.DeliveryPending,
			NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
		if !w.Enabled {
			// Kept, not attempted: a replay after enabling sends it.
			d.Status, d.NextAttemptAt, d.LastError = store.DeliveryFailed, time.Time{}, "the webhook was disabled"
		}
		ds = append(ds, claimed{d, w})
	}
	req := insertion{ds: ds, done: make(chan error, 1)}
	select {
	case e.inserts <- req:
	case <-e.stopped:
		return errors.New("webhooks: stopping")
	}
	return <-req.done // acked only once the deliveries are committed
}

// FanoutInFlight is the MaxInFlight to give the fan-out's subscriber: how
// many events it handles at once, their deliveries committed together.
const FanoutInFlight = 64

// insertion is one event's deliveries, waiting for a transaction.
type insertion struct {
	ds   []claimed
	done chan error
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
		err := e.store.Update(context.Background(), func(tx store.Tx) error {
			added = added[:0]
			for _, req := range batch {
				for _, c := range req.ds {
					ok, err := tx.InsertDelivery(c.d)
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
			e.offer(added)
		}
	}
}

// Wants reports whether a webhook is to receive an event: it subscribes to
// the kind and, for a visibility change, the score moved at least its
// minimum (the first reading of a domain always counts). A disabled webhook
// wants its events too: they are kept as failed deliveries.
func Wants(w store.Webhook, ev events.Event) bool {
	if !containsKind(w.Events, ev.Event) {
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

// claim leases what the free capacity allows and starts it; full reports
// that no capacity is left.
func (e *Engine) claim(ctx context.Context, sends *sync.WaitGroup) (n int, full bool, err error) {
	e.mu.Lock()
	free := e.opt.Workers - e.inflight
	var skip []string // endpoints with a full share: their turn comes later
	for id, ep := range e.endpoints {
		free -= len(ep.queue)
		if ep.inflight+len(ep.queue) >= e.opt.PerEndpoint {
			skip = append(skip, id)
		}
	}
	e.mu.Unlock()
	if free <= 0 {
		return 0, true, nil
	}
	now := e.opt.Now()
	ds, hooks, err := e.store.ClaimDeliveries(ctx, now, now.Add(e.lease), min(free, 256), e.opt.PerEndpoint, skip)
	if err != nil {
		return 0, false, err
	}
	got := make([]claimed, len(ds))
	for i, d := range ds {
		got[i] = claimed{d, hooks[d.WebhookID]}
	}
	e.mu.Lock()
	for _, c := range got {
		ep := e.endpoints[c.w.ID]
		if ep == nil {
			ep = &endpoint{}
			e.endpoints[c.w.ID] = ep
		}
		ep.queue = append(ep.queue, c)
		e.startLocked(ctx, ep, sends)
	}
	e.mu.Unlock()
	if len(got) == 0 && len(skip) == 0 {
		// Nothing due is left in the store. (A claim that took some may
		// have left more: it takes at most PerEndpoint of a webhook.)
		e.backlog.Store(false)
	}
	return len(got), len(got) >= free, nil
}

// offer hands new deliveries straight to their endpoints' queues where
// there is room, leased like claimed ones; the rest wait in the store for a
// claim. The common case, an event on its way at once, costs no query.
func (e *Engine) offer(cs []claimed) {
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
		room := ep == nil || ep.inflight+len(ep.queue) < e.opt.PerEndpoint
		if !room || e.inflight+queued+len(take) >= e.opt.Workers {
			e.backlog.Store(true)
			continue
		}
		if ep == nil {
			ep = &endpoint{}
			e.endpoints[c.w.ID] = ep
		}
		ep.queue = append(ep.queue, c) // holds its room until leased below
		take = append(take, c)
		ids = append(ids, c.d.ID)
	}
	leased := map[string]bool{}
	for _, id := range e.store.LeaseDeliveries(ids, e.opt.Now().Add(e.lease)) {
		leased[id] = true
	}
	for _, c := range take {
		ep := e.endpoints[c.w.ID]
		if !leased[c.d.ID] { // a claim has it already
			ep.queue = slices.DeleteFunc(ep.queue, func(q claimed) bool { return q.d.ID == c.d.ID })
		}
	}
	for _, c := range take {
		if ep := e.endpoints[c.w.ID]; ep != nil {
			e.startLocked(e.runCtx, ep, e.sends)
		}
	}
	if e.backlog.Load() {
		e.Wake()
	}
}

// startLocked starts queued attempts of an endpoint within its limit.
func (e *Engine) startLocked(ctx context.Context, ep *endpoint, sends *sync.WaitGroup) {
	for ep.inflight < e.opt.PerEndpoint && len(ep.queue) > 0 {
		c := ep.queue[0]
		ep.queue = ep.queue[1:]
		ep.inflight++
		e.inflight++
		sends.Go(func() {
			// An attempt started before shutdown runs to its own timeout.
			o := e.attempt(context.WithoutCancel(ctx), c)
			e.outcomes <- o
			e.mu.Lock()
			ep.inflight--
			e.inflight--
			if ctx.Err() == nil {
				e.startLocked(ctx, ep, sends)
			}
			if ep.inflight == 0 && len(ep.queue) == 0 {
				delete(e.endpoints, c.w.ID)
			}
			e.mu.Unlock()
			if e.backlog.Load() { // deliveries wait in the store for room
				e.Wake()
			}
		})
	}
}

// maxResponseBody is how much of an endpoint's answer the log keeps.
const maxResponseBody = 1024

// attempt makes one signed request.
func (e *Engine) attempt(ctx context.Context, c claimed) outcome {
	now := e.opt.Now()
	secrets := []string{c.w.Secret}
	if c.w.PrevSecret != "" && now.Before(c.w.PrevSecretEnd) {
		secrets = append(secrets, c.w.PrevSecret)
	}
	o := outcome{d: c.d, w: c.w}
	var h http.Header
	o.attempt, h = post(ctx, e.client, e.opt.Timeout, c.w.URL, secrets, c.d.EventID, c.d.Payload,
		store.Attempt{DeliveryID: c.d.ID, N: c.d.Attempts + 1, At: now})
	switch o.attempt.StatusCode {
	case http.StatusGone:
		o.gone = true
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		o.retryIn = parseRetryAfter(h.Get("Retry-After"), now)
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
		a.Error = err.Error()
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
		a.Error = fmt.Sprintf("redirect to %q not followed", resp.Header.Get("Location"))
	}
	return a, resp.Header
}

func attemptError(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no response within %s", timeout)
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	return err.Error()
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
			err := e.store.Update(context.Background(), func(tx store.Tx) error { return e.apply(tx, batch) })
			if err == nil {
				for _, o := range batch {
					if o.attempt.StatusCode < 200 || o.attempt.StatusCode >= 300 {
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

// apply writes a batch of outcomes and their consequences for the webhooks.
func (e *Engine) apply(tx store.Tx, batch []outcome) error {
	hooks := make(map[string]*store.Webhook)
	changed := make(map[string]bool)
	for _, o := range batch {
		w := hooks[o.w.ID]
		if w == nil {
			cur, err := tx.Webhook(o.w.AccountID, o.w.ID)
			if errors.Is(err, store.ErrNotFound) {
				cur = o.w // deleted meanwhile: its deliveries went with it
				cur.ID = ""
			} else if err != nil {
				return err
			}
			w = &cur
			hooks[o.w.ID] = w
		}
		res := store.DeliveryOutcome{Attempt: o.attempt, Step: o.d.Step + 1}
		at := o.attempt.At
		ok := o.attempt.StatusCode >= 200 && o.attempt.StatusCode < 300
		switch {
		case ok:
			res.Status = store.DeliverySucceeded
			if !w.FailingSince.IsZero() || w.Failures > 0 || at.Sub(w.LastSuccessAt) > time.Minute {
				w.FailingSince, w.Failures, w.LastSuccessAt = time.Time{}, 0, at
				changed[o.w.ID] = true
			}
		case o.gone:
			res.Status = store.DeliveryFailed
			if w.Enabled && w.ID != "" {
				if err := e.disable(tx, w, at, "the endpoint answered 410 Gone"); err != nil {
					return err
				}
				changed[o.w.ID] = true
			}
		default:
			if res.Step < len(Schedule) {
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
			}
		}
		if err := tx.RecordOutcome(o.d.ID, res); err != nil && w.ID != "" {
			return err
		}
	}
	for id := range changed {
		w := hooks[id]
		if w.ID == "" {
			continue
		}
		w.UpdatedAt = e.opt.Now()
		if err := tx.UpdateWebhook(*w); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// disable turns a webhook off and emits webhook_disabled to the owner's
// other webhooks that want it, in the same transaction.
func (e *Engine) disable(tx store.Tx, w *store.Webhook, at time.Time, reason string) error {
	w.Enabled, w.DisabledReason, w.DisabledAt = false, reason, at
	data := events.WebhookDisabledData{WebhookID: w.ID, Domain: w.Domain, URL: w.URL, Reason: reason, DisabledAt: at.UTC()}
	if !w.FailingSince.IsZero() {
		fs := w.FailingSince.UTC()
		data.FailingSince = &fs
	}
	ev, err := events.New(events.WebhookDisabled, at, w.AccountID, w.ClientID, w.Domain, data)
	if err == nil {
		err = events.Publish(tx, ev)
	}
	if err != nil {
		return err
	}
	e.log.Warn("webhooks: endpoint disabled", "webhook", w.ID, "reason", reason)
	return nil
}
