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
	// Market is the market the prompt was asked in (zero: none).
	Market Market
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
	// Presence: answers in which the surface showed an AI answer at all
	// (of the answers, failures left out). A Google search shows an AI
	// Overview for some prompts only; an answer without one is an answer
	// that names and cites nothing, counted in every rate below. Every
	// answer of a model or a search API is shown.
	Presence Rate `json:"overview_presence"`
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
	Label   string `json:"label"`
	Kind    string `json:"kind"`
	Model   string `json:"model"`
	Surface string `json:"surface"`
	// Market is the market of these answers (nil: the scan asked none),
	// and Localisation how the engine asked it (LocaliseNative,
	// LocaliseCountry or LocalisePrompt).
	Market       *Market  `json:"market,omitempty"`
	Localisation string   `json:"localisation,omitempty"`
	Stats                 // the engine's answers (in the market)
	Errors       []string `json:"errors,omitempty"` // the first few failures
	MaxInFlight  int      `json:"max_in_flight"`
}

// SurfaceResult is the answers of the engines of one surface.
type SurfaceResult struct {
	Surface string `json:"surface"`
	Stats
}

// MarketResult is the answers of every engine in one market, combined
// over its surfaces as Overall is (OverallOf).
type MarketResult struct {
	Market Market `json:"market"`
	Stats
}

// Result is a whole run: a result per engine and market, the answers of
// each surface and of each market pooled, and Overall (OverallOf).
type Result struct {
	Prompts  []Prompt        `json:"prompts"`
	Runs     int             `json:"runs"`
	Engines  []EngineResult  `json:"engines"`
	Surfaces []SurfaceResult `json:"surfaces"`
	Markets  []MarketResult  `json:"markets,omitempty"`
	Overall  Stats           `json:"overall"`
	Probes   []Probe         `json:"-"`
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
	markets := s.Markets
	if len(markets) == 0 {
		markets = []Market{{}}
	}
	probes := make([][]Probe, len(p.Engines))
	costs := make([][]float64, len(p.Engines))
	peaks := make([]int, len(p.Engines))
	var engines sync.WaitGroup
	for ei, e := range p.Engines {
		n := len(markets) * len(res.Prompts) * runs
		probes[ei], costs[ei] = make([]Probe, n), make([]float64, n)
		engines.Go(func() {
			peaks[ei] = p.runEngine(ctx, s, e, markets, res.Prompts, runs, probes[ei], costs[ei])
		})
	}
	engines.Wait()
	var all []Probe
	var allCosts []float64
	surfaces := map[string]*group{}
	type marketSurface struct {
		m Market
		s string
	}
	byMarket := map[marketSurface]*group{}
	per := len(res.Prompts) * runs
	for ei, e := range p.Engines {
		for mi, m := range markets {
			ps, cs := probes[ei][mi*per:(mi+1)*per], costs[ei][mi*per:(mi+1)*per]
			er := EngineResult{Label: e.Label, Kind: e.kind(), Model: e.Model, Surface: e.Surface(), Stats: measure(s, ps, cs), MaxInFlight: peaks[ei]}
			if !m.IsZero() {
				er.Market, er.Localisation = &m, e.Localisation()
			}
			for _, pr := range ps {
				if pr.Failure == nil {
					continue
				}
				if len(er.Errors) == 0 && p.Log != nil {
					p.Log.Warn("probe: an engine failed", "engine", e.Label, "market", m.String(), "domain", s.Domain, "failed", er.Failed, "of", er.Probes,
						"category", pr.Failure.Category, "status", pr.Failure.Status, "err", pr.Failure.Detail)
				}
				if len(er.Errors) < 3 {
					er.Errors = append(er.Errors, pr.Err)
				}
			}
			res.Engines = append(res.Engines, er)
			surfaces[er.Surface] = surfaces[er.Surface].add(ps, cs)
			byMarket[marketSurface{m, er.Surface}] = byMarket[marketSurface{m, er.Surface}].add(ps, cs)
		}
		all, allCosts = append(all, probes[ei]...), append(allCosts, costs[ei]...)
	}
	var perSurface []Stats
	for _, sf := range Surfaces {
		if g := surfaces[sf]; g != nil {
			st := measure(s, g.probes, g.costs)
			res.Surfaces = append(res.Surfaces, SurfaceResult{Surface: sf, Stats: st})
			perSurface = append(perSurface, st)
		}
	}
	if len(markets) > 1 || !markets[0].IsZero() {
		for _, m := range markets {
			// A market's figures follow Overall's rule over its surfaces.
			all := &group{}
			var inMarket []Stats
			for _, sf := range Surfaces {
				if g := byMarket[marketSurface{m, sf}]; g != nil {
					all.add(g.probes, g.costs)
					inMarket = append(inMarket, measure(s, g.probes, g.costs))
				}
			}
			res.Markets = append(res.Markets, MarketResult{Market: m, Stats: OverallOf(measure(s, all.probes, all.costs), inMarket)})
		}
	}
	res.Overall = OverallOf(measure(s, all, allCosts), perSurface)
	res.Probes = all
	return res
}

