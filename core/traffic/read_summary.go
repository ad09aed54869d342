package traffic

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/store"
)

// MaxProblems is how many problems Summary.Problems holds at most.
const MaxProblems = 50

// Summary reads domain d's AI crawler visits and AI referrals over the
// days [from, to) (UTC midnights; a time within a day stands for its
// midnight). Every day of the window has its count in each Days, zeros
// included.
func (s *Service) Summary(ctx context.Context, d store.MonitoredDomain, from, to time.Time) (Summary, error) {
	hits, refs, err := s.read(ctx, d, from, to)
	if err != nil {
		return Summary{}, err
	}
	return s.summary(ctx, d, from, to, hits, refs)
}

// SummaryAndPages is Summary and Pages of one read of the aggregates.
func (s *Service) SummaryAndPages(ctx context.Context, d store.MonitoredDomain, from, to time.Time, cited []Cited) (Summary, []Page, error) {
	hits, refs, err := s.read(ctx, d, from, to)
	if err != nil {
		return Summary{}, nil, err
	}
	sum, err := s.summary(ctx, d, from, to, hits, refs)
	if err != nil {
		return Summary{}, nil, err
	}
	return sum, pages(d, hits, refs, cited), nil
}

// read is domain d's aggregates over the days [from, to).
func (s *Service) read(ctx context.Context, d store.MonitoredDomain, from, to time.Time) ([]store.CrawlerHits, []store.ReferralVisits, error) {
	f := store.TrafficFilter{AccountID: d.AccountID, DomainID: d.ID, From: midnight(from), To: midnight(to)}
	hits, err := s.Store.ListCrawlerHits(ctx, f)
	if err != nil {
		return nil, nil, fmt.Errorf("traffic: crawler hits: %w", err)
	}
	refs, err := s.Store.ListReferralVisits(ctx, f)
	if err != nil {
		return nil, nil, fmt.Errorf("traffic: referral visits: %w", err)
	}
	return hits, refs, nil
}

// summary is the Summary of the aggregates read over [from, to).
func (s *Service) summary(ctx context.Context, d store.MonitoredDomain, from, to time.Time, hits []store.CrawlerHits,
	refs []store.ReferralVisits) (Summary, error) {
	from, to = midnight(from), midnight(to)
	batches, err := s.Store.ListTrafficBatches(ctx, d.AccountID, d.ID, 1)
	if err != nil {
		return Summary{}, fmt.Errorf("traffic: batches: %w", err)
	}
	sum := Summary{DomainID: d.ID, From: from, To: to, Agents: []AgentTraffic{}, Purposes: []PurposeTraffic{},
		TopPages: []PageTraffic{}, Problems: []Problem{}, Referrals: []AssistantTraffic{}}
	if len(batches) > 0 {
		at := batches[0].ReceivedAt.UTC()
		sum.LastBatch = &at
	}
	days := dayCounter{from: from, n: daysBetween(from, to)}
	sum.Agents = s.agentTraffic(hits, days)
	sum.Purposes = purposeTraffic(sum.Agents, hits, days)
	sum.TopPages, sum.Problems = pageTraffic(hits)
	sum.Referrals = assistantTraffic(refs, days)
	return sum, nil
}

