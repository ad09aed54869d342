package dashboard

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/core/events"
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
	Change string // the latest score against the reading before it, signed, when it moved
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

// change is a recent move of a domain's figures: its score, from one
// reading to the next, or an engine's citation rate, from one scan to the
// next (a citation_change event).
type change struct {
	Domain   string
	ClientID string
	Engine   string // a citation rate's; "" for the score
	From, To string
	Change   string // signed, in points
	At       time.Time
}

// citationChanges are the latest citation_change events of an owner (or
// of every owner: clientID "*"), as changes.
func (s *Dashboard) citationChanges(r *http.Request, clientID string) ([]change, error) {
	evs, err := s.Webhooks.RecentEvents(r.Context(), principal(r), events.CitationChange, clientID, maxChanges)
	if err != nil {
		return nil, err
	}
	var out []change
	for _, ev := range evs {
		var body struct {
			Data events.CitationChangeData `json:"data"`
		}
		if err := json.Unmarshal(ev.Payload, &body); err != nil {
			return nil, fmt.Errorf("event %s: %w", ev.ID, err)
		}
		d := body.Data
		out = append(out, change{Domain: ev.Domain, ClientID: ev.ClientID, Engine: d.Engine, At: ev.CreatedAt,
			From: rate(d.PreviousCitationRate.Value), To: rate(d.CitationRate.Value), Change: points(d.CitationChange)})
	}
	return out, nil
}

// points is a change of a rate in percentage points, signed, to the
// tenth.
func points(v float64) string {
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s + " points"
}

// visibilityData is the domains' part of the Overview (and of a client's
// page).
type visibilityData struct {
	Domains    []domainSummary
	Changes    []change // the latest, newest first
	ShowClient bool     // an agency's: each domain's owner
	Clients    []store.Client
}

// visibility reads what the Overview shows of an owner's domains ds (of
// every owner: clientID "*"): the newest readings of them all in one
// query, their last scans in another, the latest citation changes in a
// third.
func (s *Dashboard) visibility(r *http.Request, clientID string, ds []store.MonitoredDomain, showClient bool) (visibilityData, error) {
	v := visibilityData{ShowClient: showClient}
	accountID := principal(r).AccountID()
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
			sum.Latest, sum.Trend = &rs[0], sparkline(md.Domain, rs)
		}
		for j := 0; j+1 < len(rs); j++ {
			from, to := rs[j+1].VisibilityScore, rs[j].VisibilityScore
			if from == to {
				continue
			}
			c := change{Domain: md.Domain, ClientID: md.ClientID, From: strconv.Itoa(from), To: strconv.Itoa(to),
				Change: fmt.Sprintf("%+d", to-from), At: rs[j].MeasuredAt}
			if j == 0 {
				sum.Change = c.Change
			}
			v.Changes = append(v.Changes, c)
		}
		if sc, ok := scans[md.ID]; ok {
			sum.Scan = &sc
			if _, bd, ok := breakdownOf(sc); ok && bd.Overall != nil {
				sum.Share = shareOf(*bd.Overall)
			}
		}
		v.Domains = append(v.Domains, sum)
	}
	cited, err := s.citationChanges(r, clientID)
	if err != nil {
		return v, err
	}
	v.Changes = append(v.Changes, cited...)
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
		d.Visibility, err = s.visibility(r, "*", ds, v.Account.Type == store.AccountAgency)
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
