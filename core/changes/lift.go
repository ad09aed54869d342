package changes

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
)

// LiftOptions are what a caller may set of a lift; zero is lift's
// default.
type LiftOptions struct {
	// Scans is the window on each side of the change, 1 to lift.MaxScans.
	Scans int
	// Effect is the difference of a rate or share the scans needed are
	// computed for (0.10: 10 points), between 0 and 1; PositionEffect,
	// of the average position, in ranks.
	Effect         float64
	PositionEffect float64
	// Resamples is the bootstrap's, lift.MinResamples to
	// lift.MaxResamples.
	Resamples int
}

// Lift is a change with its lift.
type Lift struct {
	Change store.Change
	Report lift.Report
}

// Lift measures the lift of a change of the domain from the answers its
// scans kept: those of the last opts.Scans completed scans before the
// change and the first opts.Scans after it, every engine's, of the
// domain's owner. Scans whose answers the retention forgot bring none:
// too few answers are lift's insufficient_data.
func (s *Service) Lift(ctx context.Context, d store.MonitoredDomain, changeID string, opts LiftOptions) (Lift, error) {
	if err := opts.check(); err != nil {
		return Lift{}, err
	}
	c, err := s.Get(ctx, d, changeID)
	if err != nil {
		return Lift{}, err
	}
	rep, err := s.measure(ctx, d, c, opts)
	return Lift{Change: c, Report: rep}, err
}

// check refuses options outside lift's bounds.
func (o LiftOptions) check() error {
	var f fault.Fields
	if o.Scans < 0 || o.Scans > lift.MaxScans {
		f.Add("scans", "must be 1 to %d", lift.MaxScans)
	}
	if !(o.Effect >= 0 && o.Effect < 1) {
		f.Add("effect", "must be more than 0 and less than 1 (0.10 is 10 points)")
	}
	if !(o.PositionEffect >= 0 && o.PositionEffect <= 100) {
		f.Add("position_effect", "must be more than 0 and at most 100 ranks")
	}
	if o.Resamples != 0 && (o.Resamples < lift.MinResamples || o.Resamples > lift.MaxResamples) {
		f.Add("resamples", "must be %d to %d", lift.MinResamples, lift.MaxResamples)
	}
	return f.Err()
}

// measure computes a change's lift.
func (s *Service) measure(ctx context.Context, d store.MonitoredDomain, c store.Change, opts LiftOptions) (lift.Report, error) {
	n := opts.Scans
	if n == 0 {
		n = lift.DefaultScans
	}
	// Every scan before the change a window could hold counts towards
	// the window the change needs: read MaxScans of them, and the
	// answers of those in the window only.
	before, after, engines, err := s.around(ctx, d, c, lift.MaxScans, n)
	if err != nil {
		return lift.Report{}, err
	}
	window, earlier := before[max(0, len(before)-n):], before[:max(0, len(before)-n)]
	ended := map[string]time.Time{}
	for _, sc := range slices.Concat(before, after) {
		ended[sc.ID] = sc.FinishedAt
	}
	targeted := map[string]bool{}
	for _, p := range c.Prompts {
		targeted[fold(p)] = true
	}
	answers, err := s.answers(ctx, d, append(scanIDs(window), scanIDs(after)...), ended, targeted)
	if err != nil {
		return lift.Report{}, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
	}
	// The scans before the window count (lift's history): an answer of
	// each engine that answered in them, which no measure reads.
	for _, sc := range earlier {
		for _, e := range engines[sc.ID] {
			answers = append(answers, lift.Answer{Scan: sc.ID, At: sc.FinishedAt, Engine: e, Prompt: "-"})
		}
	}
	rep, err := lift.Compute(lift.Request{Answers: answers, Change: c.At, Scans: n, Effect: opts.Effect, PositionEffect: opts.PositionEffect,
		Resamples: opts.Resamples, Seed: seed(c.ID)})
	if err != nil {
		return rep, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
	}
	return rep, nil
}

