package changes

import (
	"context"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
)

// Event is the lift_measured event of a measured change, at `at`: the
// change and, per measure over every engine, the difference with its
// interval and, when the change targets prompts, the
// difference-in-differences.
func (m Measured) Event(at time.Time) (events.Event, error) {
	c := m.Change
	data := events.LiftMeasuredData{Domain: m.Domain, Scans: m.Report.Scans, Targeted: m.Report.Targeted,
		Change: events.LiftChange{ID: c.ID, DomainID: c.DomainID, Title: c.Title, At: c.At.UTC(), Pages: nonNil(c.Pages),
			Prompts: nonNil(c.Prompts), ContentRequestID: optional(c.ContentRequestID)},
		Measures: make([]events.LiftMeasure, 0, len(m.Report.Overall.Metrics)), ClientID: optional(c.ClientID)}
	for _, e := range m.Report.Overall.Metrics {
		lm := events.LiftMeasure{Metric: e.Metric, Lift: figure(e.Difference)}
		if e.DiD != nil {
			did := figure(*e.DiD)
			lm.DiD = &did
		}
		data.Measures = append(data.Measures, lm)
	}
	return events.New(events.LiftMeasured, at, c.AccountID, c.ClientID, m.Domain, data)
}

// Publish publishes the lift_measured event of m in tx, at now(): the
// hook a Service's Measured is set to (the hook has no context: the
// event's trace starts with it).
func Publish(now func() time.Time) func(tx store.Tx, m Measured) error {
	return func(tx store.Tx, m Measured) error {
		ev, err := m.Event(now())
		if err != nil {
			return err
		}
		return events.Publish(context.Background(), tx, ev)
	}
}

// figure is a difference as lift_measured carries it: no estimate nor
// interval unless it has them.
func figure(d lift.Diff) events.LiftFigure {
	f := events.LiftFigure{Status: d.Status}
	if d.Reason != "" {
		f.Reason = &d.Reason
	}
	if d.Status == lift.StatusOK {
		est := d.Estimate
		f.Estimate, f.Interval = &est, &events.LiftInterval{Low: d.Interval.Low, High: d.Interval.High}
	}
	return f
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
