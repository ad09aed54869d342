package content

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/readiness"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/core/tracing"
)

// Fetcher fetches a page; it must go through the outbound guard.
type Fetcher interface {
	Fetch(ctx context.Context, url string) (readiness.Page, error)
}

// Engine processes content requests: a durable worker pool over the
// content_requests table. A worker claims a request (a lease it renews
// while it works), runs its steps, charging each to the request's budget
// as it ends, and ends the request with its event, all in the
// transactions of the state changes. A request whose worker died is
// claimed again when its lease ends and resumes after its last paid step;
// a cancelled one is noticed within CancelPoll and stopped.
type Engine struct {
	Store   Store
	Fetcher Fetcher
	// Client and AI are the AI engine rewrites and drafts are asked of;
	// AI nil: the built-in analysis and drafts only.
	Client *probe.Client
	AI     *probe.Engine
	Prices Prices
	// MaxTokens caps each answer of the AI engine (default 2048): the
	// output part of a call's worst case.
	MaxTokens int
	Log       *slog.Logger
	Now       func() time.Time
	// Workers is how many requests are processed at once (default 2).
	Workers int
	// Lease is how long a claim holds without renewal (default 1 minute,
	// renewed every third of it); Poll is how often the queue is looked at
	// without a wake-up (default 2 s); CancelPoll, how often a processing
	// request is checked for a cancel (default 1 s).
	Lease, Poll, CancelPoll time.Duration
	// MaxAttempts bounds the claims of a request before it fails (default
	// 3), less those handed back by a graceful stop.
	MaxAttempts int
	// Holder names this process in the requests it claims (default: a
	// new random one).
	Holder string
	// Metrics counts the requests' states and what their steps spent
	// (nil: none).
	Metrics *metrics.Content

	wake chan struct{}
	once sync.Once
}

func (e *Engine) init() {
	e.once.Do(func() {
		e.wake = make(chan struct{}, 1)
		if e.Workers <= 0 {
			e.Workers = 2
		}
		if e.Lease <= 0 {
			e.Lease = time.Minute
		}
		if e.Holder == "" {
			e.Holder = randid.New("proc")
		}
		if e.Poll <= 0 {
			e.Poll = 2 * time.Second
		}
		if e.CancelPoll <= 0 {
			e.CancelPoll = time.Second
		}
		if e.MaxAttempts <= 0 {
			e.MaxAttempts = 3
		}
		if e.MaxTokens <= 0 {
			e.MaxTokens = 2048
		}
		if e.Log == nil {
			e.Log = slog.New(slog.DiscardHandler)
		}
		if e.Now == nil {
			e.Now = time.Now
		}
	})
}

