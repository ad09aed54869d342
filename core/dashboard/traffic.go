package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/traffic"
)

// trafficWindows are the windows the traffic tab offers, in days, and
// defaultTrafficDays the one it opens with.
var trafficWindows = []int{7, 30, 90}

const defaultTrafficDays = 30

// maxJoinedPages is how many pages the tab's join lists.
const maxJoinedPages = 50

// maxAssistantSeries is how many assistants the referrals chart draws
// apart; the others are summed in one series (the chart has six colours).
const maxAssistantSeries = 5

// purposes are the agents' purposes in the order the requests chart
// stacks them.
var purposes = []traffic.Purpose{traffic.Train, traffic.Index, traffic.Fetch, traffic.Other}

// trafficData is the domain page's Traffic tab: a domain's AI crawler
// visits and AI referrals over a window, and its ingest tokens.
type trafficData struct {
	Domain   string
	ClientID string
	DomainID string
	Days     int
	Windows  []int
	Summary  traffic.Summary
	// Agents are the summary's agents as the table shows them, and
	// LastBatch when the latest batch came (zero: none yet).
	Agents    []agentRow
	LastBatch time.Time
	// Requests are the agents' requests per day by purpose, Referrals
	// the visits per day by assistant (no series: none in the window).
	Requests  Chart
	Referrals Chart
	// Pages are the domain's pages joined with the agents that requested
	// them, the engines that cited them and the assistants that sent
	// visitors to them: the maxJoinedPages busiest of AllPages (the CSV
	// has every one).
	Pages    []traffic.Page
	AllPages int
	Tokens   []tokenRow
	Sources  []string
	Created  *createdToken // the token just made: its secret is shown once
	Form     tokenForm
	Origin   string // where the ingest endpoints are
}

// Empty reports whether the domain has had no batch yet: the tab then
// says how to send logs instead of drawing anything.
func (d trafficData) Empty() bool { return d.LastBatch.IsZero() }

// agentRow is an agent's requests as the agents table shows them.
type agentRow struct {
	traffic.AgentTraffic
	Verified, Unverified, Spoofed int64
	Status4xx, Status5xx          int64
}

func agentRows(as []traffic.AgentTraffic) []agentRow {
	rows := make([]agentRow, len(as))
	for i, a := range as {
		rows[i] = agentRow{AgentTraffic: a, Verified: a.ByVerification[traffic.Verified], Unverified: a.ByVerification[traffic.Unverified],
			Spoofed: a.ByVerification[traffic.Spoofed], Status4xx: a.Status[2], Status5xx: a.Status[3]}
	}
	return rows
}

// WindowLink is the tab over another window.
func (d trafficData) WindowLink(days int) string {
	return d.link(url.Values{"days": {strconv.Itoa(days)}})
}

// CSVLink is the address of the pages' join as CSV ("Download CSV").
func (d trafficData) CSVLink() string {
	return d.link(url.Values{"days": {strconv.Itoa(d.Days)}, "csv": {"pages"}})
}

// Base is the tab's address, naming the domain's owner when a client.
func (d trafficData) Base() string { return d.link(nil) }

func (d trafficData) link(q url.Values) string {
	if d.ClientID != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("client", d.ClientID)
	}
	u := "/domains/" + d.Domain + "/traffic"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// VisibilityLink is the domain page's visibility tab.
func (d trafficData) VisibilityLink() string { return domainLink(d.Domain, d.ClientID) }

// tokenRow is an ingest token as the list shows it.
type tokenRow struct {
	store.IngestToken
	State    string // active or revoked
	LastUsed time.Time
}

// createdToken is a token just made, with its secret and the setup of
// its source, both shown once.
type createdToken struct {
	Token  store.IngestToken
	Secret string
	Setup  string
}

// tokenForm is what the token form holds, as typed (never the signing
// secret).
type tokenForm struct{ Name, Source string }

// monitored finds the domain of the request's {domain} that the account
// monitors: of a name the account and its clients monitor apart,
// clientID's (without one, the account's own, else a client's).
func (s *Dashboard) monitored(r *http.Request, clientID string) (store.MonitoredDomain, error) {
	name, err := domains.Normalize(chi.URLParam(r, "domain"))
	if err != nil {
		return store.MonitoredDomain{}, store.ErrNotFound
	}
	ds, _, err := s.Domains.List(r.Context(), principal(r), "*", "", 100)
	if err != nil {
		return store.MonitoredDomain{}, err
	}
	var found *store.MonitoredDomain
	for i, md := range ds {
		if md.Domain == name && (md.ClientID == clientID || clientID == "" && found == nil) {
			found = &ds[i]
		}
	}
	if found == nil {
		return store.MonitoredDomain{}, store.ErrNotFound
	}
	return *found, nil
}

