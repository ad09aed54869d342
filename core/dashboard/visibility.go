package dashboard

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/readiness"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

type clientsData struct {
	Clients []store.Client
}

func (s *Dashboard) clientsPage(w http.ResponseWriter, r *http.Request) {
	cs, err := s.Store.ListClients(r.Context(), viewerOf(r).Account.ID)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "clients", page{Title: "Clients", Nav: "clients", D: clientsData{Clients: cs}})
}

func (s *Dashboard) createClient(w http.ResponseWriter, r *http.Request) {
	c, err := s.Accounts.CreateClient(r.Context(), viewerOf(r).Account.ID, r.PostFormValue("name"))
	if err != nil {
		p, status := s.problemOf(r, err)
		cs, _ := s.Store.ListClients(r.Context(), viewerOf(r).Account.ID)
		s.render(w, r, status, "clients", page{Title: "Clients", Nav: "clients", Problem: p, D: clientsData{Clients: cs}})
		return
	}
	redirect(w, r, "/clients/"+c.ID, "client")
}

type clientData struct {
	Client      store.Client
	Keys        []keyRow
	Usage       usageData
	Visibility  visibilityData
	Webhooks    []store.Webhook
	Connections []store.Webhook
	Events      []store.LoggedEvent
	DefaultURL  string
}

func (s *Dashboard) clientPage(w http.ResponseWriter, r *http.Request) {
	v, pr, id := viewerOf(r), principal(r), chi.URLParam(r, "id")
	c, err := s.Store.Client(r.Context(), v.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "There is no such client.")
		return
	} else if err != nil {
		s.failWith(w, r, err)
		return
	}
	d := clientData{Client: c}
	var errs []error
	var e error
	d.Keys, _, e = s.keyRows(r, v.Account.ID, id)
	errs = append(errs, e)
	d.Usage, e = s.usage(r, v.Account, id)
	errs = append(errs, e)
	ds, _, e := s.Domains.List(r.Context(), pr, id, "", 100)
	errs = append(errs, e)
	if e == nil {
		d.Visibility, e = s.visibility(r, id, ds, false)
		errs = append(errs, e)
	}
	d.Webhooks, _, e = s.Webhooks.List(r.Context(), pr, id, "", 100)
	errs = append(errs, e)
	d.Connections, _, e = s.connections.List(r.Context(), pr, id, "", 100)
	errs = append(errs, e)
	d.Events, e = s.Webhooks.RecentEvents(r.Context(), pr, "", id, 20)
	errs = append(errs, e)
	d.DefaultURL, e = s.Store.DefaultWebhookURL(r.Context(), v.Account.ID, id)
	errs = append(errs, e)
	if err := errors.Join(errs...); err != nil {
		s.failWith(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "client", page{Title: "Client " + c.Name, Nav: "clients", D: d})
}

type domainsData struct {
	Domains []store.MonitoredDomain
	Clients []store.Client
	Scores  map[string]*store.Reading // by monitored domain id
	Form    struct{ Domain, Competitors, Markets, ClientID string }
}

func (s *Dashboard) showDomains(w http.ResponseWriter, r *http.Request, status int, p page, d domainsData) {
	pr := principal(r)
	ds, _, err := s.Domains.List(r.Context(), pr, "*", "", 100)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	cs, err := s.Store.ListClients(r.Context(), pr.AccountID())
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	ids := make([]string, len(ds))
	for i, md := range ds {
		ids[i] = md.ID
	}
	latest, err := s.Store.LatestReadings(r.Context(), pr.AccountID(), ids, 1)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	d.Domains, d.Clients, d.Scores = ds, cs, map[string]*store.Reading{}
	for id, rs := range latest {
		d.Scores[id] = &rs[0]
	}
	p.Title, p.Nav, p.D = "Domains", "domains", d
	s.render(w, r, status, "domains", p)
}

