package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/people"
	"github.com/aivis/aivis/core/readiness"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

func TestDomainPageShowsTheLatestScan(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	ctx := context.Background()
	p := e.post(c, "/domains", url.Values{"csrf": {csrf(t, e.get(c, "/domains"))}, "domain": {"Acme.Example"}, "competitors": {"rival.example"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("monitor: %d\n%s", p.status, p.body)
	}
	ds, _, err := e.db.ListDomains(ctx, store.DomainFilter{AccountID: u.AccountID, Limit: 10})
	if err != nil || len(ds) != 1 || ds[0].Domain != "acme.example" || len(ds[0].Competitors) != 1 {
		t.Fatalf("monitored domains %+v %v", ds, err)
	}
	now := time.Now().UTC()
	for i, score := range []int{30, 45, 60} {
		if _, err := e.db.AddReading(ctx, store.Reading{AccountID: u.AccountID, Domain: "acme.example", VisibilityScore: score,
			Sentiment: "neutral", SentimentScore: 0.1 * float64(i), Source: "scan", MeasuredAt: now.Add(time.Duration(i-3) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	report := readiness.Report{Domain: "acme.example", Score: 55,
		Findings: []readiness.Finding{{ID: "llms_txt_missing", Severity: "medium", Title: "No llms.txt", Fix: "Publish /llms.txt"}}}
	bd, _ := json.Marshal(visibility.Breakdown{Basis: visibility.BasisReadiness, Components: map[string]float64{"readiness": 55},
		Weights: map[string]float64{"readiness": 1}, Readiness: report})
	res, _ := json.Marshal(visibility.ScanResult{VisibilityScore: 60, Sentiment: "neutral", ReadinessScore: 55, Breakdown: bd})
	sc := store.Scan{ID: "scan_1", AccountID: u.AccountID, DomainID: ds[0].ID, Domain: "acme.example", Trigger: store.ScanManual,
		Status: store.ScanCompleted, Result: res, CreatedAt: now, StartedAt: now, FinishedAt: now}
	if err := e.db.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(sc) }); err != nil {
		t.Fatal(err)
	}
	page := e.get(c, "/domains/acme.example")
	if page.status != http.StatusOK {
		t.Fatalf("domain page: %d\n%s", page.status, page.body)
	}
	for _, want := range []string{"No llms.txt", "Publish /llms.txt", "readiness", "readiness 55", `<polyline class="line s0"`, "Scan now"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the domain page lacks %q", want)
		}
	}
	// Three readings: three points on the score line.
	i := strings.Index(page.body, `<polyline class="line s0" points="`)
	pts := page.body[i+len(`<polyline class="line s0" points="`):]
	if n := len(strings.Fields(pts[:strings.Index(pts, `"`)])); n != 3 {
		t.Errorf("the score line has %d points, want 3", n)
	}
	// Signed out, the Slack link leads to sign-in and back.
	if p := e.get(e.browser(), "/domains/acme.example"); p.status != http.StatusSeeOther || p.loc != "/signin?next=%2Fdomains%2Facme.example" {
		t.Errorf("signed out: %d %q", p.status, p.loc)
	}
	list := e.get(c, "/domains")
	if !strings.Contains(list.body, `href="/domains/acme.example"`) || !strings.Contains(list.body, "<td>60</td>") {
		t.Errorf("the domains list does not show the latest score")
	}
}

func TestContentAndBudgetPages(t *testing.T) {
	e := newEnv(t)
	c, u := e.owner("owner@example.com", false)
	ctx := context.Background()
	a, _ := e.db.Account(ctx, u.AccountID)
	svc := &content.Service{Store: e.db, Now: time.Now}
	cr, _, err := svc.Create(ctx, people.Principal(a), client.CreateContentRequest{Domain: "acme.example", Budget: client.Dollars(12.5)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := e.get(c, "/content")
	if !strings.Contains(p.body, cr.ID) || !strings.Contains(p.body, "queued") || !strings.Contains(p.body, "$12.5") {
		t.Errorf("the content page does not list the request:\n%s", p.body)
	}
	if p := e.get(c, "/content?status=completed"); strings.Contains(p.body, cr.ID) {
		t.Error("the completed filter lists a queued request")
	}
	// The budget: reserved by the request, the rest remaining.
	p = e.get(c, "/usage")
	for _, want := range []string{"reserved $12.5", "$4987.5", "1 active requests"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the usage page lacks %q", want)
		}
	}
}