// tabDomain is monitored's domain for a tab of the domain page, or the
// page that says why not: 503 when the server keeps nothing of what the
// tab shows (kept false, what names it).
func (s *Dashboard) tabDomain(w http.ResponseWriter, r *http.Request, clientID string, kept bool, what string) (store.MonitoredDomain, bool) {
	if !kept {
		s.fail(w, r, http.StatusServiceUnavailable, "This server keeps no "+what+".")
		return store.MonitoredDomain{}, false
	}
	md, err := s.monitored(r, clientID)
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "This account does not monitor that domain.")
		return md, false
	} else if err != nil {
		s.failWith(w, r, err)
		return md, false
	}
	return md, true
}

// trafficDomain is the Traffic tab's domain (tabDomain).
func (s *Dashboard) trafficDomain(w http.ResponseWriter, r *http.Request, clientID string) (store.MonitoredDomain, bool) {
	return s.tabDomain(w, r, clientID, s.Traffic != nil, "traffic")
}

// trafficWindow is the window a request asks (?days=, or the form's
// days), in days.
func trafficWindow(r *http.Request) (int, bool) {
	v := r.URL.Query().Get("days")
	if r.Method == http.MethodPost {
		v = r.PostFormValue("days")
	}
	if v == "" {
		return defaultTrafficDays, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && slices.Contains(trafficWindows, n)
}

// window is the days [from, to) of the last n, today's included.
func (s *Dashboard) window(n int) (time.Time, time.Time) {
	to := s.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	return to.AddDate(0, 0, -n), to
}

func (s *Dashboard) trafficPage(w http.ResponseWriter, r *http.Request) {
	md, ok := s.trafficDomain(w, r, r.URL.Query().Get("client"))
	if !ok {
		return
	}
	days, ok := trafficWindow(r)
	if !ok {
		s.fail(w, r, http.StatusBadRequest, "The traffic tab shows the last 7, 30 or 90 days; ?days= names one of them.")
		return
	}
	if table := r.URL.Query().Get("csv"); table != "" {
		s.trafficCSV(w, r, md, days, table)
		return
	}
	s.showTraffic(w, r, http.StatusOK, page{}, md, trafficData{Days: days, Form: tokenForm{Source: store.TrafficCloudflare}})
}

// showTraffic renders the Traffic tab of md over d.Days.
func (s *Dashboard) showTraffic(w http.ResponseWriter, r *http.Request, status int, p page, md store.MonitoredDomain, d trafficData) {
	d.Domain, d.ClientID, d.DomainID, d.Windows, d.Sources, d.Origin = md.Domain, md.ClientID, md.ID, trafficWindows, traffic.Sources, s.origin(r)
	from, to := s.window(d.Days)
	cited, err := s.cited(r.Context(), md)
	if err == nil {
		d.Summary, d.Pages, err = s.Traffic.SummaryAndPages(r.Context(), md, from, to, cited)
	}
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	if d.Summary.LastBatch != nil {
		d.LastBatch = *d.Summary.LastBatch
	}
	d.Agents = agentRows(d.Summary.Agents)
	d.Requests, d.Referrals = requestsChart(md.Domain, d.Summary), referralsChart(md.Domain, d.Summary)
	marks, err := s.changeMarks(r.Context(), &md, d.Summary.From, d.Summary.To)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Requests.Marks, d.Referrals.Marks = dayMarks(d.Summary.From, d.Summary.To, marks), dayMarks(d.Summary.From, d.Summary.To, marks)
	d.AllPages, d.Pages = len(d.Pages), busiest(d.Pages, maxJoinedPages)
	if d.Tokens, err = s.tokenRows(r.Context(), md); err != nil {
		s.failWith(w, r, err)
		return
	}
	p.Title, p.Nav, p.D = md.Domain+": traffic", "domains", d
	s.render(w, r, status, "traffic", p)
}

// cited is what each engine's answers cited of md's pages in its latest
// completed scan (none before a scan).
func (s *Dashboard) cited(ctx context.Context, md store.MonitoredDomain) ([]traffic.Cited, error) {
	sc, err := s.Store.LatestScan(ctx, md.AccountID, md.ClientID, md.Domain)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return traffic.ScanCitations(sc), nil
}

// busiest are the n pages of ps with the most requests, citing answers
// and referred visits together, most first (ties by path).
func busiest(ps []traffic.Page, n int) []traffic.Page {
	weight := func(p traffic.Page) int64 {
		var w int64
		for _, c := range p.Crawls {
			w += c.Hits
		}
		for _, c := range p.CitedBy {
			w += int64(c.Answers)
		}
		for _, a := range p.Referrals {
			w += a.Visits
		}
		return w
	}
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b traffic.Page) int { return cmp.Compare(weight(b), weight(a)) })
	return out[:min(n, len(out))]
}

