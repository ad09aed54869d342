package dashboard

import (
	"encoding/json"

	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/visibility"
)

// breakdownOf reads a completed scan's result and its breakdown; an
// engine of a scan from before surfaces is on its kind's.
func breakdownOf(sc store.Scan) (visibility.ScanResult, visibility.Breakdown, bool) {
	var res visibility.ScanResult
	var bd visibility.Breakdown
	ok := json.Unmarshal(sc.Result, &res) == nil && json.Unmarshal(res.Breakdown, &bd) == nil
	for i, e := range bd.Engines {
		if e.Surface == "" {
			bd.Engines[i].Surface = probe.Engine{Kind: e.Kind}.Surface()
		}
	}
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