// midnight is t's UTC day.
func midnight(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

func daysBetween(from, to time.Time) int {
	if !to.After(from) {
		return 0
	}
	return int(to.Sub(from) / (24 * time.Hour))
}

// dayCounter counts per day of a window.
type dayCounter struct {
	from time.Time
	n    int
}

func (dc dayCounter) make() []int64 { return make([]int64, dc.n) }

func (dc dayCounter) index(day time.Time) int {
	i := int(day.UTC().Sub(dc.from) / (24 * time.Hour))
	if i < 0 || i >= dc.n {
		return -1
	}
	return i
}

func (dc dayCounter) days(counts []int64) []DayCount {
	out := make([]DayCount, len(counts))
	for i, c := range counts {
		out[i] = DayCount{Day: dc.from.AddDate(0, 0, i), Count: c}
	}
	return out
}

// agents are the catalog's agents by token.
func (s *Service) agents() map[string]Agent {
	m := map[string]Agent{}
	if s.Catalog == nil {
		return m
	}
	for _, a := range s.Catalog.Agents() {
		m[a.Token] = a
	}
	return m
}

func (s *Service) agentTraffic(hits []store.CrawlerHits, dc dayCounter) []AgentTraffic {
	known := s.agents()
	byAgent := map[string]*AgentTraffic{}
	perDay := map[string][]int64{}
	for _, h := range hits {
		at := byAgent[h.Agent]
		if at == nil {
			a, ok := known[h.Agent]
			if !ok {
				a = Agent{Token: h.Agent, Purpose: Other}
			}
			at = &AgentTraffic{Agent: h.Agent, Operator: a.Operator, Purpose: a.Purpose, ByVerification: map[Verification]int64{}}
			byAgent[h.Agent], perDay[h.Agent] = at, dc.make()
		}
		at.Hits += h.Hits
		at.ByVerification[Verification(h.Verification)] += h.Hits
		for i, n := range h.Status {
			at.Status[i] += n
		}
		at.Bytes += h.Bytes
		if i := dc.index(h.Day); i >= 0 {
			perDay[h.Agent][i] += h.Hits
		}
	}
	out := make([]AgentTraffic, 0, len(byAgent))
	for name, at := range byAgent {
		at.Days = dc.days(perDay[name])
		out = append(out, *at)
	}
	slices.SortFunc(out, func(a, b AgentTraffic) int {
		return cmp.Or(cmp.Compare(b.Hits, a.Hits), strings.Compare(a.Agent, b.Agent))
	})
	return out
}

// purposeOrder is the order of Summary.Purposes.
var purposeOrder = []Purpose{Train, Index, Fetch, Other}

func purposeTraffic(agents []AgentTraffic, hits []store.CrawlerHits, dc dayCounter) []PurposeTraffic {
	purpose := map[string]Purpose{}
	for _, a := range agents {
		purpose[a.Agent] = a.Purpose
	}
	totals := map[Purpose]int64{}
	perDay := map[Purpose][]int64{}
	for _, h := range hits {
		if h.Verification == string(Spoofed) {
			continue
		}
		p := purpose[h.Agent]
		if perDay[p] == nil {
			perDay[p] = dc.make()
		}
		totals[p] += h.Hits
		if i := dc.index(h.Day); i >= 0 {
			perDay[p][i] += h.Hits
		}
	}
	out := []PurposeTraffic{}
	for _, p := range purposeOrder {
		if perDay[p] != nil {
			out = append(out, PurposeTraffic{Purpose: p, Hits: totals[p], Days: dc.days(perDay[p])})
		}
	}
	return out
}

// pageTraffic are the pages AI agents requested most and the problems
// they met, spoofed requests left out.
func pageTraffic(hits []store.CrawlerHits) ([]PageTraffic, []Problem) {
	type problemKey struct{ page, agent, status string }
	pages := map[string]int64{}
	agents := map[string]map[string]bool{}
	problems := map[problemKey]int64{}
	for _, h := range hits {
		if h.Verification == string(Spoofed) {
			continue
		}
		pages[h.Page] += h.Hits
		if agents[h.Page] == nil {
			agents[h.Page] = map[string]bool{}
		}
		agents[h.Page][h.Agent] = true
		if h.Status[2] > 0 {
			problems[problemKey{h.Page, h.Agent, Statuses[2]}] += h.Status[2]
		}
		if h.Status[3] > 0 {
			problems[problemKey{h.Page, h.Agent, Statuses[3]}] += h.Status[3]
		}
	}
	top := make([]PageTraffic, 0, len(pages))
	for p, n := range pages {
		top = append(top, PageTraffic{Page: p, Hits: n, Agents: len(agents[p])})
	}
	slices.SortFunc(top, func(a, b PageTraffic) int {
		return cmp.Or(cmp.Compare(b.Hits, a.Hits), strings.Compare(a.Page, b.Page))
	})
	probs := make([]Problem, 0, len(problems))
	for k, n := range problems {
		probs = append(probs, Problem{Page: k.page, Agent: k.agent, Status: k.status, Hits: n})
	}
	slices.SortFunc(probs, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(b.Hits, a.Hits), strings.Compare(a.Page, b.Page), strings.Compare(a.Agent, b.Agent),
			strings.Compare(a.Status, b.Status))
	})
	return top[:min(len(top), TopPages)], probs[:min(len(probs), MaxProblems)]
}

func assistantTraffic(refs []store.ReferralVisits, dc dayCounter) []AssistantTraffic {
	byAssistant := map[string]*AssistantTraffic{}
	perDay := map[string][]int64{}
	for _, r := range refs {
		at := byAssistant[r.Assistant]
		if at == nil {
			at = &AssistantTraffic{Assistant: r.Assistant}
			byAssistant[r.Assistant], perDay[r.Assistant] = at, dc.make()
		}
		at.Visits += r.Visits
		if i := dc.index(r.Day); i >= 0 {
			perDay[r.Assistant][i] += r.Visits
		}
	}
	out := make([]AssistantTraffic, 0, len(byAssistant))
	for name, at := range byAssistant {
		at.Days = dc.days(perDay[name])
		out = append(out, *at)
	}
	slices.SortFunc(out, func(a, b AssistantTraffic) int {
		return cmp.Or(cmp.Compare(b.Visits, a.Visits), strings.Compare(a.Assistant, b.Assistant))
	})
	return out
}

