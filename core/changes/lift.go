package changes

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
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
	if o.Effect < 0 || o.Effect >= 1 {
		f.Add("effect", "must be more than 0 and less than 1 (0.10 is 10 points)")
	}
	if o.PositionEffect < 0 || o.PositionEffect > 100 {
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
	before, after, err := s.Store.ScansAround(ctx, store.ScanWindows{AccountID: d.AccountID, ClientID: d.ClientID, Domain: d.Domain,
		At: c.At, Before: lift.MaxScans, After: n})
	if err != nil {
		return lift.Report{}, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
	}
	engines, err := s.Store.ScanEngines(ctx, d.AccountID, scanIDs(before))
	if err != nil {
		return lift.Report{}, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
	}
	var answered []store.Scan
	for _, sc := range before {
		if len(engines[sc.ID]) > 0 {
			answered = append(answered, sc)
		}
	}
	window, earlier := answered[max(0, len(answered)-n):], answered[:max(0, len(answered)-n)]
	facts, err := s.Store.AnswerFacts(ctx, d.AccountID, append(scanIDs(window), scanIDs(after)...))
	if err != nil {
		return lift.Report{}, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
	}
	ended := map[string]time.Time{}
	for _, sc := range append(before, after...) {
		ended[sc.ID] = sc.FinishedAt
	}
	targeted := map[string]bool{}
	for _, p := range c.Prompts {
		targeted[fold(p)] = true
	}
	answers := make([]lift.Answer, 0, len(facts)+len(earlier)*4)
	// The scans before the window count (lift's history): an answer of
	// each engine that answered in them, which no measure reads.
	for _, sc := range earlier {
		for _, e := range engines[sc.ID] {
			answers = append(answers, lift.Answer{Scan: sc.ID, At: sc.FinishedAt, Engine: e, Prompt: "-"})
		}
	}
	for _, a := range facts {
		la, err := answerOf(a, d.Domain, targeted)
		if err != nil {
			return lift.Report{}, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
		}
		la.At = ended[a.ScanID]
		answers = append(answers, la)
	}
	rep, err := lift.Compute(lift.Request{Answers: answers, Change: c.At, Scans: n, Effect: opts.Effect, PositionEffect: opts.PositionEffect,
		Resamples: opts.Resamples, Seed: seed(c.ID)})
	if err != nil {
		return rep, fmt.Errorf("changes: lift of %s: %w", c.ID, err)
	}
	return rep, nil
}

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

// detail is what lift reads of a kept answer's detail.
type detail struct {
	Sources     []struct{ Domain string } `json:"sources"`
	Citations   []struct{ Domain string } `json:"citations"`
	Competitors []string                  `json:"competitors"`
}

// answerOf is a kept answer as lift reads it (its At left to the
// caller): targeted when its prompt is one of the change's; its voice
// the brand's mention of the brands named; its sources the domain's part
// of its distinct source domains, none when the engine reported none.
func answerOf(a store.ScanAnswer, domain string, targeted map[string]bool) (lift.Answer, error) {
	var dt detail
	if err := json.Unmarshal(a.Detail, &dt); err != nil {
		return lift.Answer{}, fmt.Errorf("scan %s, answer %d: %w", a.ScanID, a.Seq, err)
	}
	la := lift.Answer{Scan: a.ScanID, Engine: a.Engine, Prompt: a.Prompt, Targeted: targeted[fold(a.Prompt)],
		Mentioned: a.Mentioned, Cited: a.Cited, Position: a.Position}
	if a.Mentioned {
		la.Voice.Hits = 1
	}
	la.Voice.Of = la.Voice.Hits + len(dt.Competitors)
	if a.SourcesReported {
		seen := make(map[string]bool, len(dt.Sources)+len(dt.Citations))
		for _, list := range [2][]struct{ Domain string }{dt.Sources, dt.Citations} {
			for _, s := range list {
				if s.Domain == "" || seen[s.Domain] {
					continue
				}
				seen[s.Domain] = true
				la.Sources.Of++
				if ownDomain(s.Domain, domain) {
					la.Sources.Hits++
				}
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
