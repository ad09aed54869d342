package dashboard

import (
	"encoding/json"
	"strings"

	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

// breakdownOf reads a completed scan's result and its breakdown.
func breakdownOf(sc store.Scan) (visibility.ScanResult, visibility.Breakdown, bool) {
	var res visibility.ScanResult
	var bd visibility.Breakdown
	ok := json.Unmarshal(sc.Result, &res) == nil && json.Unmarshal(res.Breakdown, &bd) == nil
	return res, bd, ok
}

// share is a domain's share of the citations of its latest scan: the
// source share when its engines reported sources, else the citation rate.
type share struct {
	Rate    probe.Rate
	Sources bool // the source share; false: the citation rate
}

// shareOf is a set of answers' share of the citations: the source share
// when the engines reported sources, else the citation rate; nil without
// answers.
func shareOf(st probe.Stats) *share {
	if st.SourceShare != nil {
		return &share{Rate: *st.SourceShare, Sources: true}
	}
	if st.Citation.Of == 0 {
		return nil
	}
	return &share{Rate: st.Citation}
}

// citedRow is a domain the engines cited, with its share of the cited
// sources (nil when the engines reported none).
type citedRow struct {
	Domain string
	Count  int
	Share  *float64
	Own    bool // the page's domain or a subdomain of it
}

// citedRows are the scan's most cited domains, the page's own among them
// marked, or added after them when the engines reported sources and it is
// not among the most cited.
func citedRows(domain string, st probe.Stats) []citedRow {
	own := func(d string) bool { return d == domain || strings.HasSuffix(d, "."+domain) }
	var rows []citedRow
	found := false
	add := func(d string, n int) {
		row := citedRow{Domain: d, Count: n, Own: own(d)}
		if st.SourceShare != nil && st.SourceShare.Of > 0 {
			v := float64(n) / float64(st.SourceShare.Of)
			row.Share = &v
		}
		found = found || row.Own
		rows = append(rows, row)
	}
	for _, c := range st.CitedDomains {
		add(c.Domain, c.Count)
	}
	if !found && st.SourceShare != nil {
		add(domain, st.SourceShare.Hits)
	}
	return rows
}