// group is probes and their costs gathered across engines.
type group struct {
	probes []Probe
	costs  []float64
}

func (g *group) add(ps []Probe, cs []float64) *group {
	if g == nil {
		g = &group{}
	}
	g.probes, g.costs = append(g.probes, ps...), append(g.costs, cs...)
	return g
}

// OverallOf is the figures of all engines: pooled, every answer of every
// engine counted alike, when they answer on one surface; on several, each
// rate the mean of the surfaces' rates, each surface weighing the same
// however many engines or answers it has (a chat model asked three times
// a prompt does not outweigh the page people see, asked once), its
// interval the mean of theirs (no narrower than the interval of a mean of
// independent rates), its hits and of the answers it rests on; so is the
// position score. The other figures (average position, sentiment, cited
// domains and pages, tokens and cost) stay pooled.
func OverallOf(pooled Stats, surfaces []Stats) Stats {
	if len(surfaces) < 2 {
		return pooled
	}
	mean := func(rate func(*Stats) *Rate) {
		out := rate(&pooled)
		*out = Rate{}
		k := 0
		for i := range surfaces {
			r := rate(&surfaces[i])
			if r == nil {
				continue
			}
			out.Value += r.Value
			out.Interval.Low += r.Interval.Low
			out.Interval.High += r.Interval.High
			out.Hits += r.Hits
			out.Of += r.Of
			k++
		}
		if k > 0 {
			out.Value, out.Interval.Low, out.Interval.High = out.Value/float64(k), out.Interval.Low/float64(k), out.Interval.High/float64(k)
		}
	}
	mean(func(st *Stats) *Rate { return &st.Mention })
	mean(func(st *Stats) *Rate { return &st.Citation })
	mean(func(st *Stats) *Rate { return &st.FirstPosition })
	mean(func(st *Stats) *Rate { return &st.ShareOfVoice })
	mean(func(st *Stats) *Rate { return &st.SourcesReported })
	mean(func(st *Stats) *Rate { return &st.Presence })
	pooled.PositionScore = 0
	for _, st := range surfaces {
		pooled.PositionScore += st.PositionScore / float64(len(surfaces))
	}
	pooled.PositionScore = round(pooled.PositionScore, 4)
	return pooled
}

// runEngine asks one engine every prompt runs times, at most its
// Concurrency at once, and returns the most it had in flight.
func (p *Prober) runEngine(ctx context.Context, s Subject, e Engine, markets []Market, prompts []Prompt, runs int, probes []Probe, costs []float64) int {
	conc := e.Concurrency
	if conc <= 0 {
		conc = 4
	}
	sem := make(chan struct{}, conc)
	var inFlight, peak atomic.Int64
	var wg sync.WaitGroup
	per := len(prompts) * runs
	for j := range probes {
		pr := Probe{Engine: e.Label, Market: markets[j/per], Prompt: j % per / runs, Run: j % runs}
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
			a, err := p.Client.Complete(ctx, e, Request{Prompt: prompts[pr.Prompt].Text, Temperature: 0.7, Market: pr.Market})
			inFlight.Add(-1)
			// The next request goes out while this answer is read.
			<-sem
			if err != nil {
				pr.fail(FailureOf(err))
				costs[j] = pr.Failure.CostUSD // what the provider billed all the same
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
	var ok, shown, mentioned, cited, first, brandVoice, allVoice, reported, ownSources, allSources int
	var posSum, invSum float64
	var sents []float64
	domains, pages := map[string]int{}, map[string]int{}
	for i, p := range probes {
		// A failure may have been billed (Failure.CostUSD).
		st.CostUSD += costs[i]
		if p.Err != "" {
			st.Failed++
			continue
		}
		ok++
		if !p.Answer.Absent {
			shown++
		}
		st.InputTokens += p.Answer.InputTokens
		st.OutputTokens += p.Answer.OutputTokens
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
	st.Presence = NewRate(shown, ok)
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
