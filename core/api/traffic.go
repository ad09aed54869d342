package api

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/traffic"
)

// The window of a traffic read: the last DefaultTrafficDays days up to
// today by default, at most MaxTrafficDays.
const (
	DefaultTrafficDays = 30
	MaxTrafficDays     = 400
)

// trafficRoutes serves a domain's traffic under /v1 (none without a
// traffic service).
func (s *Server) trafficRoutes(r chi.Router) {
	if s.traffic == nil {
		return
	}
	r.Get("/domains/{id}/traffic", s.scope("visibility:read", s.getTraffic))
	r.Get("/domains/{id}/traffic/pages", s.scope("visibility:read", s.listTrafficPages))
	r.Post("/domains/{id}/traffic/logs", s.scope("visibility:write", s.uploadTrafficLogs))
	r.Get("/domains/{id}/ingest-tokens", s.scope("visibility:read", s.listIngestTokens))
	r.Post("/domains/{id}/ingest-tokens", s.scope("visibility:write", s.createIngestToken))
	r.Delete("/domains/{id}/ingest-tokens/{token_id}", s.scope("visibility:write", s.revokeIngestToken))
	r.Get("/crawlers", s.scope("visibility:read", s.listCrawlers))
}

// trafficWindow reads from and to (YYYY-MM-DD, both included) and returns
// the days [from, to+1).
func (s *Server) trafficWindow(r *http.Request) (from, end time.Time, err error) {
	q := r.URL.Query()
	today := s.now().UTC().Truncate(24 * time.Hour)
	var fs []fault.FieldError
	day := func(name string, def time.Time) time.Time {
		v := q.Get(name)
		if v == "" {
			return def
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			fs = append(fs, fault.FieldError{Field: name, Message: "must be a date, YYYY-MM-DD"})
		}
		return t
	}
	to := day("to", today)
	from = day("from", to.AddDate(0, 0, 1-DefaultTrafficDays))
	switch {
	case len(fs) > 0:
	case from.After(to):
		fs = append(fs, fault.FieldError{Field: "from", Message: "must be on or before to"})
	case to.Sub(from) >= MaxTrafficDays*24*time.Hour:
		fs = append(fs, fault.FieldError{Field: "from", Message: fmt.Sprintf("must be at most %d days before to", MaxTrafficDays-1)})
	}
	if len(fs) > 0 {
		return time.Time{}, time.Time{}, fault.Invalid(fs...)
	}
	return from, to.AddDate(0, 0, 1), nil
}

// trafficDomain is the domain of the path the principal may see, and the
// window of the query.
func (s *Server) trafficDomain(r *http.Request) (store.MonitoredDomain, time.Time, time.Time, error) {
	from, end, err := s.trafficWindow(r)
	if err != nil {
		return store.MonitoredDomain{}, from, end, err
	}
	d, err := s.domains.Get(r.Context(), principal(r), chi.URLParam(r, "id"))
	return d, from, end, err
}

func (s *Server) getTraffic(w http.ResponseWriter, r *http.Request) {
	d, from, end, err := s.trafficDomain(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	sum, err := s.traffic.Summary(r.Context(), d, from, end)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, summaryView(sum))
}

func summaryView(sum traffic.Summary) client.TrafficSummary {
	v := client.TrafficSummary{DomainID: sum.DomainID, FirstDay: sum.From.Format(time.DateOnly),
		LastDay: sum.To.AddDate(0, 0, -1).Format(time.DateOnly), LastBatchAt: sum.LastBatch,
		Agents: make([]client.AgentTraffic, 0, len(sum.Agents)), Purposes: make([]client.PurposeTraffic, 0, len(sum.Purposes)),
		TopPages: make([]client.PageTraffic, 0, len(sum.TopPages)), Problems: make([]client.TrafficProblem, 0, len(sum.Problems)),
		Referrals: make([]client.AssistantTraffic, 0, len(sum.Referrals))}
	for _, a := range sum.Agents {
		v.Agents = append(v.Agents, client.AgentTraffic{Agent: a.Agent, Operator: a.Operator, Purpose: string(a.Purpose), Hits: a.Hits,
			ByVerification: client.Verifications{Verified: a.ByVerification[traffic.Verified],
				Unverified: a.ByVerification[traffic.Unverified], Spoofed: a.ByVerification[traffic.Spoofed]},
			Status: client.StatusClasses{S2xx: a.Status[0], S3xx: a.Status[1], S4xx: a.Status[2], S5xx: a.Status[3], None: a.Status[4]},
			Bytes:  a.Bytes, Days: daysView(a.Days)})
	}
	for _, p := range sum.Purposes {
		v.Purposes = append(v.Purposes, client.PurposeTraffic{Purpose: string(p.Purpose), Hits: p.Hits, Days: daysView(p.Days)})
	}
	for _, p := range sum.TopPages {
		v.TopPages = append(v.TopPages, client.PageTraffic{Page: p.Page, Hits: p.Hits, Agents: p.Agents})
	}
	for _, p := range sum.Problems {
		v.Problems = append(v.Problems, client.TrafficProblem{Page: p.Page, Agent: p.Agent, Status: p.Status, Hits: p.Hits})
	}
	for _, a := range sum.Referrals {
		v.Referrals = append(v.Referrals, client.AssistantTraffic{Assistant: a.Assistant, Visits: a.Visits, Days: daysView(a.Days)})
	}
	return v
}

