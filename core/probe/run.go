package probe

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Prober runs a subject's prompt set against every engine.
type Prober struct {
	Client  *Client
	Engines []Engine
	// Runs is how many times each prompt is asked of each engine
	// (default 3): answers vary, and rates need more than one.
	Runs int
	// MaxPrompts caps the prompt set's generated part: they fill it up
	// to MaxPrompts after the owner's own (default DefaultMaxPrompts).
	MaxPrompts int
	// Log is told, for the operator, what each engine said of its first
	// failure of a run (tenants are told its category and status).
	Log *slog.Logger
}

// Probe is one answer (or failure) of the run.
type Probe struct {
	Engine string
	Prompt int // index in the prompt set
	Run    int
	// Answer is what the engine answered, as read; Finding, what it says
	// of the subject.
	Answer  Answer
	Finding Finding
	// Failure is why the engine gave no answer, nil when it did; Err is
	// what tenants read of it (Failure.Public), "" when it answered.
	Failure *Failure
	Err     string
}

// Stats are the measures of a set of answers.
type Stats struct {
	Probes int `json:"probes"`
	Failed int `json:"failed"`
	// Mention: answers that name the brand (its names, aliases or domain).
	Mention Rate `json:"mention_rate"`
	// Citation: answers that cite the domain: a citation or source on the
	// domain or a subdomain, or such a URL in the text. Of an engine that
	// reports no sources, only the URLs in its text count.
	Citation Rate `json:"citation_rate"`
	// SourcesReported: answers whose engine reported its sources (it
	// searched and said what it read).
	SourcesReported Rate `json:"sources_reported"`
	// SourceShare: the domain's share of the cited sources, one per
	// distinct source domain per answer (the domain's subdomains its
	// own), over the answers that reported sources; nil when they
	// reported no source (an engine without search).
	SourceShare *Rate `json:"source_share"`
	// CitedDomains are the source domains cited most (one per answer
	// each), most first, ties by name, at most MaxCitedDomains.
	CitedDomains []DomainCount `json:"cited_domains"`
	// CitedPages are the domain's own pages cited (one per answer each),
	// most first, ties by URL.
	CitedPages []PageCount `json:"cited_pages"`
	// FirstPosition: answers that name the brand before any competitor.
	FirstPosition Rate `json:"first_position_rate"`
	// AveragePosition is the brand's mean rank among the brands an answer
	// names, over the answers that name it (0: never named).
	AveragePosition float64 `json:"average_position"`
	// PositionScore is the mean of 1/rank over those answers, 0 to 1.
	PositionScore float64 `json:"position_score"`
	// ShareOfVoice: the brand's share of the brand mentions (the brand's
	// and each competitor's, one per answer).
	ShareOfVoice Rate           `json:"share_of_voice"`
	Competitors  map[string]int `json:"competitor_mentions"`
	Sentiment    Sentiment      `json:"sentiment"`
	InputTokens  int            `json:"input_tokens"`
	OutputTokens int            `json:"output_tokens"`
	CostUSD      float64        `json:"cost_usd"`
}

// Sentiment is the tone of the sentences that mention the brand.
type Sentiment struct {
	// Score is the mean VADER compound of the sentences, -1 to 1.
	Score float64 `json:"score"`
	// Label: positive (mean ≥ 0.05), negative (≤ -0.05), mixed (at least a
	// quarter of the sentences each way), else neutral.
	Label     string `json:"label"`
	Sentences int    `json:"sentences"`
	Positive  int    `json:"positive"`
	Negative  int    `json:"negative"`
	// Confidence grows with the sentences read: n/(n+5), 0 with none.
	Confidence float64 `json:"confidence"`
}

// MaxCitedDomains bounds Stats.CitedDomains.
const MaxCitedDomains = 20

// DomainCount is a source domain and the answers that cite it.
type DomainCount struct {
	Domain string `json:"domain"`
	Count  int    `json:"count"`
}

