package dashboard

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
)

// maxMarks is how many of a domain's changes its charts mark, the latest.
const maxMarks = changes.MaxPage

// changesData is the domain page's Changes tab: the domain's changes,
// and the form that records one.
type changesData struct {
	Domain   string
	ClientID string
	Changes  []store.Change
	More     bool // the domain has more changes than the list shows
	Prompts  []string
	Form     changeForm
}

// changeForm is what the change form holds, as typed.
type changeForm struct {
	Title, Notes, At, Pages string
	Prompts                 []string
}

// changeData is a change's page: the change and its lift over a window.
type changeData struct {
	Domain   string
	ClientID string
	Change   store.Change
	Scans    int // the window asked, scans on each side
	MaxScans int
	Lift     *liftView
}

// Base is the Changes tab's address, naming the domain's owner when a
// client.
func (d changesData) Base() string { return changesLink(d.Domain, d.ClientID, "") }

// VisibilityLink is the domain page's visibility tab.
func (d changesData) VisibilityLink() string { return domainLink(d.Domain, d.ClientID) }

// TrafficLink is the domain page's traffic tab.
func (d changesData) TrafficLink() string {
	return trafficData{Domain: d.Domain, ClientID: d.ClientID}.Base()
}

// Link is a change's page.
func (d changesData) Link(id string) string { return changesLink(d.Domain, d.ClientID, id) }

// Base is the Changes tab's address.
func (d changeData) Base() string { return changesLink(d.Domain, d.ClientID, "") }

// Link is the change's page.
func (d changeData) Link() string { return changesLink(d.Domain, d.ClientID, d.Change.ID) }

// changesLink is the Changes tab of a domain (id ""), or one change's
// page.
func changesLink(domain, clientID, id string) string {
	u := "/domains/" + domain + "/changes"
	if id != "" {
		u += "/" + url.PathEscape(id)
	}
	if clientID != "" {
		u += "?client=" + url.QueryEscape(clientID)
	}
	return u
}

// changesDomain is the Changes tab's domain (tabDomain).
func (s *Dashboard) changesDomain(w http.ResponseWriter, r *http.Request, clientID string) (store.MonitoredDomain, bool) {
	return s.tabDomain(w, r, clientID, s.Changes != nil, "changes")
}

func (s *Dashboard) changesPage(w http.ResponseWriter, r *http.Request) {
	md, ok := s.changesDomain(w, r, r.URL.Query().Get("client"))
	if !ok {
		return
	}
	s.showChanges(w, r, http.StatusOK, page{}, md, changesData{})
}

// showChanges renders the Changes tab of md.
func (s *Dashboard) showChanges(w http.ResponseWriter, r *http.Request, status int, p page, md store.MonitoredDomain, d changesData) {
	d.Domain, d.ClientID = md.Domain, md.ClientID
	cs, next, err := s.Changes.List(r.Context(), md, store.ChangeFilter{Limit: changes.MaxPage})
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Changes, d.More = cs, next != ""
	ps, err := s.Domains.Prompts(r.Context(), principal(r), md.ID)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	for _, pr := range append(ps.Prompts, ps.Generated...) {
		d.Prompts = append(d.Prompts, pr.Text)
	}
	p.Title, p.Nav, p.D = md.Domain+": changes", "domains", d
	s.render(w, r, status, "changes", p)
}

// atLayout is the layout of the form's time (an input of type
// datetime-local, in UTC).
const atLayout = "2006-01-02T15:04"

func (s *Dashboard) createChange(w http.ResponseWriter, r *http.Request) {
	md, ok := s.changesDomain(w, r, r.PostFormValue("client_id"))
	if !ok {
		return
	}
	_ = r.ParseForm()
	f := changeForm{Title: r.PostFormValue("title"), Notes: r.PostFormValue("notes"), At: strings.TrimSpace(r.PostFormValue("at")),
		Pages: r.PostFormValue("pages"), Prompts: r.PostForm["prompts"]}
	n := changes.NewChange{Title: f.Title, Notes: f.Notes, Pages: lines(f.Pages), Prompts: f.Prompts}
	if f.At != "" {
		at, err := time.Parse(atLayout, f.At)
		if err != nil {
			s.showChanges(w, r, http.StatusBadRequest, page{Problem: &problem{Message: "When must be a date and time (UTC)."}}, md, changesData{Form: f})
			return
		}
		n.At = at
	}
	c, err := s.Changes.Create(r.Context(), md, n)
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showChanges(w, r, status, page{Problem: p}, md, changesData{Form: f})
		return
	}
	s.Log.Info("dashboard: change recorded", "change", c.ID, "domain", md.ID, "user", viewerOf(r).User.ID)
	redirect(w, r, changesLink(md.Domain, md.ClientID, c.ID), "change")
}

