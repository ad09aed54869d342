package visibility

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/core/tracing"
)

// SourceScan is the source of readings a scan records.
const SourceScan = "scan"

// Outcome is what a scan measured: the reading's figures and the
// breakdown behind them (kept with the scan, shown by the API).
type Outcome struct {
	VisibilityScore int
	Sentiment       string
	SentimentScore  float64
	ReadinessScore  int
	// FormulaVersion is the score's formula the figures were made with
	// (FormulaVersion; 0: not said).
	FormulaVersion int
	Breakdown      json.RawMessage
	// PromptSet is the prompt set the engines were asked; nil when none was.
	PromptSet *PromptSet
	// Answers are the engines' answers, kept with the scan as the evidence
	// of its figures.
	Answers []store.ScanAnswer
}

// Scanner measures a monitored domain. It must return when ctx ends.
type Scanner interface {
	Scan(ctx context.Context, d store.MonitoredDomain) (Outcome, error)
}

// ScanResult is a completed scan's result as the scans table keeps it.
type ScanResult struct {
	VisibilityScore int             `json:"visibility_score"`
	Sentiment       string          `json:"sentiment"`
	SentimentScore  float64         `json:"sentiment_score"`
	ReadinessScore  int             `json:"readiness_score"`
	Breakdown       json.RawMessage `json:"breakdown"`
	PromptSet       *PromptSet      `json:"prompt_set"`
}

// Scans runs the durable scan queue: a scheduler that enqueues each
// monitored domain at its tier's interval, and workers that lease queued
// scans, run the scanner, and store each result with its reading and its
// events in one transaction. A scan whose process died is leased again
// once its lease ends: a restart resumes every scan.
type Scans struct {
	Store    Store
	Scanner  Scanner
	Recorder *Recorder
	Log      *slog.Logger
	Now      func() time.Time
	// Workers is how many scans run at once (default 2).
	Workers int
	// Lease is how long a running scan is held between renewals (default
	// 2 minutes; renewed every third of it).
	Lease time.Duration
	// Poll is how often the queue and the schedule are looked at without
	// a wake-up (default 5 s).
	Poll time.Duration
	// MaxAttempts bounds the attempts of a scan (default 3): those whose
	// scanner failed, whose result could not be recorded, or whose worker
	// died; one handed back at shutdown is not counted.
	MaxAttempts int
	// Holder names this process in the scans it claims (default: a new
	// random one).
	Holder string
	// Metrics counts the scans' ends (nil: none).
	Metrics *metrics.Scans
	// Completed, when set, is called after a scan's completion is
	// recorded, on the worker that ran it (a change's lift is measured
	// there: changes.Service.Due).
	Completed func(ctx context.Context, sc store.Scan)

	wake chan struct{}
	once sync.Once
}

func (s *Scans) init() {
	s.once.Do(func() {
		s.wake = make(chan struct{}, 1)
		if s.Workers <= 0 {
			s.Workers = 2
		}
		if s.Lease <= 0 {
			s.Lease = 2 * time.Minute
		}
		if s.Poll <= 0 {
			s.Poll = 5 * time.Second
		}
		if s.MaxAttempts <= 0 {
			s.MaxAttempts = 3
		}
		if s.Holder == "" {
			s.Holder = randid.New("proc")
		}
		if s.Log == nil {
			s.Log = slog.New(slog.DiscardHandler)
		}
	})
}

