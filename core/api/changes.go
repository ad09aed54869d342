package api

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
)

// changeRoutes serves a domain's changes and their lift under /v1 (none
// without a changes service).
func (s *Server) changeRoutes(r chi.Router) {
	if s.changes == nil {
		return
	}
	r.Get("/domains/{id}/changes", s.scope("visibility:read", s.listChanges))
	r.Post("/domains/{id}/changes", s.scope("visibility:write", s.createChange))
	r.Get("/domains/{id}/changes/{change_id}", s.scope("visibility:read", s.getChange))
	r.Delete("/domains/{id}/changes/{change_id}", s.scope("visibility:write", s.deleteChange))
	r.Get("/domains/{id}/changes/{change_id}/lift", s.scope("visibility:read", s.getChangeLift))
}

// publishedRoutes serves the marking of a content request's result as
// published under /api/v1/ai.
func (s *Server) publishedRoutes(r chi.Router) {
	if s.changes == nil {
		return
	}
	// An Idempotency-Key is kept as on /v1's POSTs: the same key and body
	// replay the first answer, another body is a conflict (marking again
	// without a key answers the same change anyway).
	r.With(s.idempotent).Post("/content-requests/{id}/published", s.scope("content:write", s.publishContentRequest))
}

func changeView(c store.Change) client.Change {
	return client.Change{ID: c.ID, DomainID: c.DomainID, ClientID: optional(c.ClientID), Title: c.Title, Notes: c.Notes,
		At: c.At.UTC(), Pages: nonNil(c.Pages), Prompts: nonNil(c.Prompts), ContentRequestID: optional(c.ContentRequestID),
		CreatedAt: c.CreatedAt.UTC(), LiftMeasuredAt: optionalTime(c.LiftMeasuredAt)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// changeWindow reads from and to: RFC 3339 times, or dates (YYYY-MM-DD,
// UTC) that include their whole day.
func changeWindow(r *http.Request) (from, to time.Time, err error) {
	q := r.URL.Query()
	var fs []fault.FieldError
	read := func(name string, day time.Duration) time.Time {
		v := q.Get(name)
		if v == "" {
			return time.Time{}
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
		if t, err := time.Parse(time.DateOnly, v); err == nil {
			return t.Add(day)
		}
		fs = append(fs, fault.FieldError{Field: name, Message: "must be an RFC 3339 time or a date, YYYY-MM-DD"})
		return time.Time{}
	}
	from, to = read("from", 0), read("to", 24*time.Hour)
	if len(fs) == 0 && !from.IsZero() && !to.IsZero() && !from.Before(to) {
		fs = append(fs, fault.FieldError{Field: "from", Message: "must be before to"})
	}
	if len(fs) > 0 {
		return from, to, fault.Invalid(fs...)
	}
	return from, to, nil
}

// listChanges pages through a domain's changes, the latest first.
func (s *Server) listChanges(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := pageParams(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	from, to, err := changeWindow(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	cs, next, err := s.changes.List(r.Context(), d, store.ChangeFilter{From: from, To: to, Cursor: cursor, Limit: limit})
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[client.Change]{Items: make([]client.Change, 0, len(cs)), HasMore: next != "", NextCursor: optional(next)}
	for _, c := range cs {
		page.Items = append(page.Items, changeView(c))
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) createChange(w http.ResponseWriter, r *http.Request) {
	var in client.CreateChange
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	n := changes.NewChange{Title: in.Title, Notes: in.Notes, Pages: in.Pages, Prompts: in.Prompts}
	if in.At != nil {
		n.At = *in.At
	}
	c, err := s.changes.Create(r.Context(), d, n)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set("Location", "/v1/domains/"+d.ID+"/changes/"+c.ID)
	writeJSON(w, http.StatusCreated, changeView(c))
}

func (s *Server) getChange(w http.ResponseWriter, r *http.Request) {
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	c, err := s.changes.Get(r.Context(), d, chi.URLParam(r, "change_id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, changeView(c))
}

func (s *Server) deleteChange(w http.ResponseWriter, r *http.Request) {
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	if err := s.changes.Delete(r.Context(), d, chi.URLParam(r, "change_id")); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// liftOptions reads scans, effect and position_effect.
func liftOptions(r *http.Request) (changes.LiftOptions, error) {
	q := r.URL.Query()
	var o changes.LiftOptions
	var fs []fault.FieldError
	if v := q.Get("scans"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > lift.MaxScans {
			fs = append(fs, fault.FieldError{Field: "scans", Message: "must be an integer from 1 to " + strconv.Itoa(lift.MaxScans)})
		}
		o.Scans = n
	}
	number := func(name, msg string, max float64, inclusive bool) float64 {
		v := q.Get(name)
		if v == "" {
			return 0
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f > max || (!inclusive && f == max) {
			fs = append(fs, fault.FieldError{Field: name, Message: msg})
			return 0
		}
		return f
	}
	o.Effect = number("effect", "must be a number more than 0 and less than 1 (0.10 is 10 points)", 1, false)
	o.PositionEffect = number("position_effect", "must be a number more than 0 and at most 100 ranks", 100, true)
	if len(fs) > 0 {
		return o, fault.Invalid(fs...)
	}
	return o, nil
}

func (s *Server) getChangeLift(w http.ResponseWriter, r *http.Request) {
	opts, err := liftOptions(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	l, err := s.changes.Lift(r.Context(), d, chi.URLParam(r, "change_id"), opts)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, client.ChangeLift{Change: changeView(l.Change), Lift: liftView(l.Report)})
}

func liftView(rep lift.Report) client.LiftReport {
	v := client.LiftReport{Scans: rep.Scans, Before: windowView(rep.Before), After: windowView(rep.After), Targeted: rep.Targeted,
		Overall: engineLiftView(rep.Overall), Engines: make([]client.EngineLift, 0, len(rep.Engines))}
	for _, e := range rep.Engines {
		v.Engines = append(v.Engines, engineLiftView(e))
	}
	return v
}

func windowView(w lift.Window) client.LiftWindow {
	return client.LiftWindow{Scans: w.Scans, FirstAt: optionalTime(w.From), LastAt: optionalTime(w.To)}
}

func engineLiftView(l lift.Lift) client.EngineLift {
	v := client.EngineLift{Engine: l.Engine, Measures: make([]client.MeasureLift, 0, len(l.Metrics))}
	for _, e := range l.Metrics {
		m := client.MeasureLift{Metric: e.Metric, Before: sideView(e.Before), After: sideView(e.After), Difference: diffView(e.Difference)}
		if e.Control != nil {
			m.Control = &client.LiftArm{Before: sideView(e.Control.Before), After: sideView(e.Control.After),
				Difference: diffView(e.Control.Difference)}
		}
		if e.DiD != nil {
			did := diffView(*e.DiD)
			m.DiD = &did
		}
		v.Measures = append(v.Measures, m)
	}
	return v
}

func sideView(s lift.Side) client.LiftSide {
	return client.LiftSide{Value: s.Value, Units: s.Units, Prompts: s.Prompts, Scans: s.Scans, DesignEffect: s.DesignEffect}
}

// diffView gives a difference's estimate and interval only when it has
// them (status ok).
func diffView(d lift.Diff) client.LiftDiff {
	v := client.LiftDiff{Status: d.Status, Reason: d.Reason, Method: d.Method, Effect: d.Effect, ScansNeeded: d.ScansNeeded,
		MoreScans: d.MoreScans}
	if d.Status == lift.StatusOK {
		est := d.Estimate
		v.Estimate, v.Interval = &est, &client.LiftInterval{Low: d.Interval.Low, High: d.Interval.High}
	}
	return v
}

// publishContentRequest marks a completed content request's result
// published: the change it makes (the same one when marked again).
func (s *Server) publishContentRequest(w http.ResponseWriter, r *http.Request) {
	var in client.PublishContent
	if err := readJSON(r, &in, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	p := principal(r)
	cr, err := s.content.Get(r.Context(), p, chi.URLParam(r, "id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var at time.Time
	if in.PublishedAt != nil {
		at = *in.PublishedAt
	}
	c, err := s.changes.FromPublished(r.Context(), p.AccountID(), cr.ID, in.URL, at)
	if errors.Is(err, changes.ErrUnmonitored) {
		err = fault.Invalid(fault.FieldError{Field: "url",
			Message: "is on no monitored domain of the request's owner: monitor its domain first (POST /v1/domains)"})
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, envelope(changeView(c)))
}
