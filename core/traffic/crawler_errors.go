package traffic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/store"
)

// Sites is what a batch's crawler_errors reads beside the batch: its
// domain (the name and the owner) and the domain's latest completed scan,
// whose answers cite the pages.
type Sites interface {
	MonitoredDomain(ctx context.Context, accountID, id string) (store.MonitoredDomain, error)
	LatestScan(ctx context.Context, accountID, clientID, domain string) (store.Scan, error)
}

// crawlerErrors is what publishes a batch's crawler_errors in the
// transaction that keeps it (store.TrafficBatch.Then), or nil when the
// batch fires none: no Sites, no error of a verified or unverified AI
// agent, no completed scan, or no error on a page the scan cites.
func (s *Service) crawlerErrors(ctx context.Context, accountID, domainID string, hits []store.CrawlerHits, at time.Time) (func(store.Tx) error, error) {
	if s.Sites == nil || !slices.ContainsFunc(hits, agentError) {
		return nil, nil
	}
	d, err := s.Sites.MonitoredDomain(ctx, accountID, domainID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // the store refuses the batch
	} else if err != nil {
		return nil, fmt.Errorf("traffic: domain: %w", err)
	}
	sc, err := s.Sites.LatestScan(ctx, d.AccountID, d.ClientID, d.Domain)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("traffic: latest scan: %w", err)
	}
	data, total := CrawlerErrors(d, sc, hits)
	if total == 0 {
		return nil, nil
	}
	ev, err := events.New(events.CrawlerErrors, at, d.AccountID, d.ClientID, d.Domain, data)
	if err != nil {
		return nil, err
	}
	ev.CrawlerErrors = total
	return func(tx store.Tx) error { return events.Publish(ctx, tx, ev) }, nil
}

// agentError reports whether h holds errors of an agent that is not
// spoofed.
func agentError(h store.CrawlerHits) bool {
	return h.Verification != string(Spoofed) && h.Status[2]+h.Status[3] > 0
}

// CrawlerErrors is the data of the crawler_errors of a batch's hits on
// domain d, whose latest completed scan is sc: the 4xx and 5xx of
// verified and unverified agents on the pages sc's answers cite (at most
// events.MaxCrawlerErrorPages, the most errors first), and their error
// hits on every such page (0: the batch fires none).
func CrawlerErrors(d store.MonitoredDomain, sc store.Scan, hits []store.CrawlerHits) (events.CrawlerErrorsData, int64) {
	cited := map[string]map[string]int{}
	for _, c := range ScanCitations(sc) {
		if p, ok := PageOf(d.Domain, c.URL); ok && c.Answers > 0 {
			if cited[p] == nil {
				cited[p] = map[string]int{}
			}
			cited[p][c.Engine] += c.Answers
		}
	}
	type agentKey struct{ agent, verification string }
	pages := map[string]map[agentKey]*events.CrawlerErrorsAgent{}
	days := map[string]bool{}
	var total int64
	for _, h := range hits {
		if !agentError(h) || cited[h.Page] == nil {
			continue
		}
		if pages[h.Page] == nil {
			pages[h.Page] = map[agentKey]*events.CrawlerErrorsAgent{}
		}
		k := agentKey{h.Agent, h.Verification}
		a := pages[h.Page][k]
		if a == nil {
			a = &events.CrawlerErrorsAgent{Agent: h.Agent, Verification: h.Verification}
			pages[h.Page][k] = a
		}
		a.Status4xx += h.Status[2]
		a.Status5xx += h.Status[3]
		days[h.Day.UTC().Format(time.DateOnly)] = true
		total += h.Status[2] + h.Status[3]
	}
	data := events.CrawlerErrorsData{Domain: d.Domain, Days: slices.Sorted(maps.Keys(days)), ScanID: sc.ID, Errors: total,
		PagesWithErrors: len(pages), Pages: make([]events.CrawlerErrorsPage, 0, len(pages))}
	if d.ClientID != "" {
		data.ClientID = &d.ClientID
	}
	for path, agents := range pages {
		p := events.CrawlerErrorsPage{Path: path}
		for _, a := range agents {
			p.Agents = append(p.Agents, *a)
			p.Errors += a.Status4xx + a.Status5xx
		}
		slices.SortFunc(p.Agents, func(a, b events.CrawlerErrorsAgent) int {
			return cmp.Or(cmp.Compare(b.Status4xx+b.Status5xx, a.Status4xx+a.Status5xx), strings.Compare(a.Agent, b.Agent),
				strings.Compare(a.Verification, b.Verification))
		})
		for e, n := range cited[path] {
			p.CitedBy = append(p.CitedBy, events.CrawlerErrorsEngine{Engine: e, Answers: n})
		}
		slices.SortFunc(p.CitedBy, func(a, b events.CrawlerErrorsEngine) int {
			return cmp.Or(cmp.Compare(b.Answers, a.Answers), strings.Compare(a.Engine, b.Engine))
		})
		data.Pages = append(data.Pages, p)
	}
	slices.SortFunc(data.Pages, func(a, b events.CrawlerErrorsPage) int {
		return cmp.Or(cmp.Compare(b.Errors, a.Errors), strings.Compare(a.Path, b.Path))
	})
	if len(data.Pages) > events.MaxCrawlerErrorPages {
		data.Pages = data.Pages[:events.MaxCrawlerErrorPages]
	}
	return data, total
}
