package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scanDoc is the part of GET /v1/visibility/scans/{id} the figures tools
// read; the breakdown's parts are passed on as the API gives them.
type scanDoc struct {
	ID         string  `json:"id"`
	Domain     string  `json:"domain"`
	Status     string  `json:"status"`
	FinishedAt *string `json:"finished_at"`
	Result     *struct {
		VisibilityScore int                        `json:"visibility_score"`
		ReadinessScore  int                        `json:"readiness_score"`
		Sentiment       string                     `json:"sentiment"`
		Breakdown       map[string]json.RawMessage `json:"breakdown"`
	} `json:"result"`
}

func (h *Handler) scan(ctx context.Context, req *mcp.CallToolRequest, id string) (scanDoc, error) {
	var sc scanDoc
	err := h.get(ctx, req, scanPath(id), nil, &sc)
	return sc, err
}

// part is a part of the breakdown, nil when it has none.
func (sc scanDoc) part(name string) json.RawMessage {
	if sc.Result == nil {
		return nil
	}
	if b := sc.Result.Breakdown[name]; len(b) > 0 && string(b) != "null" {
		return b
	}
	return nil
}

func (sc scanDoc) note() string {
	if sc.Status != "completed" {
		return fmt.Sprintf("the scan is %s: its figures come once it completes (get_scan tells when)", sc.Status)
	}
	if sc.part("engines") == nil {
		return "the scan asked no answer engine: its score is the readiness audit's alone"
	}
	return ""
}

// ScanFigures are a scan's figures (get_scan_figures).
type ScanFigures struct {
	ScanID          string          `json:"scan_id"`
	Domain          string          `json:"domain"`
	Status          string          `json:"status"`
	FinishedAt      *string         `json:"finished_at"`
	Note            string          `json:"note,omitempty" jsonschema:"why figures are missing, when they are"`
	VisibilityScore *int            `json:"visibility_score,omitempty"`
	ReadinessScore  *int            `json:"readiness_score,omitempty"`
	Sentiment       string          `json:"sentiment,omitempty"`
	Basis           string          `json:"basis,omitempty" jsonschema:"readiness_and_engines, or readiness_only when no engine was asked"`
	Runs            json.RawMessage `json:"runs,omitempty" jsonschema:"how many times each prompt was asked of each engine"`
	Components      json.RawMessage `json:"components,omitempty" jsonschema:"the score's parts, each 0-100"`
	Overall         json.RawMessage `json:"overall,omitempty" jsonschema:"the figures over every engine: rates with hits, of and interval_95"`
	Engines         json.RawMessage `json:"engines,omitempty" jsonschema:"the figures of each engine (label, kind, model, surface, market)"`
	Surfaces        json.RawMessage `json:"surfaces,omitempty" jsonschema:"the figures of each surface (model, search_api, serp), when the scan has them"`
	Markets         json.RawMessage `json:"markets,omitempty" jsonschema:"the figures of each market (country and language), when the scan has them"`
}

func figures(sc scanDoc) ScanFigures {
	f := ScanFigures{ScanID: sc.ID, Domain: sc.Domain, Status: sc.Status, FinishedAt: sc.FinishedAt, Note: sc.note()}
	if r := sc.Result; r != nil {
		f.VisibilityScore, f.ReadinessScore, f.Sentiment = &r.VisibilityScore, &r.ReadinessScore, r.Sentiment
		var basis string
		json.Unmarshal(sc.part("basis"), &basis)
		f.Basis = basis
		f.Runs, f.Components = sc.part("runs"), sc.part("components")
		f.Overall, f.Engines, f.Surfaces, f.Markets = sc.part("overall"), sc.part("engines"), sc.part("surfaces"), sc.part("markets")
	}
	return f
}

// CitedSources are the sources a scan's answers cited (get_cited_sources).
type CitedSources struct {
	ScanID       string          `json:"scan_id"`
	Domain       string          `json:"domain"`
	Status       string          `json:"status"`
	Note         string          `json:"note,omitempty"`
	SourceShare  json.RawMessage `json:"source_share,omitempty" jsonschema:"the domain's share of the cited sources, with its 95% interval (null when no engine reported sources)"`
	CitedDomains json.RawMessage `json:"cited_domains,omitempty" jsonschema:"the domains cited most, with how many answers cited each"`
	CitedPages   json.RawMessage `json:"cited_pages,omitempty" jsonschema:"the domain's own pages cited, with how many answers cited each"`
	Engines      []EngineSources `json:"engines,omitempty"`
}

// EngineSources are one engine's cited sources.
type EngineSources struct {
	Label           string          `json:"label"`
	Surface         string          `json:"surface,omitempty"`
	Market          json.RawMessage `json:"market,omitempty"`
	SourcesReported json.RawMessage `json:"sources_reported,omitempty"`
	SourceShare     json.RawMessage `json:"source_share,omitempty"`
	CitedDomains    json.RawMessage `json:"cited_domains,omitempty"`
	CitedPages      json.RawMessage `json:"cited_pages,omitempty"`
}

func citedSources(sc scanDoc) CitedSources {
	out := CitedSources{ScanID: sc.ID, Domain: sc.Domain, Status: sc.Status, Note: sc.note()}
	var overall map[string]json.RawMessage
	json.Unmarshal(sc.part("overall"), &overall)
	out.SourceShare, out.CitedDomains, out.CitedPages = overall["source_share"], overall["cited_domains"], overall["cited_pages"]
	var engines []struct {
		Label           string          `json:"label"`
		Surface         string          `json:"surface"`
		Market          json.RawMessage `json:"market"`
		SourcesReported json.RawMessage `json:"sources_reported"`
		SourceShare     json.RawMessage `json:"source_share"`
		CitedDomains    json.RawMessage `json:"cited_domains"`
		CitedPages      json.RawMessage `json:"cited_pages"`
	}
	json.Unmarshal(sc.part("engines"), &engines)
	for _, e := range engines {
		out.Engines = append(out.Engines, EngineSources(e))
	}
	return out
}