// Wake tells the workers a request was queued.
func (e *Engine) Wake() {
	e.init()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run processes requests until ctx ends; the requests in flight then are
// left to their leases and resumed by the next start.
func (e *Engine) Run(ctx context.Context) {
	e.init()
	var wg sync.WaitGroup
	for range e.Workers {
		wg.Go(func() { e.work(ctx) })
	}
	wg.Wait()
}

func (e *Engine) work(ctx context.Context) {
	for ctx.Err() == nil {
		cr, err := e.claim(ctx)
		if errors.Is(err, store.ErrNotFound) {
			select {
			case <-ctx.Done():
				return
			case <-e.wake:
			case <-time.After(e.Poll):
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				e.Log.Error("content: claim", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(e.Poll):
				}
			}
			continue
		}
		// Another request may be waiting: let an idle worker look too.
		e.Wake()
		e.run(ctx, cr)
	}
}

// claim takes the next request, failing at once one claimed too often (a
// request that kills its worker every time).
func (e *Engine) claim(ctx context.Context) (store.ContentRequest, error) {
	for {
		var cr store.ContentRequest
		exhausted := false
		err := e.Store.Update(ctx, func(tx store.Tx) (err error) {
			// Read inside the transaction: claims are ordered as their times.
			now := e.Now().UTC()
			cr, err = tx.ClaimContentRequest(e.Holder, now, now.Add(e.Lease))
			if err != nil || cr.Attempts-cr.HandBacks <= e.MaxAttempts {
				return err
			}
			exhausted = true
			cr.FailureReason = fmt.Sprintf("processing stopped %d times before it ended (the server restarted or crashed)", e.MaxAttempts)
			cr, err = end(tx, cr, client.StatusFailed, now, cr.Attempts)
			if err != nil {
				return err
			}
			return Emit(ctx, tx, events.ContentRequestFailed, now, cr)
		})
		if err != nil || !exhausted {
			if err == nil {
				e.Metrics.State(client.StatusProcessing)
			}
			return cr, err
		}
		e.Metrics.State(client.StatusFailed)
		e.Log.Warn("content: request failed after its attempts", "request", cr.ID, "attempts", e.MaxAttempts)
	}
}

// errLost says the request is no longer this worker's: cancelled, or
// claimed again after the lease ended.
var errLost = fmt.Errorf("content: the request is no longer processed by this worker: %w", store.ErrLost)

// run processes one claimed request, watching for a cancel and renewing
// the lease meanwhile: a trace of its own when tracing is on, which its
// engine calls and its events join.
func (e *Engine) run(ctx context.Context, cr store.ContentRequest) {
	ctx, span := tracing.Start(ctx, "content request", trace.WithAttributes(tracing.Claim.Int(cr.Attempts)))
	defer span.End()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	watched := make(chan struct{})
	claimed := cr // the watcher's copy: process changes cr
	var lost bool // the watcher stopped the run: written before watched closes
	go func() {
		defer close(watched)
		lost = e.watch(runCtx, stop, claimed)
	}()
	err := e.process(runCtx, &cr)
	stop()
	<-watched
	if err != nil {
		tracing.Fail(span, "content")
	}
	switch {
	case err == nil: // it ended, completed or failed
		e.Metrics.State(cr.Status)
	case errors.Is(err, store.ErrLost) || lost:
		e.Log.InfoContext(ctx, "content: request left", "request", cr.ID, "reason", "cancelled or claimed again")
	case ctx.Err() != nil:
		// Shutting down: the next start resumes it at once.
		e.handBack(cr)
	default:
		e.Log.ErrorContext(ctx, "content: processing", "request", cr.ID, "err", err)
	}
}

// handBack ends this worker's lease at once, the request still
// processing with its work saved, for the next start to take; the claim
// does not count against MaxAttempts (nothing went wrong).
func (e *Engine) handBack(cr store.ContentRequest) {
	err := e.Store.Update(context.Background(), func(tx store.Tx) error {
		return tx.HandBackContentRequest(cr.ID, cr.Attempts, e.Now().UTC())
	})
	if err != nil && !errors.Is(err, store.ErrLost) {
		e.Log.Warn("content: hand back", "request", cr.ID, "err", err)
	}
}

// watch renews the lease every third of it and stops the run when the
// request is cancelled or taken over, which it reports as lost.
func (e *Engine) watch(ctx context.Context, stop context.CancelFunc, cr store.ContentRequest) (lost bool) {
	t := time.NewTicker(min(e.CancelPoll, e.Lease/3))
	defer t.Stop()
	renewed := e.Now()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		status, attempts, err := e.Store.ContentRequestClaim(ctx, cr.AccountID, cr.ID)
		if err == nil && (status != client.StatusProcessing || attempts != cr.Attempts) {
			stop()
			return true
		}
		if e.Now().Sub(renewed) < e.Lease/3 {
			continue
		}
		err = e.Store.Update(ctx, func(tx store.Tx) error {
			return tx.RenewContentLease(cr.ID, cr.Attempts, e.Now().UTC().Add(e.Lease))
		})
		switch {
		case errors.Is(err, store.ErrLost):
			stop()
			return true
		case err != nil && ctx.Err() == nil:
			e.Log.Warn("content: renew lease", "request", cr.ID, "err", err)
		case err == nil:
			renewed = e.Now()
		}
	}
}