// PageCount is a page and the answers that cite it.
type PageCount struct {
	URL   string `json:"url"`
	Count int    `json:"count"`
}

// EngineResult is one engine's part of a run.
type EngineResult struct {
	Label       string   `json:"label"`
	Kind        string   `json:"kind"`
	Model       string   `json:"model"`
	Stats                // the engine's answers
	Errors      []string `json:"errors,omitempty"` // the first few failures
	MaxInFlight int      `json:"max_in_flight"`
}

// Result is a whole run.
type Result struct {
	Prompts []Prompt       `json:"prompts"`
	Runs    int            `json:"runs"`
	Engines []EngineResult `json:"engines"`
	Overall Stats          `json:"overall"`
	Probes  []Probe        `json:"-"`
}

// Run asks every engine every prompt Runs times, each engine with at most
// its Concurrency requests in flight, all engines at once.
func (p *Prober) Run(ctx context.Context, s Subject) Result {
	runs, maxPrompts := p.Runs, p.MaxPrompts
	if runs <= 0 {
		runs = 3
	}
	if maxPrompts <= 0 {
		maxPrompts = DefaultMaxPrompts
	}
	res := Result{Prompts: Prompts(s, maxPrompts), Runs: runs}
	probes := make([][]Probe, len(p.Engines))
	costs := make([][]float64, len(p.Engines))
	peaks := make([]int, len(p.Engines))
	var engines sync.WaitGroup
	for ei, e := range p.Engines {
		n := len(res.Prompts) * runs
		probes[ei], costs[ei] = make([]Probe, n), make([]float64, n)
		engines.Go(func() {
			peaks[ei] = p.runEngine(ctx, s, e, res.Prompts, runs, probes[ei], costs[ei])
		})
	}
	engines.Wait()
	var all []Probe
	var allCosts []float64
	for ei, e := range p.Engines {
		er := EngineResult{Label: e.Label, Kind: e.kind(), Model: e.Model, Stats: measure(s, probes[ei], costs[ei]), MaxInFlight: peaks[ei]}
		for _, pr := range probes[ei] {
			if pr.Failure == nil {
				continue
			}
			if len(er.Errors) == 0 && p.Log != nil {
				p.Log.Warn("probe: an engine failed", "engine", e.Label, "domain", s.Domain, "failed", er.Failed, "of", er.Probes,
					"category", pr.Failure.Category, "status", pr.Failure.Status, "err", pr.Failure.Detail)
			}
			if len(er.Errors) < 3 {
				er.Errors = append(er.Errors, pr.Err)
			}
		}
		res.Engines = append(res.Engines, er)
		all, allCosts = append(all, probes[ei]...), append(allCosts, costs[ei]...)
	}
	res.Overall = measure(s, all, allCosts)
	res.Probes = all
	return res
}

// runEngine asks one engine every prompt runs times, at most its
// Concurrency at once, and returns the most it had in flight.
func (p *Prober) runEngine(ctx context.Context, s Subject, e Engine, prompts []Prompt, runs int, probes []Probe, costs []float64) int {
	conc := e.Concurrency
	if conc <= 0 {
		conc = 4
	}
	sem := make(chan struct{}, conc)
	var inFlight, peak atomic.Int64
	var wg sync.WaitGroup
	for j := range probes {
		pr := Probe{Engine: e.Label, Prompt: j / runs, Run: j % runs}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			pr.fail(&Failure{Category: FailTimeout, Detail: ctx.Err().Error()})
			probes[j] = pr
			continue
		}
		wg.Go(func() {
			now := inFlight.Add(1)
			for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
			}
			a, err := p.Client.Ask(ctx, e, prompts[pr.Prompt].Text)
			inFlight.Add(-1)
			// The next request goes out while this answer is read.
			<-sem
			if err != nil {
				pr.fail(FailureOf(err))
			} else {
				pr.Answer, pr.Finding = a, Analyze(s, a)
				costs[j] = e.Cost(a)
			}
			probes[j] = pr
		})
	}
	wg.Wait()
	return int(peak.Load())
}

