package delivery

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aivis/aivis/core/store"
)

// The dispatcher: a queue in memory per target (endpoint), each within its
// share (PerEndpoint attempts in flight, queueRounds more rounds queued),
// all within Workers; startLocked starts attempts (attempt.go) and hands
// their outcomes to the recorder (record.go). Deliveries are leased for
// e.lease in three places, one store call each: offer (the fan-out's new
// deliveries, LeaseDeliveries), claim (whatever is due, ClaimDeliveries)
// and refillOne (a spilled target's own backlog, ClaimWebhookDeliveries).

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