// around reads the completed scans around a change that kept answers:
// the last nBefore before it and the first nAfter after it, each side in
// the order they ended, with the engines that answered in each. Scans
// whose answers all failed or were forgotten are passed over, as lift
// passes them over: a window after the change is the first nAfter scans
// with answers, reading as many again past them to find them.
func (s *Service) around(ctx context.Context, d store.MonitoredDomain, c store.Change, nBefore, nAfter int) (before, after []store.Scan,
	engines map[string][]string, err error) {
	before, after, err = s.Store.ScansAround(ctx, store.ScanWindows{AccountID: d.AccountID, ClientID: d.ClientID, Domain: d.Domain,
		At: c.At, Before: nBefore, After: 2 * nAfter})
	if err == nil {
		engines, err = s.Store.ScanEngines(ctx, d.AccountID, scanIDs(slices.Concat(before, after)))
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
	}
	silent := func(sc store.Scan) bool { return len(engines[sc.ID]) == 0 }
	before, after = slices.DeleteFunc(before, silent), slices.DeleteFunc(after, silent)
	return before, after[:min(len(after), nAfter)], engines, nil
}

// answers reads the kept answers of the scans as lift reads them, in
// parts read and decoded at once, one a processor (at most maxParts).
func (s *Service) answers(ctx context.Context, d store.MonitoredDomain, ids []string, ended map[string]time.Time,
	targeted map[string]bool) ([]lift.Answer, error) {
	parts := min(runtime.GOMAXPROCS(0), maxParts, max(len(ids), 1))
	size := (len(ids) + parts - 1) / max(parts, 1)
	out := make([][]lift.Answer, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		part := ids[min(i*size, len(ids)):min((i+1)*size, len(ids))]
		wg.Go(func() {
			facts, err := s.Store.AnswerFacts(ctx, d.AccountID, part)
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = make([]lift.Answer, len(facts))
			for j, a := range facts {
				if out[i][j], err = answerOf(a, d.Domain, targeted); err != nil {
					errs[i] = err
					return
				}
				out[i][j].At = ended[a.ScanID]
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(out...), nil
}

// maxParts bounds the parts a lift's answers are read in at once.
const maxParts = 4

func scanIDs(scans []store.Scan) []string {
	ids := make([]string, len(scans))
	for i, sc := range scans {
		ids[i] = sc.ID
	}
	return ids
}

// seed makes a change's bootstrap the same on every call.
func seed(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// answerOf is a kept answer as lift reads it (its At left to the
// caller): targeted when its prompt is one of the change's; its voice
// the brand's mention of the brands named; its sources the domain's part
// of its distinct source domains, none when the engine reported none.
func answerOf(a store.ScanAnswer, domain string, targeted map[string]bool) (lift.Answer, error) {
	dt, err := readDetail(a.Detail)
	if err != nil {
		return lift.Answer{}, fmt.Errorf("scan %s, answer %d: %w", a.ScanID, a.Seq, err)
	}
	la := lift.Answer{Scan: a.ScanID, Engine: a.Engine, Prompt: a.Prompt, Targeted: targeted[fold(a.Prompt)],
		Mentioned: a.Mentioned, Cited: a.Cited, Position: a.Position}
	if a.Mentioned {
		la.Voice.Hits = 1
	}
	la.Voice.Of = la.Voice.Hits + dt.competitors
	if a.SourcesReported {
		for i, s := range dt.domains {
			if s == "" || slices.Contains(dt.domains[:i], s) {
				continue
			}
			la.Sources.Of++
			if ownDomain(s, domain) {
				la.Sources.Hits++
			}
		}
	}
	return la, nil
}

// ownDomain says whether a source's domain is the domain or one of its
// subdomains, as the scans' source share counts it ("www." aside).
func ownDomain(source, domain string) bool {
	bare := func(h string) string { return strings.TrimPrefix(strings.TrimSuffix(strings.ToLower(h), "."), "www.") }
	source, domain = bare(source), bare(domain)
	return domain != "" && (source == domain || strings.HasSuffix(source, "."+domain))
}
