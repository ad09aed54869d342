package visibility

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
)

// Weights of the visibility score (docs/visibility.md gives the reasons):
// what AI answers say weighs three quarters, what AI crawlers can read
// one quarter.
const (
	WeightReadiness    = 0.25
	WeightMention      = 0.30
	WeightCitation     = 0.15
	WeightPosition     = 0.15
	WeightShareOfVoice = 0.15
)

// FormulaVersion is the version of the score's formula a reading was
// made with (docs/visibility.md, "Formula versions"): 1 counted an answer
// as citing the domain by the URLs in its text alone; 2 also by the
// citations and sources the engine reports, with the same weights; 3
// takes the engines' figures as the mean of their surfaces' where they
// answer on more than one (probe.OverallOf), as 2 where on one.
const FormulaVersion = 3

// citationFormula is the formula of an engine's citation rate under a
// score's formula version: version 3 changed only how engines are
// combined, so its engines' rates are version 2's.
func citationFormula(version int) int {
	if version == 3 {
		return 2
	}
	return version
}

// Bases of a reading.
const (
	BasisEngines   = "readiness_and_engines"
	BasisReadiness = "readiness_only"
)

// ReadinessFunc audits what AI crawlers can read of a domain: a score
// 0-100 and the report behind it.
type ReadinessFunc func(ctx context.Context, domain string) (score int, report any, err error)

// EngineScanner is the real Scanner: the readiness audit, then the
// prompt set against every configured engine, blended into one score.
type EngineScanner struct {
	Readiness ReadinessFunc
	// Prober asks the engines; nil or without engines, a scan is the
	// readiness audit alone.
	Prober *probe.Prober
}

// Breakdown is what a scan's reading stands on, kept with the scan and
// shown by GET /v1/visibility.
type Breakdown struct {
	Basis          string `json:"basis"`
	FormulaVersion int    `json:"formula_version"`
	// Components are the blended parts, each 0-100, and Weights their
	// weights: visibility_score = Σ weight × component.
	Components map[string]float64 `json:"components"`
	Weights    map[string]float64 `json:"weights"`
	// SentimentConfidence is 0 without engines: no figure is invented.
	SentimentConfidence float64              `json:"sentiment_confidence"`
	Readiness           any                  `json:"readiness"`
	Prompts             []probe.Prompt       `json:"prompts,omitempty"`
	Runs                int                  `json:"runs,omitempty"`
	Overall             *probe.Stats         `json:"overall,omitempty"`
	Engines             []probe.EngineResult `json:"engines,omitempty"`
	// Surfaces are the figures of each surface's engines, and Markets of
	// each market's answers (a scan that asked markets).
	Surfaces []probe.SurfaceResult `json:"surfaces,omitempty"`
	Markets  []probe.MarketResult  `json:"markets,omitempty"`
}

// ErrEnginesFailed is a scan whose every probe failed: it is retried
// rather than recorded as a reading of nothing.
var ErrEnginesFailed = errors.New("every engine probe failed")

// Scan audits the domain and probes the engines.
func (s *EngineScanner) Scan(ctx context.Context, d store.MonitoredDomain) (Outcome, error) {
	score, report, err := s.Readiness(ctx, d.Domain)
	if err != nil {
		return Outcome{}, err
	}
	b := Breakdown{Basis: BasisReadiness, FormulaVersion: FormulaVersion, Readiness: report,
		Components: map[string]float64{"readiness": float64(score)}, Weights: map[string]float64{"readiness": 1}}
	out := Outcome{VisibilityScore: score, ReadinessScore: score, Sentiment: "neutral", FormulaVersion: FormulaVersion}
	if s.Prober != nil && len(s.Prober.Engines) > 0 {
		res := s.Prober.Run(ctx, subject(d))
		if err := ctx.Err(); err != nil {
			return Outcome{}, err
		}
		ov := res.Overall
		if ov.Probes > 0 && ov.Failed == ov.Probes {
			msg := ErrEnginesFailed.Error()
			for _, e := range res.Engines {
				if len(e.Errors) > 0 {
					msg += "; " + e.Label + ": " + e.Errors[0]
				}
			}
			return Outcome{}, errors.New(msg)
		}
		b.Basis, b.Prompts, b.Runs, b.Overall, b.Engines = BasisEngines, res.Prompts, res.Runs, &ov, res.Engines
		b.Surfaces, b.Markets = res.Surfaces, res.Markets
		out.PromptSet, out.Answers = NewPromptSet(res.Prompts), answersOf(res, s.Prober.Engines)
		b.Components = map[string]float64{"readiness": float64(score), "mention": 100 * ov.Mention.Value,
			"citation": 100 * ov.Citation.Value, "position": 100 * ov.PositionScore, "share_of_voice": 100 * ov.ShareOfVoice.Value}
		b.Weights = map[string]float64{"readiness": WeightReadiness, "mention": WeightMention, "citation": WeightCitation,
			"position": WeightPosition, "share_of_voice": WeightShareOfVoice}
		out.VisibilityScore = Blend(score, ov)
		out.Sentiment, out.SentimentScore = ov.Sentiment.Label, ov.Sentiment.Score
		b.SentimentConfidence = ov.Sentiment.Confidence
	}
	for k, v := range b.Components {
		b.Components[k] = math.Round(v*100) / 100
	}
	out.Breakdown, _ = json.Marshal(b)
	return out, nil
}

// Blend is the visibility score of a readiness score and the engines'
// stats, rounded to the nearest integer, halves up (the epsilon keeps a
// sum that is a half in exact arithmetic from rounding down in floats).
func Blend(readiness int, st probe.Stats) int {
	v := WeightReadiness*float64(readiness) + 100*(WeightMention*st.Mention.Value+WeightCitation*st.Citation.Value+
		WeightPosition*st.PositionScore+WeightShareOfVoice*st.ShareOfVoice.Value)
	return min(100, max(0, int(math.Round(v+1e-9))))
}