// lines are the lines of s that are not blank, trimmed.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (s *Dashboard) deleteChange(w http.ResponseWriter, r *http.Request) {
	md, ok := s.changesDomain(w, r, r.PostFormValue("client_id"))
	if !ok {
		return
	}
	id := chi.URLParam(r, "id")
	if err := s.Changes.Delete(r.Context(), md, id); err != nil {
		s.failWith(w, r, err)
		return
	}
	s.Log.Info("dashboard: change deleted", "change", id, "domain", md.ID, "user", viewerOf(r).User.ID)
	redirect(w, r, changesLink(md.Domain, md.ClientID, ""), "cdeleted")
}

// changePage shows a change with its lift over the window asked
// (?scans=, lift's default without it).
func (s *Dashboard) changePage(w http.ResponseWriter, r *http.Request) {
	md, ok := s.changesDomain(w, r, r.URL.Query().Get("client"))
	if !ok {
		return
	}
	d := changeData{Domain: md.Domain, ClientID: md.ClientID, Scans: lift.DefaultScans, MaxScans: lift.MaxScans}
	id := chi.URLParam(r, "id")
	if v := r.URL.Query().Get("scans"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > lift.MaxScans {
			c, gerr := s.Changes.Get(r.Context(), md, id)
			if gerr != nil {
				s.failWith(w, r, gerr)
				return
			}
			d.Change = c
			s.render(w, r, http.StatusBadRequest, "change", page{Title: c.Title, Nav: "domains", D: d,
				Problem: &problem{Message: fmt.Sprintf("The window is 1 to %d scans on each side of the change.", lift.MaxScans)}})
			return
		}
		d.Scans = n
	}
	l, err := s.Changes.Lift(r.Context(), md, id, changes.LiftOptions{Scans: d.Scans})
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Change, d.Lift = l.Change, newLiftView(l.Report)
	s.render(w, r, http.StatusOK, "change", page{Title: l.Change.Title, Nav: "domains", D: d})
}

// changeMarks are the marks of md's changes (the latest maxMarks) that
// went live from `from` to `to`, oldest first, placed by no chart yet;
// none when the server keeps no changes.
func (s *Dashboard) changeMarks(ctx context.Context, md *store.MonitoredDomain, from, to time.Time) ([]Mark, error) {
	if s.Changes == nil || md == nil {
		return nil, nil
	}
	cs, _, err := s.Changes.List(ctx, *md, store.ChangeFilter{From: from, To: to, Limit: maxMarks})
	if err != nil {
		return nil, err
	}
	out := make([]Mark, len(cs))
	for i, c := range cs {
		out[len(cs)-1-i] = Mark{Title: c.Title, At: c.At, Link: changesLink(md.Domain, md.ClientID, c.ID)}
	}
	return out, nil
}

// liftView is a lift report as the change's page shows it.
type liftView struct {
	Report lift.Report
	Groups []liftGroup
}

// liftGroup is the estimates of one engine, or of all of them.
type liftGroup struct {
	Engine string // "" all engines
	Rows   []liftRow
}

// Name is the group as its heading says it.
func (g liftGroup) Name() string {
	if g.Engine == "" {
		return "All engines"
	}
	return g.Engine
}

// liftRow is one measure's lift.
type liftRow struct {
	Metric        string
	Name          string
	Before, After string
	Difference    diffView
	// Control is the untargeted prompts' before → after, and DiD the
	// difference-in-differences; nil when the change targets no prompt.
	Control *string
	DiD     *diffView
}

// diffView is a difference with its interval, or why there is none.
type diffView struct {
	OK       bool
	Estimate string
	Interval string
	Bar      template.HTML
	// Needed says, when there is no figure, what it needs.
	Needed string
	Reason string
}

// metricNames are the measures as the page names them.
var metricNames = map[string]string{
	lift.MetricMention:      "Mention rate",
	lift.MetricCitation:     "Citation rate",
	lift.MetricShareOfVoice: "Share of voice",
	lift.MetricSourceShare:  "Source share",
	lift.MetricPosition:     "Average position",
}

func newLiftView(rep lift.Report) *liftView {
	v := &liftView{Report: rep}
	for _, l := range append([]lift.Lift{rep.Overall}, rep.Engines...) {
		g := liftGroup{Engine: l.Engine}
		for _, e := range l.Metrics {
			g.Rows = append(g.Rows, newLiftRow(e))
		}
		v.Groups = append(v.Groups, g)
	}
	return v
}

