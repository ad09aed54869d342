package visibility

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
)

// CitedDomain is a domain the engines cited in a scan, with its share of
// the cited sources (nil when the engines reported none).
type CitedDomain struct {
	Domain string
	Count  int
	Share  *float64
	Own    bool // the scanned domain or a subdomain of it
}

// CitedDomains are a scan's most cited domains, the scanned domain's own
// among them marked, or added after them when the engines reported sources
// and it is not among the most cited.
func CitedDomains(domain string, st probe.Stats) []CitedDomain {
	own := func(d string) bool { return d == domain || strings.HasSuffix(d, "."+domain) }
	var rows []CitedDomain
	found := false
	add := func(d string, n int) {
		row := CitedDomain{Domain: d, Count: n, Own: own(d)}
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

// ScanTableNames are the tables of a scan's figures, as CSV exports name
// them: its figures per engine, the domains cited and the scanned domain's
// pages cited.
var ScanTableNames = []string{"engines", "cited_domains", "cited_pages"}

// AllEngines is the engine column of the per-engine table's last row, the
// figures over every engine.
const AllEngines = "all engines"

// ScanTable is the table name of a scan of domain with breakdown bd: its
// header and rows (none for a scan that asked no engine); ok is false for
// a name not in ScanTableNames.
func ScanTable(domain string, bd Breakdown, name string) (header []string, rows [][]string, ok bool) {
	rate := func(r probe.Rate) []string {
		return []string{csvexport.Float(r.Value), csvexport.Int(r.Hits), csvexport.Int(r.Of),
			csvexport.Float(r.Interval.Low), csvexport.Float(r.Interval.High)}
	}
	rateOrNone := func(r *probe.Rate) []string {
		if r == nil {
			return make([]string, 5) // no sources reported: nothing measured
		}
		return rate(*r)
	}
	switch name {
	case "engines":
		header = []string{"engine", "kind", "model", "surface", "market", "localisation", "probes", "failed"}
		for _, m := range []string{"overview_presence", "mention_rate", "citation_rate", "sources_reported", "source_share"} {
			header = append(header, m, m+"_hits", m+"_of", m+"_low", m+"_high")
		}
		header = append(header, "first_position_rate", "average_position", "share_of_voice", "input_tokens", "output_tokens", "cost_usd")
		row := func(e probe.EngineResult) []string {
			st, market := e.Stats, ""
			if e.Market != nil {
				market = e.Market.String()
			}
			out := []string{e.Label, e.Kind, e.Model, e.Surface, market, e.Localisation, csvexport.Int(st.Probes), csvexport.Int(st.Failed)}
			out = append(out, rate(st.Presence)...)
			out = append(out, rate(st.Mention)...)
			out = append(out, rate(st.Citation)...)
			out = append(out, rate(st.SourcesReported)...)
			out = append(out, rateOrNone(st.SourceShare)...)
			return append(out, csvexport.Float(st.FirstPosition.Value), csvexport.Float(st.AveragePosition),
				csvexport.Float(st.ShareOfVoice.Value), csvexport.Int(st.InputTokens), csvexport.Int(st.OutputTokens),
				csvexport.Float(st.CostUSD))
		}
		for _, e := range bd.Engines {
			rows = append(rows, row(e))
		}
		for _, sf := range bd.Surfaces {
			if len(bd.Surfaces) > 1 {
				rows = append(rows, row(probe.EngineResult{Label: AllEngines + " of " + sf.Surface, Surface: sf.Surface, Stats: sf.Stats}))
			}
		}
		for _, m := range bd.Markets {
			rows = append(rows, row(probe.EngineResult{Label: AllEngines + " in " + m.Market.String(), Market: &m.Market, Stats: m.Stats}))
		}
		if bd.Overall != nil {
			rows = append(rows, row(probe.EngineResult{Label: AllEngines, Stats: *bd.Overall}))
		}
	case "cited_domains":
		header = []string{"domain", "answers_citing", "share_of_cited_sources", "this_domain"}
		if bd.Overall != nil {
			for _, c := range CitedDomains(domain, *bd.Overall) {
				share := ""
				if c.Share != nil {
					share = csvexport.Float(*c.Share)
				}
				rows = append(rows, []string{c.Domain, csvexport.Int(c.Count), share, csvexport.Bool(c.Own)})
			}
		}
	case "cited_pages":
		header = []string{"url", "answers_citing"}
		if bd.Overall != nil {
			for _, p := range bd.Overall.CitedPages {
				rows = append(rows, []string{p.URL, csvexport.Int(p.Count)})
			}
		}
	default:
		return nil, nil, false
	}
	return header, rows, true
}

// AnswerColumns are the columns of a scan's answers as CSV, the API's
// export and the dashboard's.
var AnswerColumns = []string{"seq", "engine", "kind", "surface", "market", "prompt_index", "prompt", "intent", "run", "absent", "mentioned",
	"position", "cited", "sources_reported", "sources", "citations", "queries", "competitors", "error", "error_category", "text"}

// AnswerRow is an answer's row under AnswerColumns, its sources,
// citations, queries and competitors each in one cell, a line each.
func AnswerRow(a client.ScanAnswer) []string {
	market := ""
	if a.Market != nil {
		market = a.Market.Language + "-" + a.Market.Country
	}
	return []string{csvexport.Int(a.Seq), a.Engine, a.Kind, a.Surface, market, csvexport.Int(a.Prompt.Index), a.Prompt.Text, a.Prompt.Intent,
		csvexport.Int(a.Run), csvexport.Bool(a.Absent), csvexport.Bool(a.Mentioned), csvexport.Int(a.Position), csvexport.Bool(a.Cited),
		csvexport.Bool(a.SourcesReported),
		lines(a.Sources, func(s client.AnswerSource) string { return s.URL }),
		lines(a.Citations, func(c client.AnswerCitation) string { return c.URL }),
		strings.Join(a.Queries, "\n"), strings.Join(a.Competitors, "\n"),
		csvexport.String(a.Error), csvexport.String(a.ErrorCategory), a.Text}
}

// lines is one cell of a list, an item a line.
func lines[T any](xs []T, f func(T) string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return strings.Join(out, "\n")
}

// ReadingView is a reading as the API shows it.
func ReadingView(rd store.Reading) client.VisibilityReading {
	v := client.VisibilityReading{Domain: rd.Domain, VisibilityScore: rd.VisibilityScore, Sentiment: rd.Sentiment,
		SentimentScore: rd.SentimentScore, MeasuredAt: rd.MeasuredAt, Source: rd.Source}
	if rd.ClientID != "" {
		v.ClientID = &rd.ClientID
	}
	if rd.FormulaVersion != 0 {
		v.FormulaVersion = &rd.FormulaVersion
	}
	return v
}

// ReadingColumns are the columns of readings as CSV, the API's export and
// the dashboard's.
var ReadingColumns = []string{"domain", "measured_at", "visibility_score", "sentiment", "sentiment_score", "source", "client_id", "formula_version", "market"}

// ReadingRow is a reading's row under ReadingColumns.
func ReadingRow(v client.VisibilityReading) []string {
	market := ""
	if v.Market != nil {
		market = v.Market.Language + "-" + v.Market.Country
	}
	return []string{v.Domain, csvexport.Time(v.MeasuredAt), csvexport.Int(v.VisibilityScore), v.Sentiment,
		csvexport.Float(v.SentimentScore), v.Source, csvexport.String(v.ClientID), csvexport.IntPtr(v.FormulaVersion), market}
}

// MarketReading is a completed scan's reading of one market: the score
// blended from the scan's readiness and its answers in that market (as
// the scan's own is from all of them), their sentiment; ok is false for a
// scan that did not ask the market.
func MarketReading(sc store.Scan, m probe.Market) (client.VisibilityReading, bool) {
	var res ScanResult
	var bd Breakdown
	if json.Unmarshal(sc.Result, &res) != nil || json.Unmarshal(res.Breakdown, &bd) != nil {
		return client.VisibilityReading{}, false
	}
	i := slices.IndexFunc(bd.Markets, func(r probe.MarketResult) bool { return r.Market == m })
	if i < 0 {
		return client.VisibilityReading{}, false
	}
	st := bd.Markets[i].Stats
	v := client.VisibilityReading{Domain: sc.Domain, VisibilityScore: Blend(res.ReadinessScore, st), Sentiment: st.Sentiment.Label,
		SentimentScore: st.Sentiment.Score, MeasuredAt: sc.FinishedAt, Source: "scan", Market: &client.Market{Country: m.Country, Language: m.Language}}
	if sc.ClientID != "" {
		v.ClientID = &sc.ClientID
	}
	if bd.FormulaVersion != 0 {
		v.FormulaVersion = &bd.FormulaVersion
	}
	return v, true
}