// dayLabels are the labels of a summary's days.
func dayLabels(sum traffic.Summary) []string {
	var out []string
	for d := sum.From; d.Before(sum.To); d = d.AddDate(0, 0, 1) {
		out = append(out, d.Format("Jan 2"))
	}
	return out
}

// dayValues are counts per day laid on the summary's days.
func dayValues(sum traffic.Summary, days []traffic.DayCount) []float64 {
	n := len(dayLabels(sum))
	out := make([]float64, n)
	for _, dc := range days {
		if i := int(dc.Day.Sub(sum.From) / (24 * time.Hour)); i >= 0 && i < n {
			out[i] += float64(dc.Count)
		}
	}
	return out
}

// requestsChart draws the agents' requests per day, stacked by purpose
// (spoofed requests left out); no series when there were none.
func requestsChart(domain string, sum traffic.Summary) Chart {
	c := Chart{Title: "AI agent requests to " + domain + " per day, by purpose", Labels: dayLabels(sum)}
	for i, p := range purposes {
		for _, pt := range sum.Purposes {
			if pt.Purpose == p && pt.Hits > 0 {
				c.Series = append(c.Series, Series{Name: string(p), Values: dayValues(sum, pt.Days), Class: "s" + strconv.Itoa(i)})
			}
		}
	}
	return c
}

// referralsChart draws the visits per day, stacked by assistant: the
// maxAssistantSeries that sent most apart, the others summed; no series
// when there were none.
func referralsChart(domain string, sum traffic.Summary) Chart {
	c := Chart{Title: "Visits to " + domain + " referred by AI assistants per day", Labels: dayLabels(sum)}
	var others []float64
	for i, a := range sum.Referrals {
		if a.Visits == 0 {
			continue
		}
		v := dayValues(sum, a.Days)
		if i < maxAssistantSeries {
			c.Series = append(c.Series, Series{Name: a.Assistant, Values: v, Class: "s" + strconv.Itoa(i)})
			continue
		}
		if others == nil {
			others = make([]float64, len(v))
		}
		for j := range v {
			others[j] += v[j]
		}
	}
	if others != nil {
		c.Series = append(c.Series, Series{Name: "other assistants", Values: others, Class: "s" + strconv.Itoa(maxAssistantSeries)})
	}
	return c
}

// tokenRows lists md's ingest tokens, newest first.
func (s *Dashboard) tokenRows(ctx context.Context, md store.MonitoredDomain) ([]tokenRow, error) {
	ts, err := s.Traffic.Store.ListIngestTokens(ctx, md.AccountID, md.ID)
	if err != nil {
		return nil, err
	}
	rows := make([]tokenRow, len(ts))
	for i, t := range ts {
		rows[i] = tokenRow{IngestToken: t, State: "active"}
		if t.LastUsedAt != nil {
			rows[i].LastUsed = *t.LastUsedAt
		}
		if t.RevokedAt != nil {
			rows[i].State = "revoked"
		}
	}
	return rows, nil
}

func (s *Dashboard) createIngestToken(w http.ResponseWriter, r *http.Request) {
	md, ok := s.trafficDomain(w, r, r.PostFormValue("client_id"))
	if !ok {
		return
	}
	f := tokenForm{Name: r.PostFormValue("name"), Source: r.PostFormValue("source")}
	d := trafficData{Days: defaultTrafficDays, Form: f}
	if days, ok := trafficWindow(r); ok {
		d.Days = days // the window the form was sent from
	}
	t, secret, err := s.Traffic.CreateToken(r.Context(), md, traffic.NewToken{Name: f.Name, Source: f.Source,
		SigningSecret: r.PostFormValue("signing_secret")})
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showTraffic(w, r, status, page{Problem: p}, md, d)
		return
	}
	s.Log.Info("dashboard: ingest token created", "token", t.ID, "domain", md.ID, "user", viewerOf(r).User.ID)
	d.Form = tokenForm{Source: f.Source}
	d.Created = &createdToken{Token: t, Secret: secret, Setup: setup(s.origin(r), md, t, secret)}
	s.showTraffic(w, r, http.StatusCreated, page{}, md, d)
}