func daysView(ds []traffic.DayCount) []client.DayCount {
	out := make([]client.DayCount, len(ds))
	for i, d := range ds {
		out[i] = client.DayCount{Day: d.Day.Format(time.DateOnly), Count: d.Count}
	}
	return out
}

// listTrafficPages pages through a domain's pages, in the order of their
// paths (the cursor names the last one given), or answers all of them as
// CSV.
func (s *Server) listTrafficPages(w http.ResponseWriter, r *http.Request) {
	d, from, end, err := s.trafficDomain(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var all []traffic.Page
	read := false
	answerList(s, w, r, "traffic-pages-"+d.ID, trafficPageColumns, trafficPageRow, func(cursor string, limit int) ([]client.TrafficPage, string, error) {
		after := ""
		if cursor != "" {
			b, err := base64.RawURLEncoding.DecodeString(cursor)
			if err != nil {
				return nil, "", fault.Invalid(fault.FieldError{Field: "cursor", Message: "is not a cursor this list returned"})
			}
			after = string(b)
		}
		if !read {
			cited, err := s.citedPages(r, d)
			if err != nil {
				return nil, "", err
			}
			if all, err = s.traffic.Pages(r.Context(), d, from, end, cited); err != nil {
				return nil, "", err
			}
			read = true
		}
		i := sort.Search(len(all), func(i int) bool { return cursor == "" || all[i].Page > after })
		items := make([]client.TrafficPage, 0, limit)
		for ; i < len(all) && len(items) < limit; i++ {
			items = append(items, trafficPageView(all[i]))
		}
		next := ""
		if i < len(all) && len(items) > 0 {
			next = base64.RawURLEncoding.EncodeToString([]byte(items[len(items)-1].Page))
		}
		return items, next, nil
	})
}

// citedPages are the pages each engine's answers cited in the domain's
// latest completed scan (none before its first).
func (s *Server) citedPages(r *http.Request, d store.MonitoredDomain) ([]traffic.Cited, error) {
	sc, err := s.store.LatestScan(r.Context(), d.AccountID, d.ClientID, d.Domain)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return traffic.ScanCitations(sc), nil
}

func trafficPageView(p traffic.Page) client.TrafficPage {
	v := client.TrafficPage{Page: p.Page, Crawls: make([]client.AgentHits, 0, len(p.Crawls)),
		CitedBy: make([]client.EngineCitation, 0, len(p.CitedBy)), Referrals: make([]client.AssistantVisits, 0, len(p.Referrals))}
	for _, c := range p.Crawls {
		v.Crawls = append(v.Crawls, client.AgentHits{Agent: c.Agent, Hits: c.Hits, Errors: c.Errors})
	}
	for _, c := range p.CitedBy {
		v.CitedBy = append(v.CitedBy, client.EngineCitation{Engine: c.Engine, Answers: c.Answers})
	}
	for _, a := range p.Referrals {
		v.Referrals = append(v.Referrals, client.AssistantVisits{Assistant: a.Assistant, Visits: a.Visits})
	}
	return v
}

// trafficPageColumns are the columns of a domain's pages as CSV: totals,
// then each agent, engine and assistant with its count, a line each.
var trafficPageColumns = []string{"page", "crawler_hits", "crawler_errors", "crawled_by", "citing_answers", "cited_by",
	"referral_visits", "referred_by"}

func trafficPageRow(p client.TrafficPage) []string {
	var hits, errs, visits int64
	var answers int
	var crawled, cited, referred []string
	for _, c := range p.Crawls {
		hits, errs = hits+c.Hits, errs+c.Errors
		crawled = append(crawled, fmt.Sprintf("%s %d", c.Agent, c.Hits))
	}
	for _, c := range p.CitedBy {
		answers += c.Answers
		cited = append(cited, fmt.Sprintf("%s %d", c.Engine, c.Answers))
	}
	for _, a := range p.Referrals {
		visits += a.Visits
		referred = append(referred, fmt.Sprintf("%s %d", a.Assistant, a.Visits))
	}
	return []string{p.Page, csvexport.Int(int(hits)), csvexport.Int(int(errs)), strings.Join(crawled, "\n"), csvexport.Int(answers),
		strings.Join(cited, "\n"), csvexport.Int(int(visits)), strings.Join(referred, "\n")}
}

// uploadTrafficLogs takes a combined log file of a domain, gzip or plain,
// answered as the ingest endpoints answer a batch.
func (s *Server) uploadTrafficLogs(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "text/plain" && mt != "application/gzip" && mt != "application/x-gzip" && mt != "application/octet-stream" {
		writeError(w, r, s.log, fault.New(fault.UnsupportedMediaType, "send the log file as Content-Type: text/plain or application/gzip"))
		return
	}
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, MaxIngestBody)
	res, err := s.traffic.Import(r.Context(), d, body)
	if err != nil {
		writeError(w, r, s.log, bodyError(err))
		return
	}
	writeJSON(w, http.StatusOK, ingestResult(res))
}

