package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/internal/browsertest"
)

// TestChangesInBrowser drives headless Chromium through the Changes tab:
// reached from the Visibility tab, a change recorded in its form (a
// prompt checked) opens its page with the lift of the scripted scans,
// the service's figures in its tables and bars; the score chart marks it
// at its time, titled, and the mark's link leads to it; a form sent
// without the CSRF token and a viewer's are refused, and the viewer is
// offered no form; the change deleted from its row after the
// confirmation leaves the list; axe-core finds no violation on the tab,
// the change's page and the charts with a mark.
func TestChangesInBrowser(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	md := e.ownPrompts(e.monitor(c, u.AccountID, "acme.example", ""), 10)
	at := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -8)
	e.liftScans(md, at, 6, 6, 10, 5)
	e.importLog(md, sampleTraffic(time.Now().UTC().Truncate(24*time.Hour).Add(10*time.Hour)))
	e.member(u.AccountID, "viewer@example.com", store.RoleViewer)
	b := e.inBrowser("owner@example.com")

	b.run("the changes tab", chromedp.Navigate(e.srv.URL+"/domains/acme.example"),
		browsertest.Leaving(chromedp.Click(`nav.tabs a[href="/domains/acme.example/changes"]`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#change-form`, chromedp.ByQuery))
	b.axe("the changes tab")
	var heading string
	b.run("record a change", chromedp.SendKeys(`#change-title`, "New pricing FAQ", chromedp.ByQuery),
		chromedp.SetValue(`#change-at`, at.Format("2006-01-02T15:04"), chromedp.ByQuery),
		chromedp.SendKeys(`#change-pages`, "/pricing", chromedp.ByQuery),
		chromedp.Click(`#change-prompt-0`, chromedp.ByQuery), chromedp.Click(`#change-prompt-1`, chromedp.ByQuery),
		chromedp.Click(`#change-prompt-2`, chromedp.ByQuery), chromedp.Click(`#change-prompt-3`, chromedp.ByQuery),
		chromedp.Click(`#change-prompt-4`, chromedp.ByQuery),
		browsertest.Leaving(chromedp.Submit(`#change-title`, chromedp.ByQuery)), chromedp.WaitVisible(`#lift-0`, chromedp.ByQuery),
		chromedp.Text(`h1`, &heading, chromedp.ByQuery))
	b.shot("18-change-lift")
	cs, _, err := e.changes.List(context.Background(), md, store.ChangeFilter{})
	if err != nil || len(cs) != 1 || heading != "New pricing FAQ" || len(cs[0].Prompts) != 5 {
		t.Fatalf("recorded %+v (%v), page %q", cs, err, heading)
	}
	id := cs[0].ID
	l, err := e.changes.Lift(context.Background(), md, id, changes.LiftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var overall [][]string
	b.eval("read the overall lift", `[...document.querySelectorAll("#lift-0 tbody tr")].map(r => [...r.cells].map(c => c.textContent.trim()))`, &overall)
	if len(overall) != len(l.Report.Overall.Metrics) {
		t.Fatalf("the overall table %q", overall)
	}
	for i, m := range l.Report.Overall.Metrics {
		want := diffCells(m.Difference, m.Metric == "average_position")
		if !strings.HasPrefix(overall[i][3], want[0]) {
			t.Errorf("%s: %q, want %q", m.Metric, overall[i], want)
		}
	}
	var bars []string
	b.eval("read the bars", `[...document.querySelectorAll("#lift-0 svg.ibar")].map(s => s.getAttribute("aria-label"))`, &bars)
	if len(bars) == 0 || !strings.HasPrefix(bars[0], "Mention rate: ") {
		t.Errorf("the bars' labels %q", bars)
	}
	b.axe("the change's lift")

	// Another window.
	var scans string
	b.run("a window of 2 scans", chromedp.SetValue(`#lift-scans`, "2", chromedp.ByQuery), browsertest.Leaving(chromedp.Submit(`#lift-scans`, chromedp.ByQuery)),
		chromedp.WaitVisible(`#lift-0`, chromedp.ByQuery), chromedp.Value(`#lift-scans`, &scans, chromedp.ByQuery))
	var insufficient int
	b.eval("count insufficient", `document.querySelectorAll("#lift-0 td.insufficient").length`, &insufficient)
	if scans != "2" || insufficient == 0 {
		t.Errorf("window %q: %d differences said insufficient, want some", scans, insufficient)
	}

	// The mark on the score chart, and its link.
	var mark struct {
		Title string
		X     string
		Desc  string
		Href  string
	}
	b.run("the visibility tab", chromedp.Navigate(e.srv.URL+"/domains/acme.example"), chromedp.WaitVisible(`svg.chart g.mark`, chromedp.ByQuery))
	b.eval("read the mark", `(() => { const s = document.querySelector("svg.chart"), g = s.querySelector("g.mark");
		return {Title: g.querySelector("title").textContent, X: g.querySelector("line").getAttribute("x1"),
			Desc: s.querySelector("desc").textContent, Href: s.closest("figure").querySelector("ul.marks a").getAttribute("href")}; })()`, &mark)
	name := "Change 1: New pricing FAQ (" + at.Format("2006-01-02 15:04 UTC") + ")"
	// Twelve readings, the change 18 hours after the sixth (5.5) and 6
	// before the seventh: at 5.5 + 0.75.
	if mark.Title != name || mark.X != markX(6.25, 12) || !strings.Contains(mark.Desc, "Change 1 marked: New pricing FAQ") ||
		mark.Href != "/domains/acme.example/changes/"+id {
		t.Errorf("the score chart's mark %+v, want %q at %s", mark, name, markX(6.25, 12))
	}
	b.shot("19-domain-change-mark")
	b.axe("the score chart with a mark")
	b.run("the traffic tab", chromedp.Navigate(e.srv.URL+"/domains/acme.example/traffic"), chromedp.WaitVisible(`svg.chart g.mark`, chromedp.ByQuery))
	b.axe("the traffic charts with a mark")
	b.run("follow the mark", chromedp.Navigate(e.srv.URL+"/domains/acme.example"), chromedp.WaitVisible(`svg.chart g.mark`, chromedp.ByQuery),
		browsertest.Leaving(chromedp.Click(`figcaption ul.marks a`, chromedp.ByQuery)), chromedp.WaitVisible(`#lift-0`, chromedp.ByQuery))

	// Without the CSRF token: refused.
	var status int
	b.eval("post without csrf", `fetch("/domains/acme.example/changes", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "title=forged"}).then(r => r.status)`, &status)
	if status != 403 {
		t.Errorf("a form without the CSRF token: %d, want 403", status)
	}

	// A viewer: the list, no form, refused.
	v := e.inBrowser("viewer@example.com")
	var n int
	v.run("the viewer's tab", chromedp.Navigate(e.srv.URL+"/domains/acme.example/changes"), chromedp.WaitVisible(`#change-list`, chromedp.ByQuery))
	v.eval("count actions", `document.querySelectorAll("#change-form, #change-list button").length`, &n)
	if n != 0 {
		t.Errorf("the viewer is offered %d change actions", n)
	}
	v.eval("post as a viewer", `fetch("/domains/acme.example/changes", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"},
		body: "title=viewer&csrf=" + encodeURIComponent(document.querySelector("input[name=csrf]").value)}).then(r => r.status)`, &status)
	if status != 403 {
		t.Errorf("a viewer's change: %d, want 403", status)
	}
	v.axe("the viewer's changes tab")

	// Deleted from its row, after the confirmation.
	var empty string
	b.run("delete", chromedp.Navigate(e.srv.URL+"/domains/acme.example/changes"),
		browsertest.Leaving(chromedp.Click(`tr[data-change="`+id+`"] button.danger`, chromedp.ByQuery)), chromedp.WaitVisible(`p.notice`, chromedp.ByQuery),
		chromedp.Text(`#change-list tbody`, &empty, chromedp.ByQuery))
	if !strings.Contains(empty, "No change recorded yet.") {
		t.Errorf("after deleting: %q", empty)
	}
	if cs, _, _ := e.changes.List(context.Background(), md, store.ChangeFilter{}); len(cs) != 0 {
		t.Errorf("%d changes left, want none (none forged)", len(cs))
	}
}