func newLiftRow(e lift.Estimate) liftRow {
	pos := e.Metric == lift.MetricPosition
	row := liftRow{Metric: e.Metric, Name: metricNames[e.Metric], Before: sideText(e.Before, pos), After: sideText(e.After, pos),
		Difference: newDiffView(metricNames[e.Metric], e.Difference, pos)}
	if e.Control != nil {
		c := sideText(e.Control.Before, pos) + " → " + sideText(e.Control.After, pos) + ": " + diffText(e.Control.Difference, pos)
		row.Control = &c
	}
	if e.DiD != nil {
		d := newDiffView(metricNames[e.Metric]+", difference-in-differences", *e.DiD, pos)
		row.DiD = &d
	}
	return row
}

// sideText is a measure on one side: a rate or share as a percentage,
// an average position in ranks; "—" with no answer that counts.
func sideText(s lift.Side, position bool) string {
	if s.Units == 0 {
		return "—"
	}
	if position {
		return fmt.Sprintf("%.2f", s.Value)
	}
	return rate(s.Value)
}

// signedAmount is a difference: of a rate or share in points, of a
// position in ranks.
func signedAmount(v float64, position bool) string {
	if position {
		return fmt.Sprintf("%+.2f ranks", v)
	}
	return fmt.Sprintf("%+.1f points", v*100)
}

// diffText is a difference in a few words: its estimate and interval,
// or that the data are insufficient.
func diffText(d lift.Diff, position bool) string {
	if d.Status != lift.StatusOK {
		return "insufficient data"
	}
	return signedAmount(d.Estimate, position) + " (95% " + intervalText(d.Interval, position) + ")"
}

// intervalText is an interval of a difference.
func intervalText(i lift.Interval, position bool) string {
	return signedAmount(i.Low, position) + " to " + signedAmount(i.High, position)
}

func newDiffView(name string, d lift.Diff, position bool) diffView {
	if d.Status != lift.StatusOK {
		v := diffView{Reason: d.Reason}
		if d.ScansNeeded < 0 {
			v.Needed = "No window of scans can tell: too few prompts, or too few scans before the change."
		} else {
			effect := signedAmount(d.Effect, position)[1:]
			v.Needed = fmt.Sprintf("%d more %s after the change needed (a window of %d scans on each side) to tell a difference of %s.",
				d.MoreScans, plural(d.MoreScans, "scan", "scans"), d.ScansNeeded, effect)
		}
		return v
	}
	return diffView{OK: true, Estimate: signedAmount(d.Estimate, position), Interval: intervalText(d.Interval, position),
		Bar: intervalBar(name, d, position)}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

const barW, barH = 200, 22

// intervalBar draws a difference's 95% interval as a bar around 0, the
// estimate as a dot: an image whose label says the figures.
func intervalBar(name string, d lift.Diff, position bool) template.HTML {
	span := math.Max(math.Max(math.Abs(d.Interval.Low), math.Abs(d.Interval.High)), math.Abs(d.Estimate))
	span = math.Max(span*1.1, map[bool]float64{false: 0.05, true: 0.5}[position])
	x := func(v float64) float64 { return barW/2 + v/span*(barW/2-6) }
	var b strings.Builder
	label := name + ": " + signedAmount(d.Estimate, position) + ", 95% interval " + intervalText(d.Interval, position)
	cls := "straddles"
	switch {
	case d.Interval.Low > 0:
		cls = "above"
	case d.Interval.High < 0:
		cls = "below"
	}
	fmt.Fprintf(&b, `<svg class="ibar %s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, cls, barW, barH, barW, barH,
		template.HTMLEscapeString(label))
	fmt.Fprintf(&b, `<line class="axis" x1="2" x2="%d" y1="%d" y2="%d"/>`, barW-2, barH/2, barH/2)
	fmt.Fprintf(&b, `<line class="zero" x1="%d" x2="%d" y1="2" y2="%d"/>`, barW/2, barW/2, barH-2)
	fmt.Fprintf(&b, `<rect class="interval" x="%.1f" y="%d" width="%.1f" height="8"/>`, x(d.Interval.Low), barH/2-4,
		math.Max(x(d.Interval.High)-x(d.Interval.Low), 1))
	fmt.Fprintf(&b, `<circle class="estimate" cx="%.1f" cy="%d" r="4"/>`, x(d.Estimate), barH/2)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