func (s *Scans) signal() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Request enqueues a scan of a monitored domain of the principal's owner,
// or returns the one already queued or running. It takes the place of the
// next scheduled scan: that comes a full interval of the tier on.
func (s *Scans) Request(ctx context.Context, p auth.Principal, in client.RequestScan) (store.Scan, error) {
	d, err := domains.Normalize(in.Domain)
	if err != nil {
		return store.Scan{}, fault.Invalid(fault.FieldError{Field: "domain", Message: err.Error()})
	}
	clientID, err := accounts.Owner(ctx, s.Store, p, in.ClientID)
	if err != nil {
		return store.Scan{}, err
	}
	md, err := s.monitored(ctx, p.AccountID(), clientID, d)
	if err != nil {
		return store.Scan{}, err
	}
	var sc store.Scan
	now := s.Now()
	err = s.Store.Update(ctx, func(tx store.Tx) (err error) {
		if sc, err = enqueue(tx, md, store.ScanManual, now); err != nil {
			return err
		}
		cur, err := tx.MonitoredDomain(md.AccountID, md.ID)
		if err != nil {
			return err
		}
		cur.NextScanAt = nextScan(p.Account.Tier, now)
		return tx.UpdateDomain(cur)
	})
	if err == nil {
		s.signal()
	}
	return sc, err
}

// monitored finds an owner's monitored domain by name.
func (s *Scans) monitored(ctx context.Context, accountID, clientID, domain string) (store.MonitoredDomain, error) {
	cursor := ""
	for {
		ds, next, err := s.Store.ListDomains(ctx, store.DomainFilter{AccountID: accountID, ClientID: clientID, Cursor: cursor, Limit: 100})
		if err != nil {
			return store.MonitoredDomain{}, err
		}
		for _, d := range ds {
			if d.Domain == domain {
				return d, nil
			}
		}
		if next == "" {
			return store.MonitoredDomain{}, fault.New(fault.NotFound, "%s is not monitored: add it with POST /v1/domains first", domain)
		}
		cursor = next
	}
}

// enqueue adds a scan of md unless one is queued or running.
func enqueue(tx store.Tx, md store.MonitoredDomain, trigger string, now time.Time) (store.Scan, error) {
	sc, err := tx.ActiveScan(md.ID)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return sc, err
	}
	sc = store.Scan{ID: randid.New("scan"), AccountID: md.AccountID, ClientID: md.ClientID, DomainID: md.ID, Domain: md.Domain,
		Trigger: trigger, Status: store.ScanQueued, CreatedAt: now}
	return sc, tx.InsertScan(sc)
}

// Get reads a scan the principal may see.
func (s *Scans) Get(ctx context.Context, p auth.Principal, id string) (store.Scan, error) {
	sc, err := s.Store.Scan(ctx, p.AccountID(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && p.ClientID() != "" && sc.ClientID != p.ClientID()) {
		return store.Scan{}, fault.New(fault.NotFound, "no scan %s", id)
	}
	return sc, err
}

// Run schedules and runs scans until ctx ends. Scans running then are
// handed back to the queue.
func (s *Scans) Run(ctx context.Context) {
	s.init()
	schedule := func() {
		if err := s.schedule(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error("scans: schedule", "err", err)
		}
	}
	// The scans due at start join those already queued before any worker
	// can take (and finish) one.
	schedule()
	var wg sync.WaitGroup
	for range s.Workers {
		wg.Go(func() { s.work(ctx) })
	}
	t := time.NewTicker(s.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		}
		schedule()
	}
}

// schedule enqueues the scans that are due and sets each domain's next.
func (s *Scans) schedule(ctx context.Context) error {
	now := s.Now()
	n := 0
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		n = 0
		due, err := tx.DueDomains(now, 100)
		if err != nil {
			return err
		}
		for _, d := range due {
			if _, err := enqueue(tx, d.MonitoredDomain, store.ScanScheduled, now); err != nil {
				return err
			}
			d.NextScanAt = nextScan(d.Tier, now)
			if err := tx.UpdateDomain(d.MonitoredDomain); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if n > 0 {
		s.signal()
	}
	return err
}

// nextScan is when a domain of an account of the tier is scanned next
// after a scan at now: the tier's interval on, an hour at the least.
func nextScan(tierName string, now time.Time) time.Time {
	tier, _ := limits.TierByName(tierName)
	return now.Add(max(tier.ScanInterval, time.Hour))
}

// work claims and runs scans until ctx ends.
func (s *Scans) work(ctx context.Context) {
	for ctx.Err() == nil {
		sc, err := s.claim(ctx)
		if errors.Is(err, store.ErrNotFound) {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			case <-time.After(s.Poll):
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Error("scans: claim", "err", err)
				time.Sleep(s.Poll)
			}
			continue
		}
		s.run(ctx, sc)
	}
}