func ingestTokenView(t store.IngestToken) client.IngestToken {
	return client.IngestToken{ID: t.ID, DomainID: t.DomainID, Name: t.Name, Source: t.Source, Prefix: t.Prefix,
		FastlyServiceID: optional(t.FastlyServiceID), ClientID: optional(t.ClientID), CreatedAt: t.CreatedAt,
		LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}

func (s *Server) listIngestTokens(w http.ResponseWriter, r *http.Request) {
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	ts, err := s.traffic.Store.ListIngestTokens(r.Context(), d.AccountID, d.ID)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	page := client.List[client.IngestToken]{Items: make([]client.IngestToken, 0, len(ts))}
	for _, t := range ts {
		page.Items = append(page.Items, ingestTokenView(t))
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) createIngestToken(w http.ResponseWriter, r *http.Request) {
	var in client.CreateIngestToken
	if err := readJSON(r, &in, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	t, secret, err := s.traffic.CreateToken(r.Context(), d, traffic.NewToken{Name: in.Name, Source: in.Source,
		SigningSecret: in.SigningSecret, FastlyServiceID: in.FastlyServiceID})
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	v := ingestTokenView(t)
	v.Token = secret
	w.Header().Set("Location", "/v1/domains/"+d.ID+"/ingest-tokens/"+t.ID)
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) revokeIngestToken(w http.ResponseWriter, r *http.Request) {
	d, ok := s.pathDomain(w, r)
	if !ok {
		return
	}
	id := chi.URLParam(r, "token_id")
	err := s.traffic.Store.RevokeIngestToken(r.Context(), d.AccountID, d.ID, id, s.now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		err = fault.New(fault.NotFound, "no ingest token %s", id)
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listCrawlers(w http.ResponseWriter, r *http.Request) {
	cat := s.traffic.Catalog
	rs := cat.Ranges()
	page := client.List[client.Crawler]{Items: []client.Crawler{}}
	for _, a := range cat.Agents() {
		c := client.Crawler{Token: a.Token, Operator: a.Operator, Purpose: string(a.Purpose), Lists: make([]client.CrawlerList, 0, len(a.Lists))}
		for _, l := range a.Lists {
			cl := client.CrawlerList{Name: l, Loaded: rs != nil && rs.Has(l)}
			if cl.Loaded {
				cl.Prefixes = rs.Len(l)
				if at := rs.Created(l); !at.IsZero() {
					at = at.UTC()
					cl.CreatedAt = &at
				}
			}
			c.Lists = append(c.Lists, cl)
		}
		page.Items = append(page.Items, c)
	}
	writeJSON(w, http.StatusOK, page)
}