// fail marks the probe failed.
func (pr *Probe) fail(f *Failure) { pr.Failure, pr.Err = f, f.Public() }

// measure computes the stats of a set of probes of the subject.
func measure(s Subject, probes []Probe, costs []float64) Stats {
	st := Stats{Probes: len(probes), Competitors: map[string]int{}}
	var ok, mentioned, cited, first, brandVoice, allVoice, reported, ownSources, allSources int
	var posSum, invSum float64
	var sents []float64
	domains, pages := map[string]int{}, map[string]int{}
	for i, p := range probes {
		if p.Err != "" {
			st.Failed++
			continue
		}
		ok++
		st.InputTokens += p.Answer.InputTokens
		st.OutputTokens += p.Answer.OutputTokens
		st.CostUSD += costs[i]
		f := p.Finding
		allVoice += len(f.Competitors)
		for _, c := range f.Competitors {
			st.Competitors[c]++
		}
		if f.Cited {
			cited++
		}
		for _, u := range f.CitedURLs {
			pages[u]++
		}
		if f.SourcesReported {
			reported++
			allSources += len(f.SourceDomains)
			for _, d := range f.SourceDomains {
				domains[d]++
				if onDomain(d, s.Domain) {
					ownSources++
				}
			}
		}
		if !f.Mentioned {
			continue
		}
		mentioned++
		brandVoice++
		allVoice++
		posSum += float64(f.Position)
		invSum += 1 / float64(f.Position)
		if f.Position == 1 {
			first++
		}
		for _, sn := range f.Sentences {
			sents = append(sents, sn.Compound)
		}
	}
	st.Mention, st.Citation, st.FirstPosition = NewRate(mentioned, ok), NewRate(cited, ok), NewRate(first, ok)
	st.ShareOfVoice = NewRate(brandVoice, allVoice)
	st.SourcesReported = NewRate(reported, ok)
	if allSources > 0 {
		share := NewRate(ownSources, allSources)
		st.SourceShare = &share
	}
	st.CitedDomains, st.CitedPages = []DomainCount{}, []PageCount{}
	for _, d := range byCount(domains) {
		if len(st.CitedDomains) == MaxCitedDomains {
			break
		}
		st.CitedDomains = append(st.CitedDomains, DomainCount{d, domains[d]})
	}
	for _, u := range byCount(pages) {
		st.CitedPages = append(st.CitedPages, PageCount{u, pages[u]})
	}
	if mentioned > 0 {
		st.AveragePosition = round(posSum/float64(mentioned), 3)
		st.PositionScore = round(invSum/float64(mentioned), 4)
	}
	st.Sentiment = sentiment(sents)
	st.CostUSD = round(st.CostUSD, 6)
	return st
}

func sentiment(compounds []float64) Sentiment {
	n := len(compounds)
	s := Sentiment{Sentences: n, Label: "neutral"}
	if n == 0 {
		return s
	}
	var sum float64
	for _, c := range compounds {
		sum += c
		switch {
		case c >= 0.05:
			s.Positive++
		case c <= -0.05:
			s.Negative++
		}
	}
	s.Score = round(sum/float64(n), 4)
	switch {
	case n >= 2 && 4*s.Positive >= n && 4*s.Negative >= n:
		s.Label = "mixed"
	case s.Score >= 0.05:
		s.Label = "positive"
	case s.Score <= -0.05:
		s.Label = "negative"
	}
	s.Confidence = round(float64(n)/float64(n+5), 4)
	return s
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// TopCompetitors are the competitors named most, most first.
func (st Stats) TopCompetitors() []string { return byCount(st.Competitors) }

// byCount are the keys of counts, the highest count first, ties by key.
func byCount(counts map[string]int) []string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	return keys
}
