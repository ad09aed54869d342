package changes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
)

// Measured is what the lift_measured event of a change carries: the
// change, marked measured, and its lift over the default windows.
type Measured struct {
	Domain string // the monitored domain's name
	Change store.Change
	Report lift.Report
}

// Due measures, after a completed scan of the domain, the changes whose
// window after them is now full for the first time (lift.DefaultScans
// scans after the change brought answers) and marks each measured, in a
// transaction of its own that also runs the Measured hook: across every
// instance a change is measured once, a change another caller marked
// meanwhile left out. It returns the changes it marked, the oldest first.
func (s *Service) Due(ctx context.Context, d store.MonitoredDomain) ([]Measured, error) {
	now := s.Now()
	var pending []store.Change
	f := store.ChangeFilter{AccountID: d.AccountID, DomainID: d.ID, To: now, Unmeasured: true, Limit: MaxPage}
	for {
		cs, next, err := s.Store.ListChanges(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("changes: due: %w", err)
		}
		pending = append(pending, cs...)
		if f.Cursor = next; next == "" {
			break
		}
	}
	slices.Reverse(pending)
	var out []Measured
	for _, c := range pending {
		full, err := s.windowFull(ctx, d, c)
		if err != nil {
			return out, err
		}
		if !full {
			continue
		}
		rep, err := s.measure(ctx, d, c, LiftOptions{})
		if err != nil {
			return out, err
		}
		m := Measured{Domain: d.Domain, Change: c, Report: rep}
		m.Change.LiftMeasuredAt = now.UTC()
		err = s.Store.Update(ctx, func(tx store.Tx) error {
			if err := tx.MarkLiftMeasured(c.AccountID, c.ID, now); err != nil {
				return err
			}
			if s.Measured != nil {
				return s.Measured(tx, m)
			}
			return nil
		})
		switch {
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
			continue // measured by another caller, or deleted meanwhile
		case err != nil:
			return out, fmt.Errorf("changes: due: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// windowFull says whether lift.DefaultScans scans after the change
// brought answers.
func (s *Service) windowFull(ctx context.Context, d store.MonitoredDomain, c store.Change) (bool, error) {
	_, after, _, err := s.around(ctx, d, c, 0, lift.DefaultScans)
	return len(after) == lift.DefaultScans, err
}
