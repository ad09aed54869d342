package visibility

import (
	"encoding/json"
	"math"
	"time"

	"github.com/aivis/aivis/core/events"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
)

// cited are the citation figures of a scan, read from its breakdown
// (Breakdown: overall and engines[], each engine by its label).
type cited struct {
	FormulaVersion int            `json:"formula_version"`
	Overall        *citedStats    `json:"overall"`
	Engines        []citedEngine  `json:"engines"`
	byLabel        map[string]int // Engines' index by label and market
}

type citedStats struct {
	CitationRate     events.Rate  `json:"citation_rate"`
	SourceShare      *events.Rate `json:"source_share"`
	OverviewPresence *events.Rate `json:"overview_presence"`
}

type citedEngine struct {
	Label   string         `json:"label"`
	Kind    string         `json:"kind"`
	Surface string         `json:"surface"`
	Market  *events.Market `json:"market"`
	citedStats
}

// key is the engine's in a scan: its label, and its market's.
func (e citedEngine) key() string {
	if e.Market == nil {
		return e.Label
	}
	return e.Label + "\x00" + e.Market.Language + "-" + e.Market.Country
}

// presence is a figure's overview presence: every answer shown for one
// kept before presence was measured.
func (s citedStats) presence() events.Rate {
	if s.OverviewPresence == nil {
		r := events.Rate{Hits: s.CitationRate.Of, Of: s.CitationRate.Of}
		if r.Of > 0 {
			r.Value = 1
		}
		return r
	}
	return *s.OverviewPresence
}

// readCited reads the citation figures of a breakdown; ok is false for a
// scan that asked no engine (or a breakdown that is not one).
func readCited(breakdown json.RawMessage) (c cited, ok bool) {
	if json.Unmarshal(breakdown, &c) != nil || c.Overall == nil {
		return cited{}, false
	}
	c.byLabel = make(map[string]int, len(c.Engines))
	for i := range c.Engines {
		if c.Engines[i].Kind == "" {
			c.Engines[i].Kind = probe.KindOpenAIChat // scans from before engine kinds
		}
		if c.Engines[i].Surface == "" {
			c.Engines[i].Surface = probe.Engine{Kind: c.Engines[i].Kind}.Surface() // from before surfaces
		}
		if _, dup := c.byLabel[c.Engines[i].key()]; !dup {
			c.byLabel[c.Engines[i].key()] = i
		}
	}
	return c, true
}

// readScanCited reads the citation figures of a stored scan.
func readScanCited(sc store.Scan) (cited, bool) {
	var res ScanResult
	if json.Unmarshal(sc.Result, &res) != nil {
		return cited{}, false
	}
	return readCited(res.Breakdown)
}

// completionEvents are the events of a scan's end: a citation_change for
// each engine whose citation rate moved since prev, the domain's previous
// completed scan (none when prev is zero), then scan_completed with the
// scan's citation figures, the last event of the scan.
func completionEvents(sc store.Scan, out *Outcome, prev store.Scan, now time.Time) ([]events.Event, error) {
	data := events.ScanCompletedData{ScanID: sc.ID, Domain: sc.Domain, VisibilityScore: out.VisibilityScore, Sentiment: out.Sentiment,
		ReadinessScore: out.ReadinessScore, Engines: []events.EngineCitations{}, ClientID: events.Optional(sc.ClientID)}
	var evs []events.Event
	if cur, ok := readCited(out.Breakdown); ok {
		presence := cur.Overall.presence()
		data.CitationRate, data.SourceShare, data.OverviewPresence = &cur.Overall.CitationRate, cur.Overall.SourceShare, &presence
		for _, e := range cur.Engines {
			data.Engines = append(data.Engines, events.EngineCitations{Label: e.Label, Kind: e.Kind, Surface: e.Surface, Market: e.Market,
				CitationRate: e.CitationRate, SourceShare: e.SourceShare, OverviewPresence: e.presence()})
		}
		if before, ok := readScanCited(prev); ok {
			for _, d := range citationChanges(cur, before) {
				d.Domain, d.ScanID, d.PreviousScanID, d.ClientID = sc.Domain, sc.ID, prev.ID, data.ClientID
				ev, err := events.New(events.CitationChange, now, sc.AccountID, sc.ClientID, sc.Domain, d)
				if err != nil {
					return nil, err
				}
				ev.CitationChange = math.Abs(d.CitationChange)
				evs = append(evs, ev)
			}
		}
	}
	ev, err := events.New(events.ScanCompleted, now, sc.AccountID, sc.ClientID, sc.Domain, data)
	return append(evs, ev), err
}

// citationChanges compares the engines of two scans, in cur's order: an
// engine of the same label, kind and market in both, that answered in
// both, whose citation rate moved by a hundredth of a point or more.
// Scans whose engines' rates were measured under different formulas are
// not compared: their rates may differ by the formula alone.
func citationChanges(cur, prev cited) []events.CitationChangeData {
	if citationFormula(cur.FormulaVersion) != citationFormula(prev.FormulaVersion) {
		return nil
	}
	var out []events.CitationChangeData
	for _, e := range cur.Engines {
		i, ok := prev.byLabel[e.key()]
		if !ok {
			continue
		}
		p := prev.Engines[i]
		if p.Kind != e.Kind || p.CitationRate.Of == 0 || e.CitationRate.Of == 0 {
			continue
		}
		change := math.Round(10000*(e.CitationRate.Value-p.CitationRate.Value)) / 100
		if change == 0 {
			continue
		}
		out = append(out, events.CitationChangeData{Engine: e.Label, Kind: e.Kind, Surface: e.Surface, Market: e.Market, CitationRate: e.CitationRate,
			PreviousCitationRate: p.CitationRate, CitationChange: change, SourceShare: e.SourceShare, PreviousSourceShare: p.SourceShare})
	}
	return out
}