func (s *Dashboard) domainsPage(w http.ResponseWriter, r *http.Request) {
	s.showDomains(w, r, http.StatusOK, page{}, domainsData{})
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (s *Dashboard) createDomain(w http.ResponseWriter, r *http.Request) {
	var d domainsData
	d.Form.Domain, d.Form.Competitors, d.Form.ClientID = r.PostFormValue("domain"), r.PostFormValue("competitors"), r.PostFormValue("client_id")
	d.Form.Markets = r.PostFormValue("markets")
	var markets []client.Market
	for _, tag := range splitList(d.Form.Markets) {
		// de-DE: the language, then the country (Domains.Create checks both).
		m := client.Market{Language: tag}
		if i := strings.LastIndexByte(tag, '-'); i > 0 {
			m = client.Market{Language: tag[:i], Country: tag[i+1:]}
		}
		markets = append(markets, m)
	}
	_, err := s.Domains.Create(r.Context(), principal(r), client.CreateDomain{Domain: d.Form.Domain, Competitors: splitList(d.Form.Competitors),
		Markets: markets, ClientID: d.Form.ClientID})
	if err != nil {
		p, status := s.problemOf(r, err)
		s.showDomains(w, r, status, page{Problem: p}, d)
		return
	}
	redirect(w, r, "/domains", "domain")
}

type domainData struct {
	Domain    string
	ClientID  string // the owner whose readings and scans the page shows
	Monitored *store.MonitoredDomain
	Latest    *store.Reading
	Readings  []store.Reading
	Score     Chart
	Sentiment Chart
	Scan      *store.Scan
	Result    *visibility.ScanResult
	Report    *readiness.Report
	Parts     []part
	Figures   *visibility.Breakdown // with the engines' figures
	// Market is the market the page's figures are of ("" all), and
	// Markets those the latest scan asked.
	Market  string
	Markets []probe.MarketResult
	Share   *share
	Cited   []visibility.CitedDomain
	// The latest scan's answers: a page of those the form's filters
	// (Ask) select, and the link to the next page.
	Answers     []client.ScanAnswer
	Ask         answerAsk
	AnswersNext string
}

// answerAsk is what the answers' form asks, as typed.
type answerAsk struct{ Q, Engine, Market, Mentioned, Cited string }

// Any reports whether the form asks anything.
func (a answerAsk) Any() bool { return a != answerAsk{} }

// answersPerPage is how many answers the domain page lists at once.
const answersPerPage = 20

// scanAnswers reads the page of the latest scan's answers that the
// request's filters and cursor select.
func (s *Dashboard) scanAnswers(r *http.Request, d *domainData) error {
	q := r.URL.Query()
	d.Ask = answerAsk{Q: q.Get("q"), Engine: q.Get("engine"), Market: q.Get("market"), Mentioned: q.Get("mentioned"), Cited: q.Get("cited")}
	f, err := visibility.ParseAnswerFilter(q)
	if err != nil {
		return err
	}
	f.AccountID, f.ScanID, f.Cursor, f.Limit = principal(r).AccountID(), d.Scan.ID, q.Get("cursor"), answersPerPage
	as, next, err := s.Store.ListScanAnswers(r.Context(), f)
	if err != nil {
		return accounts.CursorError(err)
	}
	views := make([]client.ScanAnswer, len(as))
	for i, a := range as {
		if views[i], err = visibility.AnswerView(a); err != nil {
			return err
		}
	}
	d.Answers = views
	if next != "" {
		q.Set("cursor", next)
		d.AnswersNext = "/domains/" + d.Domain + "?" + q.Encode() + "#answers"
	}
	return nil
}

type part struct {
	Name   string
	Value  float64
	Weight float64
}

// domainPage shows one domain by name: the Slack alerts link here. Of a
// name that the account and its clients monitor apart, ?client= picks the
// owner; without it, the account's own (or a client's when the account
// does not monitor the name).
func (s *Dashboard) domainPage(w http.ResponseWriter, r *http.Request) {
	pr := principal(r)
	name, err := domains.Normalize(chi.URLParam(r, "domain"))
	if err != nil {
		s.fail(w, r, http.StatusNotFound, "That is not a domain name.")
		return
	}
	d := domainData{Domain: name, ClientID: r.URL.Query().Get("client")}
	ds, _, err := s.Domains.List(r.Context(), pr, "*", "", 100)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	for _, md := range ds {
		if md.Domain == name && (md.ClientID == d.ClientID || d.ClientID == "" && d.Monitored == nil) {
			d.Monitored = &md
		}
	}
	if d.Monitored != nil {
		d.ClientID = d.Monitored.ClientID
	}
	rs, _, err := s.Store.ListReadings(r.Context(), store.ReadingFilter{AccountID: pr.AccountID(), ClientID: d.ClientID, Domain: name}, "", 100)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	if d.Monitored == nil && len(rs) == 0 {
		s.fail(w, r, http.StatusNotFound, "This account has no readings of "+name+".")
		return
	}
	slices.Reverse(rs) // oldest first
	d.Readings = rs
	if len(rs) > 0 {
		d.Latest = &rs[len(rs)-1]
	}
	d.Score = Chart{Title: "Visibility score of " + name, Lines: true, Min: 0, Max: 100}
	d.Sentiment = Chart{Title: "Sentiment of " + name, Lines: true, Min: -1, Max: 1}
	var score, sent []float64
	for _, rd := range rs {
		label := rd.MeasuredAt.Format("Jan 2 15h")
		d.Score.Labels = append(d.Score.Labels, label)
		d.Sentiment.Labels = append(d.Sentiment.Labels, label)
		score = append(score, float64(rd.VisibilityScore))
		sent = append(sent, math.Round(rd.SentimentScore*100)/100)
	}
	d.Score.Series = []Series{{Name: "Visibility score", Values: score, Class: "s0"}}
	d.Sentiment.Series = []Series{{Name: "Sentiment score", Values: sent, Class: "s1"}}
	if len(rs) > 0 {
		marks, err := s.changeMarks(r.Context(), d.Monitored, rs[0].MeasuredAt, rs[len(rs)-1].MeasuredAt.Add(time.Nanosecond))
		if err != nil {
			s.failWith(w, r, err)
			return
		}
		times := make([]time.Time, len(rs))
		for i, rd := range rs {
			times[i] = rd.MeasuredAt
		}
		d.Score.Marks, d.Sentiment.Marks = pointMarks(times, marks), pointMarks(times, marks)
	}
	if sc, err := s.Store.LatestScan(r.Context(), pr.AccountID(), d.ClientID, name); err == nil {
		d.Scan = &sc
		if res, bd, ok := breakdownOf(sc); ok {
			d.Result = &res
			for k, v := range bd.Components {
				d.Parts = append(d.Parts, part{Name: k, Value: v, Weight: bd.Weights[k]})
			}
			sort.Slice(d.Parts, func(i, j int) bool {
				if d.Parts[i].Weight != d.Parts[j].Weight {
					return d.Parts[i].Weight > d.Parts[j].Weight
				}
				return d.Parts[i].Name < d.Parts[j].Name
			})
			if b, err := json.Marshal(bd.Readiness); err == nil {
				var rep readiness.Report
				if json.Unmarshal(b, &rep) == nil && rep.Domain != "" {
					d.Report = &rep
				}
			}
			if bd.Overall != nil {
				d.Markets = bd.Markets
				bd = marketFigures(bd, r.URL.Query().Get("market"), &d.Market)
				d.Figures, d.Share, d.Cited = &bd, shareOf(*bd.Overall), visibility.CitedDomains(name, *bd.Overall)
			}
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		s.failWith(w, r, err)
		return
	}
	if table := r.URL.Query().Get("csv"); table != "" {
		s.domainCSV(w, r, d, table)
		return
	}
	status, prob := http.StatusOK, (*problem)(nil)
	if d.Figures != nil {
		if err := s.scanAnswers(r, &d); err != nil {
			prob, status = s.problemOf(r, err)
		}
	}
	s.render(w, r, status, "domain", page{Title: name, Nav: "domains", Problem: prob, D: d})
}

// marketFigures are a scan's figures in one market (the market
// switch): its engines' in that market, and over them that market's; all
// of them for "" or a market the scan did not ask. market is set to the
// market shown.
func marketFigures(bd visibility.Breakdown, tag string, market *string) visibility.Breakdown {
	i := slices.IndexFunc(bd.Markets, func(m probe.MarketResult) bool { return m.Market.String() == tag })
	if tag == "" || i < 0 {
		return bd
	}
	*market = tag
	st := bd.Markets[i].Stats
	bd.Overall = &st
	bd.Engines = slices.DeleteFunc(slices.Clone(bd.Engines), func(e probe.EngineResult) bool { return e.Market == nil || e.Market.String() != tag })
	bd.Surfaces = nil // the surfaces' figures are over every market
	return bd
}

func (s *Dashboard) requestScan(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "domain")
	if s.Scans == nil {
		s.fail(w, r, http.StatusServiceUnavailable, "This server runs no scans.")
		return
	}
	clientID := r.PostFormValue("client_id")
	if _, err := s.Scans.Request(r.Context(), principal(r), client.RequestScan{Domain: name, ClientID: clientID}); err != nil {
		s.failWith(w, r, err)
		return
	}
	redirect(w, r, domainLink(name, clientID), "scan")
}

type contentData struct {
	Requests []store.ContentRequest
	Status   string
	Statuses []string
}

func (s *Dashboard) contentPage(w http.ResponseWriter, r *http.Request) {
	st := r.URL.Query().Get("status")
	crs, _, err := s.Content.List(r.Context(), principal(r), store.ContentFilter{Status: st, Limit: 100})
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "content", page{Title: "Content requests", Nav: "content",
		D: contentData{Requests: crs, Status: st, Statuses: []string{"queued", "processing", "completed", "failed", "cancelled"}}})
}
