package delivery

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/tracing"
)

// The dispatcher: a queue in memory per target (endpoint), each within its
// share (PerEndpoint attempts in flight, queueRounds more rounds queued),
// all within Workers; startLocked starts attempts (attempt.go) and hands
// their outcomes to the recorder (record.go). Every delivery in memory is
// leased in the store, under a lease of its own claim (newLease), for
// e.lease, taken in three places: reserve (the fan-out's new deliveries,
// leased in the transaction that inserts them), claim (whatever is due,
// ClaimDeliveries) and refillOne (a spilled target's own backlog,
// ClaimWebhookDeliveries). An attempt whose lease is about to end renews
// it first (renew).

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

type endpoint struct {
	id       string // the webhook's or connection's
	account  string
	spilled  bool // some of its deliveries wait in the store: its queue was full
	inflight int  // deliveries
	reserved int  // the fan-out's new deliveries, leased in their insert, not queued yet
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
func (ep *endpoint) full() bool { return ep.inflight+ep.reserved+len(ep.queue) >= held(ep.limit) }

// idle reports that an endpoint has nothing to do: it may be forgotten.
func (ep *endpoint) idle() bool {
	return ep.inflight == 0 && ep.reserved == 0 && len(ep.queue) == 0 && !ep.spilled
}

// claimed is a delivery on its way, with its target. Both are shared, and
// read only: the target may be the fan-out's cached match.
type claimed struct {
	d *store.Delivery
	w *store.Webhook
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
	if err == nil && w.Enabled && !e.isHeld(ep.id, e.opt.Now()) {
		e.mu.Lock()
		room := held(ep.limit) - ep.inflight - ep.reserved - len(ep.queue)
		e.mu.Unlock()
		more = room <= 0 // refilled meanwhile: its turn comes again
		if room > 0 {
			now := e.opt.Now()
			got, more, err = e.store.ClaimWebhookDeliveries(ctx, e.newLease(), ep.id, now, now.Add(e.lease), room)
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
		free -= len(ep.queue) + ep.reserved
		if ep.full() {
			skip = append(skip, id)
		}
	}
	e.mu.Unlock()
	shares := len(skip)
	skip = append(skip, e.holding(e.opt.Now())...) // their connector does not run
	if free <= 0 {
		return 0, true, nil
	}
	now := e.opt.Now()
	ds, hooks, err := e.store.ClaimDeliveries(ctx, e.newLease(), now, now.Add(e.lease), min(free, 1024), held(e.opt.PerEndpoint), skip)
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
	if len(got) == 0 && shares == 0 {
		// Nothing due is left in the store but what waits for a connector
		// that does not run, which the next poll finds once its wait ends.
		// (A claim that took some may have left more: it takes at most an
		// endpoint's share of a target.)
		e.backlog.Store(false)
	}
	return len(got), len(got) >= free, nil
}

// reserve gives the fan-out's new pending deliveries a lease where their
// endpoints have room, to be taken in the transaction that inserts them:
// those then go out without a claim (offer), the common case of an event on
// its way at once; the rest wait in the store for a claim or a refill.
func (e *Engine) reserve(cs []claimed) []claimed {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runCtx == nil || e.runCtx.Err() != nil {
		return nil
	}
	queued := e.reserved
	for _, ep := range e.endpoints {
		queued += len(ep.queue)
	}
	var take []claimed
	lease, until := e.newLease(), e.opt.Now().Add(e.lease)
	now := e.opt.Now()
	for _, c := range cs {
		if e.isHeld(c.w.ID, now) {
			continue // its connector does not run: a claim takes them once it may again
		}
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
		ep.reserved++
		c.d.Lease, c.d.LeaseUntil = lease, until
		take = append(take, c)
	}
	e.reserved += len(take)
	return take
}

// offer queues the reserved deliveries that their transaction inserted
// (added), and gives back the room of the rest (a repeat of an event, a
// target deleted meanwhile, a transaction that failed).
func (e *Engine) offer(reserved []claimed, added map[*store.Delivery]bool) {
	if len(reserved) == 0 {
		if e.backlog.Load() {
			e.Wake()
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reserved -= len(reserved)
	for _, c := range reserved {
		ep := e.endpoints[c.w.ID]
		ep.reserved--
		if added[c.d] {
			ep.queue = append(ep.queue, c)
		}
	}
	ctx := e.runCtx
	for _, c := range reserved {
		if ep := e.endpoints[c.w.ID]; ep != nil && !e.forgetIfIdleLocked(ep) && ctx.Err() == nil {
			e.startLocked(ctx, ep, e.sends)
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
			if cs := e.renew(ctx, cs); len(cs) > 0 {
				out := e.attempt(context.WithoutCancel(ctx), cs)
				if out[0].unavailable {
					e.hold(ctx, cs)
				} else {
					if cs[0].w.IsConnection() {
						e.release(cs[0].w.ID)
					}
					for _, o := range out {
						e.outcomes <- o
					}
				}
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

// renew extends the leases of deliveries about to be attempted that would
// end before their attempt's outcome could be recorded (they waited long
// behind a slow target), and leaves out those it lost: another claim took
// them once their lease ended. A renewal that fails leaves them as they
// are: their outcome is refused if they were lost, recorded if not.
func (e *Engine) renew(ctx context.Context, cs []claimed) []claimed {
	now := e.opt.Now()
	var due []store.Delivery
	for _, c := range cs {
		if c.d.LeaseUntil.Sub(now) < e.opt.Timeout+renewMargin {
			due = append(due, *c.d)
		}
	}
	if len(due) == 0 {
		return cs
	}
	until := now.Add(e.lease)
	kept, err := e.store.RenewLeases(context.WithoutCancel(ctx), due, until)
	if err != nil {
		e.log.Warn("webhooks: renew leases", "count", len(due), "err", err)
		return cs
	}
	renewed := make(map[string]bool, len(kept))
	for _, id := range kept {
		renewed[id] = true
	}
	out := cs[:0:0]
	for _, c := range cs {
		switch {
		case c.d.LeaseUntil.Sub(now) >= e.opt.Timeout+renewMargin:
			out = append(out, c)
		case renewed[c.d.ID]:
			d := *c.d
			d.LeaseUntil = until
			out = append(out, claimed{&d, c.w})
		default:
			e.log.InfoContext(tracing.FromParent(ctx, c.d.Trace), "webhooks: delivery left: its lease ended and another claim took it", "delivery", c.d.ID)
		}
	}
	return out
}

// renewMargin is how long before its end, beyond an attempt's timeout, a
// lease is renewed: time for the outcome to be recorded (a batch of them
// commits in milliseconds).
const renewMargin = 5 * time.Second