func (s *Dashboard) revokeIngestToken(w http.ResponseWriter, r *http.Request) {
	md, ok := s.trafficDomain(w, r, r.PostFormValue("client_id"))
	if !ok {
		return
	}
	id := chi.URLParam(r, "id")
	err := s.Traffic.Store.RevokeIngestToken(r.Context(), md.AccountID, md.ID, id, s.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "This domain has no such ingest token.")
		return
	} else if err != nil {
		s.failWith(w, r, err)
		return
	}
	s.Log.Info("dashboard: ingest token revoked", "token", id, "domain", md.ID, "user", viewerOf(r).User.ID)
	redirect(w, r, trafficData{Domain: md.Domain, ClientID: md.ClientID}.Base(), "irevoked")
}

// cloudflareFields are the Logpush fields aivis reads (docs/traffic.md).
const cloudflareFields = `"ClientIP","ClientRequestHost","ClientRequestMethod","ClientRequestPath",` +
	`"ClientRequestURI","ClientRequestUserAgent","ClientRequestReferer","EdgeResponseStatus","EdgeResponseBytes","EdgeStartTimestamp"`

// setup is how to point t's source at aivis, with its secret, as
// docs/traffic.md says.
func setup(origin string, md store.MonitoredDomain, t store.IngestToken, secret string) string {
	ingest := origin + "/ingest/v1/" + t.Source
	switch t.Source {
	case store.TrafficCloudflare:
		return fmt.Sprintf("Create a Logpush job of the http_requests dataset (POST /zones/{zone_id}/logpush/jobs):\n\n"+
			`{"name":%q,"dataset":"http_requests","enabled":true,`+"\n"+
			` "destination_conf":%q,`+"\n"+
			` "output_options":{"field_names":[%s],"timestamp_format":"rfc3339"}}`,
			md.Domain+"-aivis", ingest+"?header_Authorization=Bearer%20"+secret, cloudflareFields)
	case store.TrafficVercel:
		return "Add a log drain (team settings, Log Drains) with:\n\n" +
			"URL:            " + ingest + "?verify=CODE   (CODE: the verification code Vercel shows)\n" +
			"Custom header:  Authorization: Bearer " + secret + "\n" +
			"Format:         JSON or NDJSON; sources at least static and lambda\n\n" +
			"Every delivery's x-vercel-signature is checked against the signing secret given with this token."
	default: // store.TrafficFastly: the only other source a token takes
		return "Create an HTTPS logging endpoint with:\n\n" +
			"URL:                  " + ingest + "\n" +
			"Custom header name:   Authorization\n" +
			"Custom header value:  Bearer " + secret + "\n" +
			"JSON format:          2 (newline-delimited) or 1 (an array), naming at least timestamp, client_ip,\n" +
			"                      method, url, status, bytes, referer and user_agent"
	}
}

// trafficCSV answers a table of the Traffic tab as CSV: the pages joined
// with their crawls, citations and referrals, as the API exports them.
func (s *Dashboard) trafficCSV(w http.ResponseWriter, r *http.Request, md store.MonitoredDomain, days int, table string) {
	if table != "pages" {
		s.fail(w, r, http.StatusBadRequest, "The traffic tab has no such table to download.")
		return
	}
	from, to := s.window(days)
	cited, err := s.cited(r.Context(), md)
	var ps []traffic.Page
	if err == nil {
		ps, err = s.Traffic.Pages(r.Context(), md, from, to, cited)
	}
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	rows := make([][]string, len(ps))
	for i, p := range ps {
		rows[i] = pageRow(p)
	}
	writeCSV(w, md.Domain+"-traffic-pages", pageColumns, rows)
}

// pageColumns are the columns of the pages' CSV, the API's (GET
// /v1/domains/{id}/traffic/pages as CSV).
var pageColumns = []string{"page", "crawler_hits", "crawler_errors", "crawled_by", "citing_answers", "cited_by", "referral_visits", "referred_by"}

// pageRow is a page of the join as a CSV row, as the API writes it:
// totals, then each agent, engine and assistant with its count, a line
// each.
func pageRow(p traffic.Page) []string {
	var hits, errs, visits int64
	var answers int
	var crawled, citedBy, referred []string
	for _, c := range p.Crawls {
		hits, errs = hits+c.Hits, errs+c.Errors
		crawled = append(crawled, c.Agent+" "+strconv.FormatInt(c.Hits, 10))
	}
	for _, c := range p.CitedBy {
		answers += c.Answers
		citedBy = append(citedBy, c.Engine+" "+strconv.Itoa(c.Answers))
	}
	for _, a := range p.Referrals {
		visits += a.Visits
		referred = append(referred, a.Assistant+" "+strconv.FormatInt(a.Visits, 10))
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{p.Page, n(hits), n(errs), strings.Join(crawled, "\n"), strconv.Itoa(answers), strings.Join(citedBy, "\n"),
		n(visits), strings.Join(referred, "\n")}
}