// mine reads the request in tx, errLost unless this claim still holds it.
func (e *Engine) mine(tx store.Tx, cr store.ContentRequest) (store.ContentRequest, error) {
	cur, err := tx.ContentRequest(cr.AccountID, cr.ID)
	if err != nil {
		return cur, err
	}
	if cur.Status != client.StatusProcessing || cur.Attempts != cr.Attempts {
		return cur, errLost
	}
	return cur, nil
}

// charge records a paid step: its cost moved from the reservation to the
// spent, the step and the work so far, in one transaction. The context's
// cancellation does not undo a step already paid for.
func (e *Engine) charge(ctx context.Context, cr *store.ContentRequest, step string, cost int64, work []byte) error {
	return e.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		cur, err := e.mine(tx, *cr)
		if err != nil {
			return err
		}
		if cost < 0 || cost > cur.Budget-cur.Spent {
			return fmt.Errorf("content: step %s costs %d µ$, %d µ$ left: %w", step, cost, cur.Budget-cur.Spent, errOverBudget)
		}
		cur.Spent += cost
		cur.Step, cur.Work, cur.UpdatedAt = step, work, e.Now().UTC()
		if err := tx.UpdateContentRequest(cur, cur.Attempts); err != nil {
			return err
		}
		if err := tx.AddToBudgetMonth(cur.AccountID, cur.BudgetMonth, cost, -cost); err != nil {
			return err
		}
		*cr = cur
		return nil
	})
}

var errOverBudget = errors.New("over budget")

// setStep records the step a request is at, before its work starts.
func (e *Engine) setStep(ctx context.Context, cr *store.ContentRequest, step string) error {
	return e.Store.Update(ctx, func(tx store.Tx) error {
		cur, err := e.mine(tx, *cr)
		if err != nil {
			return err
		}
		cur.Step, cur.UpdatedAt = step, e.Now().UTC()
		if err := tx.UpdateContentRequest(cur, cur.Attempts); err != nil {
			return err
		}
		*cr = cur
		return nil
	})
}

// complete ends a request with its result and content_optimized.
func (e *Engine) complete(ctx context.Context, cr *store.ContentRequest, result []byte, before, after int) error {
	return e.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		cur, err := e.mine(tx, *cr)
		if err != nil {
			return err
		}
		now := e.Now().UTC()
		cur.Result, cur.Step = result, StepDone
		if cur, err = end(tx, cur, client.StatusCompleted, now, cur.Attempts); err != nil {
			return err
		}
		ev, err := events.New(events.ContentOptimized, now, cur.AccountID, cur.ClientID, cur.Domain, events.ContentOptimizedData{
			ID: cur.ID, Domain: cur.Domain, URL: events.Optional(cur.URL), Spent: client.USD(cur.Spent),
			ScoreBefore: before, ScoreAfter: after, ClientID: events.Optional(cur.ClientID)})
		if err != nil {
			return err
		}
		*cr = cur
		return events.Publish(ctx, tx, ev)
	})
}

// fail ends a request as failed with its reason (cleaned: it may quote a
// page or an engine) and content_request_failed.
func (e *Engine) fail(ctx context.Context, cr *store.ContentRequest, reason string) error {
	return e.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
		cur, err := e.mine(tx, *cr)
		if err != nil {
			return err
		}
		now := e.Now().UTC()
		cur.FailureReason = text.Clean(reason, 1024)
		if cur, err = end(tx, cur, client.StatusFailed, now, cur.Attempts); err != nil {
			return err
		}
		*cr = cur
		return Emit(ctx, tx, events.ContentRequestFailed, now, cur)
	})
}