// Cited is what one engine's answers cited of a domain's pages in a scan
// (a scan's result: each engine's cited_pages): the page's URL and how
// many answers cited it. An engine asked in several markets has an entry
// per market; they add up.
type Cited struct {
	Engine  string
	URL     string
	Answers int
}

// ScanCitations are what each engine's answers cited of the domain's
// pages in scan sc, read from its result (breakdown.engines[], each with
// its label and cited_pages): none for a scan that is not completed or
// asked no engine.
func ScanCitations(sc store.Scan) []Cited {
	if sc.Status != store.ScanCompleted {
		return nil
	}
	var res struct {
		Breakdown struct {
			Engines []struct {
				Label      string `json:"label"`
				CitedPages []struct {
					URL   string `json:"url"`
					Count int    `json:"count"`
				} `json:"cited_pages"`
			} `json:"engines"`
		} `json:"breakdown"`
	}
	if json.Unmarshal(sc.Result, &res) != nil {
		return nil
	}
	var out []Cited
	for _, e := range res.Breakdown.Engines {
		for _, p := range e.CitedPages {
			out = append(out, Cited{Engine: e.Label, URL: p.URL, Answers: p.Count})
		}
	}
	return out
}

// Pages joins domain d's pages over the days [from, to): the agents that
// requested each (spoofed requests left out), the engines whose answers
// cited it (cited: ScanCitations of the domain's latest completed scan,
// which the caller reads; a URL on another host than the domain or its
// subdomains is left out), and the assistants that sent visitors to it.
// A page is in when any of the three has it; pages come in the order of
// their paths.
func (s *Service) Pages(ctx context.Context, d store.MonitoredDomain, from, to time.Time, cited []Cited) ([]Page, error) {
	hits, refs, err := s.read(ctx, d, from, to)
	if err != nil {
		return nil, err
	}
	return pages(d, hits, refs, cited), nil
}

// pages joins the aggregates read and the citations by page (Pages).
func pages(d store.MonitoredDomain, hits []store.CrawlerHits, refs []store.ReferralVisits, cited []Cited) []Page {
	type joined struct {
		crawls    map[string]*AgentHits
		cited     map[string]int
		referrals map[string]int64
	}
	byPath := map[string]*joined{}
	get := func(p string) *joined {
		j := byPath[p]
		if j == nil {
			j = &joined{crawls: map[string]*AgentHits{}, cited: map[string]int{}, referrals: map[string]int64{}}
			byPath[p] = j
		}
		return j
	}
	for _, h := range hits {
		if h.Verification == string(Spoofed) {
			continue
		}
		j := get(h.Page)
		ah := j.crawls[h.Agent]
		if ah == nil {
			ah = &AgentHits{Agent: h.Agent}
			j.crawls[h.Agent] = ah
		}
		ah.Hits += h.Hits
		ah.Errors += h.Status[2] + h.Status[3]
	}
	for _, c := range cited {
		if p, ok := PageOf(d.Domain, c.URL); ok && c.Answers > 0 {
			get(p).cited[c.Engine] += c.Answers
		}
	}
	for _, r := range refs {
		get(r.Page).referrals[r.Assistant] += r.Visits
	}
	out := make([]Page, 0, len(byPath))
	for path, j := range byPath {
		p := Page{Page: path, Crawls: []AgentHits{}, CitedBy: []EngineCitation{}, Referrals: []AssistantVisits{}}
		for _, ah := range j.crawls {
			p.Crawls = append(p.Crawls, *ah)
		}
		slices.SortFunc(p.Crawls, func(a, b AgentHits) int {
			return cmp.Or(cmp.Compare(b.Hits, a.Hits), strings.Compare(a.Agent, b.Agent))
		})
		for e, n := range j.cited {
			p.CitedBy = append(p.CitedBy, EngineCitation{Engine: e, Answers: n})
		}
		slices.SortFunc(p.CitedBy, func(a, b EngineCitation) int {
			return cmp.Or(cmp.Compare(b.Answers, a.Answers), strings.Compare(a.Engine, b.Engine))
		})
		for a, n := range j.referrals {
			p.Referrals = append(p.Referrals, AssistantVisits{Assistant: a, Visits: n})
		}
		slices.SortFunc(p.Referrals, func(a, b AssistantVisits) int {
			return cmp.Or(cmp.Compare(b.Visits, a.Visits), strings.Compare(a.Assistant, b.Assistant))
		})
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Page) int { return strings.Compare(a.Page, b.Page) })
	return out
}

// PageOf is the page (the path, as the aggregates keep it) of a URL on
// domain or one of its subdomains (www. included); ok is false for a URL
// of another host or no URL at all.
func PageOf(domain, rawURL string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || u.Host == "" {
		return "", false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	if host != domain && !strings.HasSuffix(host, "."+domain) {
		return "", false
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if len(p) > store.MaxTrafficPage {
		cut := store.MaxTrafficPage
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		p = p[:cut]
	}
	return p, true
}
