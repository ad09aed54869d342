package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/lift"
	"github.com/aivis/aivis/core/store"
)

// liftPrompt is the i-th of the prompts the scripted scans ask.
func liftPrompt(i int) string {
	return fmt.Sprintf("Which shop sells the best rocket skates, take %02d?", i)
}

// ownPrompts gives md n prompts of its owner's (liftPrompt's), as the
// prompts API keeps them, and returns md as stored.
func (e *env) ownPrompts(md store.MonitoredDomain, n int) store.MonitoredDomain {
	e.t.Helper()
	err := e.db.Update(context.Background(), func(tx store.Tx) error {
		d, err := tx.MonitoredDomain(md.AccountID, md.ID)
		if err != nil {
			return err
		}
		d.Prompts = nil
		for i := range n {
			d.Prompts = append(d.Prompts, store.Prompt{Text: liftPrompt(i), Intent: "custom"})
		}
		md = d
		return tx.UpdateDomain(d)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return md
}

// liftScans stores before scans of md ending a day apart up to a day
// before `at`, and after scans from `at` on, each at `at` + 6h + k days
// and each with a reading at its end: every one of prompts asked once of
// GPT search (which reports sources) and Local. The first targeted
// prompts are cited at 20% before and 70% after, the others at 20% and
// 25%; every answer names the brand half the time.
func (e *env) liftScans(md store.MonitoredDomain, at time.Time, before, after, prompts, targeted int) []time.Time {
	e.t.Helper()
	r := mrand.New(mrand.NewPCG(7, 30))
	var ends []time.Time
	for k := -before; k < after; k++ {
		end := at.Add(time.Duration(k)*24*time.Hour + 6*time.Hour)
		id := fmt.Sprintf("scn_lift_%03d", k+before)
		var as []store.ScanAnswer
		for _, engine := range []string{"GPT search", "Local"} {
			for p := range prompts {
				rate := 0.20
				switch {
				case k >= 0 && p < targeted:
					rate = 0.70
				case k >= 0:
					rate = 0.25
				}
				a := store.ScanAnswer{ScanID: id, Seq: len(as), PromptIndex: p, Prompt: liftPrompt(p), Intent: "custom", Engine: engine,
					Kind: "openai-chat", Text: "Acme sells rocket skates.", RecordedAt: end, SourcesReported: engine == "GPT search",
					Cited: r.Float64() < rate, Mentioned: r.IntN(2) == 0}
				competitors := []string{"Roadrunner Inc", "Coyote Co"}[:r.IntN(3)]
				if a.Mentioned {
					a.Position = 1 + r.IntN(len(competitors)+1)
				}
				var sources []map[string]string
				if a.SourcesReported {
					for _, d := range []string{"acme.example", "skates.example", "reviews.example"}[:1+r.IntN(3)] {
						sources = append(sources, map[string]string{"url": "https://" + d + "/", "title": d, "domain": d})
					}
				}
				if sources == nil {
					sources = []map[string]string{}
				}
				a.Detail, _ = json.Marshal(map[string]any{"sources": sources, "citations": []any{}, "queries": []string{},
					"competitors": competitors, "sentences": []any{}})
				as = append(as, a)
			}
		}
		sc := store.Scan{ID: id, AccountID: md.AccountID, ClientID: md.ClientID, DomainID: md.ID, Domain: md.Domain, Trigger: store.ScanScheduled,
			Status: store.ScanCompleted, Attempts: 1, CreatedAt: end.Add(-time.Minute), StartedAt: end.Add(-time.Minute), FinishedAt: end,
			Result: json.RawMessage(`{"visibility_score":50,"sentiment":"neutral","sentiment_score":0,"readiness_score":50,"breakdown":{}}`)}
		if err := e.db.Update(context.Background(), func(tx store.Tx) error {
			if err := tx.InsertScan(sc); err != nil {
				return err
			}
			return tx.InsertScanAnswers(as)
		}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.db.AddReading(context.Background(), store.Reading{AccountID: md.AccountID, ClientID: md.ClientID, Domain: md.Domain,
			VisibilityScore: 40 + k, Sentiment: "neutral", Source: "scan", MeasuredAt: end}); err != nil {
			e.t.Fatal(err)
		}
		ends = append(ends, end)
	}
	return ends
}

// recordChange records a change through the Changes tab's form and
// returns its id.
func (e *env) recordChange(c *http.Client, md store.MonitoredDomain, form url.Values) string {
	e.t.Helper()
	form.Set("csrf", csrf(e.t, e.get(c, "/domains/"+md.Domain+"/changes")))
	p := e.post(c, "/domains/"+md.Domain+"/changes", form)
	if p.status != http.StatusSeeOther {
		e.t.Fatalf("record a change: %d\n%s", p.status, p.body)
	}
	m := regexp.MustCompile(`/changes/(chg_[^?]+)\?done=change$`).FindStringSubmatch(p.loc)
	if m == nil {
		e.t.Fatalf("recorded, sent to %q", p.loc)
	}
	return m[1]
}

// TestChangesTabRecordsListsAndDeletes: a developer records a change in
// the form (its pages as paths, its prompts of the domain's), and the tab
// lists it as kept; a form the service refuses is answered in the form,
// naming the field, keeping what was typed, recording nothing; a viewer
// sees no form and is refused whatever is posted; a form without the
// CSRF token is refused; a change deleted leaves the list.
func TestChangesTabRecordsListsAndDeletes(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.ownPrompts(e.monitor(c, u.AccountID, "acme.example", ""), 6)
	dev, _ := e.member(u.AccountID, "dev@example.com", store.RoleDeveloper)
	viewer, _ := e.member(u.AccountID, "viewer@example.com", store.RoleViewer)

	p := e.get(dev, "/domains/acme.example/changes")
	if p.status != http.StatusOK || !strings.Contains(p.body, `id="change-form"`) {
		t.Fatalf("the developer's changes tab: %d, form shown %v", p.status, strings.Contains(p.body, `id="change-form"`))
	}
	if !strings.Contains(p.body, `value="`+liftPrompt(5)+`"`) {
		t.Errorf("the form does not offer the domain's prompts")
	}
	id := e.recordChange(dev, md, url.Values{"title": {"Rewrote the pricing page"}, "notes": {"New FAQ.\nAnd markup."}, "at": {"2026-06-01T09:30"},
		"pages": {"https://acme.example/pricing?x=1\n\n/faq"}, "prompts": {liftPrompt(1), strings.ToUpper(liftPrompt(3))}})
	got, err := e.changes.Get(context.Background(), md, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "Rewrote the pricing page" || !got.At.Equal(time.Date(2026, 6, 1, 9, 30, 0, 0, time.UTC)) ||
		strings.Join(got.Pages, " ") != "/pricing /faq" || strings.Join(got.Prompts, "|") != liftPrompt(1)+"|"+liftPrompt(3) {
		t.Errorf("kept %+v", got)
	}
	rows := cells(t, e.get(c, "/domains/acme.example/changes").body, "change-list")
	want := []string{"Rewrote the pricing page", "2026-06-01 09:30 UTC", "/pricing , /faq", liftPrompt(1) + " " + liftPrompt(3), "recorded by hand", "Delete"}
	if len(rows) != 1 || strings.Join(rows[0], "|") != strings.Join(want, "|") {
		t.Errorf("the list:\n got %q\nwant %q", rows, want)
	}

	// Refused by the service: answered in the form, nothing recorded.
	p = e.post(dev, "/domains/acme.example/changes", url.Values{"csrf": {csrf(t, p)}, "title": {""}, "pages": {"https://elsewhere.example/x"},
		"notes": {"kept as typed"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "<strong>title</strong>") || !strings.Contains(p.body, "<strong>pages[0]</strong>") ||
		!strings.Contains(p.body, "kept as typed") {
		t.Errorf("a bad form: %d\n%s", p.status, p.body)
	}
	p = e.post(dev, "/domains/acme.example/changes", url.Values{"csrf": {csrf(t, p)}, "title": {"x"}, "at": {"June"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "When must be a date and time") {
		t.Errorf("a bad time: %d", p.status)
	}

	// A viewer: no form, no delete, and refused.
	p = e.get(viewer, "/domains/acme.example/changes")
	if p.status != http.StatusOK || strings.Contains(p.body, `id="change-form"`) || strings.Contains(p.body, "/delete") {
		t.Errorf("the viewer's tab: %d, offers actions", p.status)
	}
	if p := e.post(viewer, "/domains/acme.example/changes", url.Values{"csrf": {csrf(t, p)}, "title": {"Viewer's"}}); p.status != http.StatusForbidden {
		t.Errorf("a viewer's change: %d, want 403", p.status)
	}
	if p := e.post(viewer, "/domains/acme.example/changes/"+id+"/delete", url.Values{"csrf": {csrf(t, p)}}); p.status != http.StatusForbidden {
		t.Errorf("a viewer's delete: %d, want 403", p.status)
	}
	if p := e.post(dev, "/domains/acme.example/changes", url.Values{"title": {"Forged"}}); p.status != http.StatusForbidden {
		t.Errorf("a form without the CSRF token: %d, want 403", p.status)
	}
	if cs, _, _ := e.changes.List(context.Background(), md, store.ChangeFilter{}); len(cs) != 1 {
		t.Errorf("%d changes, want the one recorded", len(cs))
	}

	// Deleted.
	p = e.get(c, "/domains/acme.example/changes")
	p = e.post(c, "/domains/acme.example/changes/"+id+"/delete", url.Values{"csrf": {csrf(t, p)}})
	if p.status != http.StatusSeeOther || p.loc != "/domains/acme.example/changes?done=cdeleted" {
		t.Errorf("delete: %d %q", p.status, p.loc)
	}
	if rows := cells(t, e.get(c, "/domains/acme.example/changes").body, "change-list"); len(rows) != 1 || rows[0][0] != "No change recorded yet." {
		t.Errorf("after deleting: %q", rows)
	}
	if p := e.get(c, "/domains/acme.example/changes/"+id); p.status != http.StatusNotFound {
		t.Errorf("a deleted change's page: %d, want 404", p.status)
	}
	if p := e.get(c, "/domains/other.example/changes"); p.status != http.StatusNotFound {
		t.Errorf("the changes of a domain not monitored: %d, want 404", p.status)
	}
}

// points is a difference as the page writes it: of a rate or share in
// percentage points, of a position in ranks.
func points(v float64, position bool) string {
	if position {
		return fmt.Sprintf("%+.2f ranks", v)
	}
	return fmt.Sprintf("%+.1f points", v*100)
}

// sideCell is a side's value as the page writes it.
func sideCell(s lift.Side, position bool) string {
	switch {
	case s.Units == 0:
		return "—"
	case position:
		return fmt.Sprintf("%.2f", s.Value)
	}
	p := s.Value * 100
	if p != 0 && p != 100 && (p < 10 || p > 90) {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// diffCells are a difference's cells as the page writes them: the
// estimate, its interval and its bar (no text), or a cell that says the
// data are insufficient, with the scans still needed.
func diffCells(d lift.Diff, position bool) []string {
	if d.Status != lift.StatusOK {
		need := "No window of scans can tell"
		if d.ScansNeeded >= 0 {
			need = fmt.Sprintf("%d more scan", d.MoreScans)
		}
		return []string{"Insufficient data", need}
	}
	return []string{points(d.Estimate, position), points(d.Interval.Low, position) + " to " + points(d.Interval.High, position), ""}
}

// TestChangeLiftIsTheServicesReport: a change's page shows, per engine
// and over all, each measure's before, after, difference and 95%
// interval, and the difference-in-differences, as changes.Service.Lift
// reports them for the window asked; a difference the report has no
// figure for says insufficient data with the scans still needed, and no
// number; a window outside lift's bounds is refused.
func TestChangeLiftIsTheServicesReport(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.ownPrompts(e.monitor(c, u.AccountID, "acme.example", ""), 10)
	at := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -8)
	e.liftScans(md, at, 6, 6, 10, 5)
	prompts := []string{liftPrompt(0), liftPrompt(1), liftPrompt(2), liftPrompt(3), liftPrompt(4)}
	id := e.recordChange(c, md, url.Values{"title": {"New pricing FAQ"}, "at": {at.Format("2006-01-02T15:04")}, "prompts": prompts})

	for _, scans := range []int{6, 2} {
		l, err := e.changes.Lift(context.Background(), md, id, changes.LiftOptions{Scans: scans})
		if err != nil {
			t.Fatal(err)
		}
		rep := l.Report
		p := e.get(c, "/domains/acme.example/changes/"+id+"?scans="+strconv.Itoa(scans))
		if p.status != http.StatusOK {
			t.Fatalf("the change's page: %d\n%s", p.status, p.body)
		}
		if !rep.Targeted || len(rep.Engines) != 2 {
			t.Fatalf("the report: targeted %v, %d engines", rep.Targeted, len(rep.Engines))
		}
		ok, short, bars := 0, 0, 0
		for gi, lf := range append([]lift.Lift{rep.Overall}, rep.Engines...) {
			rows := cells(t, p.body, "lift-"+strconv.Itoa(gi))
			if len(rows) != len(lf.Metrics) {
				t.Fatalf("scans=%d, %q: %d rows, want %d", scans, lf.Engine, len(rows), len(lf.Metrics))
			}
			for i, m := range lf.Metrics {
				pos := m.Metric == lift.MetricPosition
				row := rows[i]
				check := func(what string, got []string, want []string) {
					t.Helper()
					for j, w := range want {
						if j >= len(got) || !strings.HasPrefix(got[j], w) {
							t.Errorf("scans=%d, %q %s %s: %q, want %q", scans, lf.Engine, m.Metric, what, got, want)
							return
						}
					}
				}
				check("before/after", row[1:3], []string{sideCell(m.Before, pos), sideCell(m.After, pos)})
				rest := row[3:]
				want := diffCells(m.Difference, pos)
				if m.Difference.Status == lift.StatusOK {
					ok++
					bars++
					check("difference", rest[:3], want)
					rest = rest[3:]
				} else {
					short++
					if !strings.HasPrefix(rest[0], want[0]) || !strings.Contains(rest[0], want[1]) || regexp.MustCompile(`[+-]\d`).MatchString(rest[0]) {
						t.Errorf("scans=%d, %q %s: %q, want %q without a figure", scans, lf.Engine, m.Metric, rest[0], want)
					}
					rest = rest[1:]
				}
				control := sideCell(m.Control.Before, pos) + " → " + sideCell(m.Control.After, pos) + ": "
				if m.Control.Difference.Status == lift.StatusOK {
					control += points(m.Control.Difference.Estimate, pos)
				} else {
					control += "insufficient data"
				}
				check("control", rest[:1], []string{control})
				want = diffCells(*m.DiD, pos)
				if m.DiD.Status == lift.StatusOK {
					bars++
					check("did", rest[1:], want)
				} else if !strings.HasPrefix(rest[1], want[0]) || !strings.Contains(rest[1], want[1]) {
					t.Errorf("scans=%d, %q %s did: %q, want %q", scans, lf.Engine, m.Metric, rest[1], want)
				}
			}
		}
		if scans == 6 && (ok == 0 || short == 0) {
			t.Errorf("scans=6: %d differences with figures and %d without: the script should give both", ok, short)
		}
		if scans == 2 && ok != 0 {
			t.Errorf("scans=2: %d differences with figures, want none from so few answers", ok)
		}
		// Each figure's bar: an image labelled with it.
		if n := strings.Count(p.body, `<svg class="ibar`); n != bars {
			t.Errorf("scans=%d: %d interval bars, want one per figure given (%d)", scans, n, bars)
		}
	}
	// The overall citation rate of the targeted prompts moved up and its
	// bar lies above 0.
	p := e.get(c, "/domains/acme.example/changes/"+id+"?scans=6")
	if !regexp.MustCompile(`(?s)<tr data-metric="citation_rate">.*?<svg class="ibar above"`).MatchString(p.body) {
		t.Errorf("the overall citation rate's bar is not above 0")
	}
	for _, bad := range []string{"0", "181", "x"} {
		if p := e.get(c, "/domains/acme.example/changes/"+id+"?scans="+bad); p.status != http.StatusBadRequest {
			t.Errorf("?scans=%s: %d, want 400", bad, p.status)
		}
	}
}

// markX is the x of a mark at pos labels from the left of a chart of n
// labels (chart.go's geometry: 640 wide, 44 and 8 of padding).
func markX(pos float64, n int) string {
	return fmt.Sprintf("%.1f", 44+(640.0-44-8)/float64(n)*pos)
}

// marksOf are the x and title of each mark of the chart with that title.
func marksOf(t *testing.T, body, title string) [][2]string {
	t.Helper()
	i := strings.Index(body, ">"+title+"</title>")
	if i < 0 {
		t.Fatalf("no chart %q", title)
	}
	svg := body[i : i+strings.Index(body[i:], "</svg>")]
	var out [][2]string
	for _, m := range regexp.MustCompile(`<g class="mark"><title>([^<]*)</title><line class="mark" x1="([0-9.]+)"`).FindAllStringSubmatch(svg, -1) {
		out = append(out, [2]string{m[2], m[1]})
	}
	return out
}

// TestChartsMarkChanges: each change that went live within a chart's
// range is a mark on every chart of the domain, at its time: between the
// readings around it on the score and sentiment charts, within its day
// on the traffic charts; a change outside a chart's range is not on it;
// the charts' descriptions name the marks.
func TestChartsMarkChanges(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.monitor(c, u.AccountID, "acme.example", "")
	today := time.Now().UTC().Truncate(24 * time.Hour)
	at := today.AddDate(0, 0, -4)
	ends := e.liftScans(md, at, 3, 3, 2, 0) // readings at at-3d+6h ... at+2d+6h
	e.importLog(md, sampleTraffic(today.Add(10*time.Hour)))
	inside := at.Add(-12 * time.Hour) // 12:00 the day before: a quarter of the way from its reading to the next
	old := today.AddDate(0, 0, -60)   // before the readings and the 30 days
	e.recordChange(c, md, url.Values{"title": {"Pricing <FAQ>"}, "at": {inside.Format("2006-01-02T15:04")}})
	e.recordChange(c, md, url.Values{"title": {"Old change"}, "at": {old.Format("2006-01-02T15:04")}})

	p := e.get(c, "/domains/acme.example")
	name := "Change 1: Pricing &lt;FAQ&gt; (" + inside.Format("2006-01-02 15:04 UTC") + ")"
	n := len(ends)
	want := markX(2.5+0.25, n) // a quarter of the way from the reading of the day before (2.5) to the next (3.5)
	for _, title := range []string{"Visibility score of acme.example", "Sentiment of acme.example"} {
		got := marksOf(t, p.body, title)
		if len(got) != 1 || got[0] != [2]string{want, name} {
			t.Errorf("%s: marks %q, want one at x %s named %q", title, got, want, name)
		}
	}
	if !strings.Contains(p.body, "Change 1 marked: Pricing &lt;FAQ&gt; ("+inside.Format("2006-01-02 15:04 UTC")+").</desc>") {
		t.Errorf("the score chart's description does not name the mark")
	}
	if strings.Contains(p.body, "Old change") {
		t.Errorf("a change before the readings is marked")
	}

	p = e.get(c, "/domains/acme.example/traffic")
	from := today.AddDate(0, 0, -29)
	want = markX(float64(inside.Sub(from))/float64(24*time.Hour), 30)
	for _, title := range []string{"AI agent requests to acme.example per day, by purpose", "Visits to acme.example referred by AI assistants per day"} {
		got := marksOf(t, p.body, title)
		if len(got) != 1 || got[0] != [2]string{want, name} {
			t.Errorf("%s: marks %q, want one at x %s named %q", title, got, want, name)
		}
	}
	if strings.Contains(p.body, "Old change") {
		t.Errorf("a change before the window is marked")
	}
	p = e.get(c, "/domains/acme.example/traffic?days=90")
	if got := marksOf(t, p.body, "AI agent requests to acme.example per day, by purpose"); len(got) != 2 {
		t.Errorf("90 days: %d marks, want both changes", len(got))
	}
}

// TestChangesTabShowsPublishedContent: a change made when a content
// request's result was marked published is listed as such, with the
// request, targeting the page and the request's queries that are the
// domain's prompts; its page says so too.
func TestChangesTabShowsPublishedContent(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	e.ownPrompts(e.monitor(c, u.AccountID, "acme.example", ""), 3)
	now := time.Now().UTC()
	cr := store.ContentRequest{ID: "cr_published", AccountID: u.AccountID, KeyID: "key_1", Type: "optimize", Status: "completed",
		Domain: "acme.example", URL: "https://acme.example/guide", TargetQueries: []string{liftPrompt(2), "not a prompt of it"},
		Metadata: map[string]string{"title": "The skates guide"}, Budget: 1000, BudgetMonth: now.Format("2006-01"), CreatedAt: now, UpdatedAt: now}
	if err := e.db.Update(context.Background(), func(tx store.Tx) error { return tx.InsertContentRequest(cr) }); err != nil {
		t.Fatal(err)
	}
	ch, err := e.changes.FromPublished(context.Background(), u.AccountID, cr.ID, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	rows := cells(t, e.get(c, "/domains/acme.example/changes").body, "change-list")
	want := []string{"The skates guide", ch.At.UTC().Format("2006-01-02 15:04 UTC"), "/guide", liftPrompt(2), "a published content request cr_published", "Delete"}
	if len(rows) != 1 || strings.Join(rows[0], "|") != strings.Join(want, "|") {
		t.Errorf("the list:\n got %q\nwant %q", rows, want)
	}
	if p := e.get(c, "/domains/acme.example/changes/"+ch.ID); !strings.Contains(p.body, "publishing content request <code>cr_published</code>") {
		t.Errorf("the change's page does not say it came from the content request: %d", p.status)
	}
}

// TestChangesOfAClientsDomain: where an agency and its client monitor
// the same name, a change recorded on the client's tab (?client=) is the
// client's domain's alone, and its links keep naming the client.
func TestChangesOfAClientsDomain(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", true)
	cl, err := e.accts.CreateClient(context.Background(), u.AccountID, "Client One")
	if err != nil {
		t.Fatal(err)
	}
	own := e.monitor(c, u.AccountID, "acme.example", "")
	theirs := e.monitor(c, u.AccountID, "acme.example", cl.ID)
	p := e.get(c, "/domains/acme.example/changes?client="+cl.ID)
	if p.status != http.StatusOK || !strings.Contains(p.body, `name="client_id" value="`+cl.ID+`"`) {
		t.Fatalf("the client's tab: %d", p.status)
	}
	p = e.post(c, "/domains/acme.example/changes", url.Values{"csrf": {csrf(t, p)}, "client_id": {cl.ID}, "title": {"Skates page for the client"}})
	if p.status != http.StatusSeeOther || !strings.HasSuffix(p.loc, "?client="+cl.ID+"&done=change") {
		t.Fatalf("record on the client's domain: %d %q", p.status, p.loc)
	}
	if cs, _, _ := e.changes.List(context.Background(), theirs, store.ChangeFilter{}); len(cs) != 1 || cs[0].ClientID != cl.ID {
		t.Errorf("the client's domain has %+v", cs)
	}
	if cs, _, _ := e.changes.List(context.Background(), own, store.ChangeFilter{}); len(cs) != 0 {
		t.Errorf("the account's own domain has %d changes, want none", len(cs))
	}
	if rows := cells(t, e.get(c, "/domains/acme.example/changes").body, "change-list"); rows[0][0] != "No change recorded yet." {
		t.Errorf("the account's own tab lists %q", rows)
	}
	if p := e.get(c, p.loc); p.status != http.StatusOK || !strings.Contains(p.body, "Skates page for the client") {
		t.Errorf("the client's change's page: %d", p.status)
	}
}