// claim takes the next scan, failing at once one claimed past its
// attempts (handed back at shutdown not counted): its workers died, or
// its end could not be recorded, each time.
func (s *Scans) claim(ctx context.Context) (store.Scan, error) {
	for {
		var sc store.Scan
		exhausted := false
		now := s.Now()
		err := s.Store.Update(ctx, func(tx store.Tx) (err error) {
			sc, err = tx.ClaimScan(s.Holder, now, now.Add(s.Lease))
			if exhausted = err == nil && sc.Attempts-sc.HandBacks > s.MaxAttempts; !exhausted {
				return err
			}
			sc.Status, sc.Error, sc.FinishedAt, sc.LeaseUntil, sc.Holder = store.ScanFailed,
				fmt.Sprintf("the scan stopped %d times before its end was recorded", s.MaxAttempts), now, time.Time{}, ""
			return tx.UpdateScan(sc)
		})
		if err != nil || !exhausted {
			return sc, err
		}
		s.Metrics.Ended(metrics.ScanFailed)
		s.Log.Warn("scans: scan failed after its attempts", "scan", sc.ID, "domain", sc.Domain, "attempts", s.MaxAttempts)
	}
}

// run runs one leased scan, renewing its lease, and records its end: a
// trace of its own when tracing is on, which its engine calls and its
// events join.
func (s *Scans) run(ctx context.Context, sc store.Scan) {
	ctx, span := tracing.Start(ctx, "scan", trace.WithAttributes(tracing.Claim.Int(sc.Attempts)))
	defer span.End()
	md, err := s.Store.MonitoredDomain(ctx, sc.AccountID, sc.DomainID)
	if errors.Is(err, store.ErrNotFound) {
		s.finish(ctx, sc, nil, errors.New("the domain is no longer monitored"), true)
		return
	} else if err != nil {
		s.Log.ErrorContext(ctx, "scans: read domain", "scan", sc.ID, "err", err)
		return // its lease ends and it is claimed again
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	renewed := make(chan struct{})
	var lost bool // the lease went to another claim: written before renewed closes
	go func() {
		defer close(renewed)
		t := time.NewTicker(s.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			sc.LeaseUntil = s.Now().Add(s.Lease)
			cur := sc
			err := s.Store.Update(runCtx, func(tx store.Tx) error { return tx.UpdateScan(cur) })
			switch {
			case errors.Is(err, store.ErrLost):
				lost = true
				cancel()
				return
			case err != nil && runCtx.Err() == nil:
				s.Log.Warn("scans: renew lease", "scan", sc.ID, "err", err)
			}
		}
	}()
	out, err := s.Scanner.Scan(runCtx, md)
	cancel()
	<-renewed
	if err != nil {
		tracing.Fail(span, "scan")
	}
	switch {
	case lost:
		s.Log.InfoContext(ctx, "scans: scan left", "scan", sc.ID, "reason", "its lease ended and another worker took it")
	case ctx.Err() != nil:
		s.requeue(sc) // shutting down: the next start takes it again
	default:
		s.finish(ctx, sc, &out, err, sc.Attempts-sc.HandBacks >= s.MaxAttempts)
	}
}

// requeue hands a scan back to the queue, not counting this claim against
// its attempts.
func (s *Scans) requeue(sc store.Scan) {
	sc.Status, sc.LeaseUntil, sc.Holder = store.ScanQueued, time.Time{}, ""
	sc.HandBacks++
	if err := s.Store.Update(context.Background(), func(tx store.Tx) error { return tx.UpdateScan(sc) }); err != nil {
		s.Log.Warn("scans: requeue", "scan", sc.ID, "err", err)
	}
}

// errUnrecorded is the failure of an attempt whose result could not be
// recorded (the log says why).
var errUnrecorded = errors.New("the scan's result could not be recorded")

// finish records a scan's end: on success its result, its answers, the
// reading (and ai_visibility_change when it changed), citation_change for
// each engine whose citation rate moved since the previous scan, and
// scan_completed, together; on failure, another attempt or, after the
// last, the failure.
func (s *Scans) finish(ctx context.Context, sc store.Scan, out *Outcome, scanErr error, last bool) {
	now := s.Now()
	ctx = context.WithoutCancel(ctx) // the end is recorded whatever stops meanwhile
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		if scanErr != nil {
			sc.Error, sc.LeaseUntil, sc.Holder = text.Clean(scanErr.Error(), 1024), time.Time{}, ""
			sc.Status = store.ScanQueued
			if last {
				sc.Status, sc.FinishedAt = store.ScanFailed, now
			}
			return tx.UpdateScan(sc)
		}
		prev, err := tx.LatestScan(sc.AccountID, sc.ClientID, sc.Domain) // before this one is
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		res, err := json.Marshal(ScanResult{VisibilityScore: out.VisibilityScore, Sentiment: out.Sentiment,
			SentimentScore: out.SentimentScore, ReadinessScore: out.ReadinessScore, Breakdown: out.Breakdown, PromptSet: out.PromptSet})
		if err != nil {
			return err
		}
		sc.Status, sc.Result, sc.Error, sc.LeaseUntil, sc.FinishedAt = store.ScanCompleted, res, "", time.Time{}, now
		if err := tx.UpdateScan(sc); err != nil {
			return err
		}
		if err := insertAnswers(tx, sc, out.Answers, now); err != nil {
			return err
		}
		rd := store.Reading{AccountID: sc.AccountID, ClientID: sc.ClientID, Domain: sc.Domain, VisibilityScore: out.VisibilityScore,
			Sentiment: out.Sentiment, SentimentScore: out.SentimentScore, Source: SourceScan, MeasuredAt: now.UTC(),
			FormulaVersion: out.FormulaVersion}
		if _, _, err := s.Recorder.AddTx(ctx, tx, rd); err != nil {
			return err
		}
		if md, err := tx.MonitoredDomain(sc.AccountID, sc.DomainID); err == nil {
			md.LastScanAt = now
			if err := tx.UpdateDomain(md); err != nil {
				return err
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		evs, err := completionEvents(sc, out, prev, now)
		if err != nil {
			return err
		}
		return events.Publish(ctx, tx, evs...)
	})
	switch {
	case errors.Is(err, store.ErrLost):
		s.Log.InfoContext(ctx, "scans: scan left", "scan", sc.ID, "reason", "its lease ended and another worker took it")
		return
	case err != nil && scanErr == nil:
		// What the scan found could not be kept: the attempt failed. Its
		// failure is recorded instead (should that fail too, its lease ends,
		// and its claims are counted).
		s.Log.ErrorContext(ctx, "scans: record the end", "scan", sc.ID, "err", err)
		s.finish(ctx, sc, nil, errUnrecorded, last)
		return
	case err != nil:
		s.Log.ErrorContext(ctx, "scans: record the failure", "scan", sc.ID, "err", err)
		return // its lease ends and it is claimed again
	}
	s.Metrics.Ended(ended(sc.Status))
	if scanErr != nil {
		s.Log.WarnContext(ctx, "scans: attempt failed", "scan", sc.ID, "domain", sc.Domain, "attempt", sc.Attempts, "err", scanErr)
	} else if s.Completed != nil {
		s.Completed(ctx, sc)
	}
}
