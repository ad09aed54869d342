package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/aivis/aivis/core/store"
)

// trendReadings is how many of a domain's newest readings its trend
// draws.
const trendReadings = 30

// domainSummary is a monitored domain as the Overview shows it: its
// latest score, the trend of its readings, its citation share.
type domainSummary struct {
	Domain store.MonitoredDomain
	Latest *store.Reading
	Change *int // the latest score against the reading before it, when it moved
	Trend  Sparkline
	Share  *share
	Scan   *store.Scan
}

// domainLink is a domain's page, naming its owner when that is a client.
func domainLink(domain, clientID string) string {
	if clientID == "" {
		return "/domains/" + domain
	}
	return "/domains/" + domain + "?client=" + url.QueryEscape(clientID)
}

// scoreChange is a reading that moved a domain's score.
type scoreChange struct {
	Domain   string
	ClientID string
	From, To int
	Change   int
	At       time.Time
}

// visibilityData is the domains' part of the Overview (and of a client's
// page).
type visibilityData struct {
	Domains    []domainSummary
	Changes    []scoreChange // the latest, newest first
	ShowClient bool          // an agency's: each domain's owner
	Clients    []store.Client
}

// visibility reads what the Overview shows of each domain: the newest
// readings of them all in one query, their last scans in another.
func (s *Dashboard) visibility(r *http.Request, accountID string, ds []store.MonitoredDomain, showClient bool) (visibilityData, error) {
	v := visibilityData{ShowClient: showClient}
	ids := make([]string, len(ds))
	for i, md := range ds {
		ids[i] = md.ID
	}
	readings, err := s.Store.LatestReadings(r.Context(), accountID, ids, trendReadings)
	if err != nil {
		return v, err
	}
	scans, err := s.Store.LatestScans(r.Context(), accountID, ids)
	if err != nil {
		return v, err
	}
	if showClient {
		if v.Clients, err = s.Store.ListClients(r.Context(), accountID); err != nil {
			return v, err
		}
	}
	for _, md := range ds {
		sum := domainSummary{Domain: md}
		rs := readings[md.ID] // newest first
		if len(rs) > 0 {
			sum.Latest = &rs[0]
			if len(rs) > 1 && rs[0].VisibilityScore != rs[1].VisibilityScore {
				c := rs[0].VisibilityScore - rs[1].VisibilityScore
				sum.Change = &c
			}
			sum.Trend = sparkline(md.Domain, rs)
		}
		for j := 0; j+1 < len(rs); j++ {
			if rs[j].VisibilityScore != rs[j+1].VisibilityScore {
				v.Changes = append(v.Changes, scoreChange{Domain: md.Domain, ClientID: md.ClientID,
					From: rs[j+1].VisibilityScore, To: rs[j].VisibilityScore,
					Change: rs[j].VisibilityScore - rs[j+1].VisibilityScore, At: rs[j].MeasuredAt})
			}
		}
		if sc, ok := scans[md.ID]; ok {
			sum.Scan = &sc
			if _, bd, ok := breakdownOf(sc); ok && bd.Overall != nil {
				sum.Share = shareOf(*bd.Overall)
			}
		}
		v.Domains = append(v.Domains, sum)
	}
	sort.SliceStable(v.Changes, func(i, j int) bool { return v.Changes[i].At.After(v.Changes[j].At) })
	v.Changes = v.Changes[:min(len(v.Changes), maxChanges)]
	return v, nil
}

// maxChanges is how many of the latest changes the Overview lists.
const maxChanges = 10

// Sparkline is a small line of a domain's recent scores (0-100), drawn
// as inline SVG with its summary in words.
type Sparkline struct {
	Label  string
	Values []int // oldest first
}

func sparkline(domain string, newestFirst []store.Reading) Sparkline {
	sp := Sparkline{Label: "Visibility score of " + domain}
	for i := len(newestFirst) - 1; i >= 0; i-- {
		sp.Values = append(sp.Values, newestFirst[i].VisibilityScore)
	}
	return sp
}

const sparkW, sparkH = 120, 32

// Summary says the line in words.
func (sp Sparkline) Summary() string {
	n := len(sp.Values)
	if n == 0 {
		return "No readings yet."
	}
	lo, hi := sp.Values[0], sp.Values[0]
	for _, v := range sp.Values {
		lo, hi = min(lo, v), max(hi, v)
	}
	if n == 1 {
		return fmt.Sprintf("%s: one reading, %d.", sp.Label, sp.Values[0])
	}
	return fmt.Sprintf("%s over the last %d readings: from %d to %d, lowest %d, highest %d.", sp.Label, n, sp.Values[0], sp.Values[n-1], lo, hi)
}

// SVG draws the line on a fixed 0-100 scale, so that lines compare.
func (sp Sparkline) SVG() template.HTML {
	if len(sp.Values) == 0 {
		return ""
	}
	var pts []string
	step := float64(sparkW-4) / math.Max(1, float64(len(sp.Values)-1))
	for i, v := range sp.Values {
		x := 2 + step*float64(i)
		if len(sp.Values) == 1 {
			x = sparkW / 2
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, 2+float64(sparkH-4)*(1-float64(v)/100)))
	}
	last := strings.Split(pts[len(pts)-1], ",")
	return template.HTML(fmt.Sprintf(`<svg class="spark" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`+
		`<polyline class="line s0" points="%s"/><circle class="dot s0" cx="%s" cy="%s" r="2.5"/></svg>`,
		sparkW, sparkH, sparkW, sparkH, template.HTMLEscapeString(sp.Summary()), strings.Join(pts, " "), last[0], last[1]))
}

type overviewData struct {
	Visibility visibilityData
	Usage      usageData
}

func (s *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	pr, v := principal(r), viewerOf(r)
	var d overviewData
	ds, _, err := s.Domains.List(r.Context(), pr, "*", "", 100)
	if err == nil {
		d.Visibility, err = s.visibility(r, pr.AccountID(), ds, v.Account.Type == store.AccountAgency)
	}
	if err == nil {
		d.Usage, err = s.usage(r, v.Account, "")
	}
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", D: d})
}