// CompareIn is compare_scans's input.
type CompareIn struct {
	FromScanID string `json:"from_scan_id" jsonschema:"the earlier scan's id"`
	ToScanID   string `json:"to_scan_id" jsonschema:"the later scan's id, of the same domain"`
}

// ScanRef is a scan compared.
type ScanRef struct {
	ID              string  `json:"id"`
	FinishedAt      *string `json:"finished_at"`
	VisibilityScore int     `json:"visibility_score"`
}

// RateChange is a rate in two scans: each with its interval (null where
// the scan has no such figure), to minus from, and whether the two 95%
// intervals do not overlap (a change the samples bear out).
type RateChange struct {
	From           *Rate    `json:"from"`
	To             *Rate    `json:"to"`
	Change         *float64 `json:"change,omitempty"`
	IntervalsApart bool     `json:"intervals_apart"`
}

// RatesChange are the mention and citation rates of an engine (or of
// every engine) in two scans.
type RatesChange struct {
	Label    string          `json:"label,omitempty"`
	Surface  string          `json:"surface,omitempty"`
	Market   json.RawMessage `json:"market,omitempty"`
	Mention  RateChange      `json:"mention_rate"`
	Citation RateChange      `json:"citation_rate"`
}

// Comparison is compare_scans's result.
type Comparison struct {
	Domain  string        `json:"domain"`
	From    ScanRef       `json:"from"`
	To      ScanRef       `json:"to"`
	Overall RatesChange   `json:"overall"`
	Engines []RatesChange `json:"engines"`
}

type engineRates struct {
	Label    string          `json:"label"`
	Surface  string          `json:"surface"`
	Market   json.RawMessage `json:"market"`
	Mention  *Rate           `json:"mention_rate"`
	Citation *Rate           `json:"citation_rate"`
}

func (e engineRates) key() string { return e.Label + "\x00" + string(e.Market) }

func compare(from, to scanDoc) (Comparison, error) {
	if from.Domain != to.Domain {
		return Comparison{}, fmt.Errorf("the scans are of two domains (%s and %s): compare two scans of one domain", from.Domain, to.Domain)
	}
	for _, sc := range []scanDoc{from, to} {
		if sc.Status != "completed" || sc.Result == nil {
			return Comparison{}, fmt.Errorf("scan %s is %s: only completed scans have figures to compare", sc.ID, sc.Status)
		}
	}
	c := Comparison{Domain: from.Domain, Engines: []RatesChange{},
		From: ScanRef{ID: from.ID, FinishedAt: from.FinishedAt, VisibilityScore: from.Result.VisibilityScore},
		To:   ScanRef{ID: to.ID, FinishedAt: to.FinishedAt, VisibilityScore: to.Result.VisibilityScore}}
	var fo, tov engineRates
	json.Unmarshal(from.part("overall"), &fo)
	json.Unmarshal(to.part("overall"), &tov)
	c.Overall = RatesChange{Mention: change(fo.Mention, tov.Mention), Citation: change(fo.Citation, tov.Citation)}
	var fe, te []engineRates
	json.Unmarshal(from.part("engines"), &fe)
	json.Unmarshal(to.part("engines"), &te)
	later := map[string]engineRates{}
	for _, e := range te {
		later[e.key()] = e
	}
	seen := map[string]bool{}
	add := func(f, t engineRates, e engineRates) {
		c.Engines = append(c.Engines, RatesChange{Label: e.Label, Surface: e.Surface, Market: e.Market,
			Mention: change(f.Mention, t.Mention), Citation: change(f.Citation, t.Citation)})
	}
	for _, e := range fe {
		t := later[e.key()]
		seen[e.key()] = true
		add(e, t, e)
	}
	for _, e := range te {
		if !seen[e.key()] {
			add(engineRates{}, e, e)
		}
	}
	return c, nil
}

func change(from, to *Rate) RateChange {
	rc := RateChange{From: from, To: to}
	if from != nil && to != nil {
		d := to.Value - from.Value
		rc.Change = &d
		rc.IntervalsApart = to.Interval.Low > from.Interval.High || from.Interval.Low > to.Interval.High
	}
	return rc
}

// scanStatus is a scan's answer without its breakdown, with its scores.
func scanStatus(b json.RawMessage) (ScanStatus, error) {
	var m map[string]json.RawMessage
	if err := decode(b, &m); err != nil {
		return ScanStatus{}, err
	}
	var res struct {
		VisibilityScore *int   `json:"visibility_score"`
		ReadinessScore  *int   `json:"readiness_score"`
		Sentiment       string `json:"sentiment"`
	}
	json.Unmarshal(m["result"], &res)
	delete(m, "result")
	for k, v := range map[string]any{"visibility_score": res.VisibilityScore, "readiness_score": res.ReadinessScore} {
		if v.(*int) != nil {
			m[k], _ = json.Marshal(v)
		}
	}
	if res.Sentiment != "" {
		m["sentiment"], _ = json.Marshal(res.Sentiment)
	}
	out, err := json.Marshal(m)
	return ScanStatus{passthrough: passthrough{out}}, err
}
