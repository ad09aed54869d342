package content

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/content/analysis"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
)

// Steps of a request, in order; the step a processing request is at is
// shown by the API.
const (
	StepAnalyze = "analyze" // fetch the page (or take the content), run the rubric, draft from the page
	StepRewrite = "rewrite" // the AI engine rewrites the text; the rubric scores the rewrite
	StepDrafts  = "drafts"  // the AI engine drafts the FAQ and the llms.txt summary
	StepDone    = "done"
)

// Prices is the price list of the steps that are not AI engine calls, in
// micro-dollars. An engine call is priced at the engine's own prices per
// million input and output tokens.
type Prices struct {
	Fetch    int64 // one page fetched (charged only when a page came back)
	Analysis int64 // one run of the rubric, with the drafts from the page
}

// DefaultPrices: $0.001 a fetch, $0.002 an analysis.
var DefaultPrices = Prices{Fetch: 1_000, Analysis: 2_000}

// MaxEngineText bounds the text sent to the AI engine: a longer text is
// cut there (and the result says so), which also bounds a call's price.
const MaxEngineText = 24 << 10

// Result is a completed request's result, as the API shows it.
type Result struct {
	ScoreBefore   int              `json:"score_before"`
	ScoreAfter    int              `json:"score_after"`
	Analysis      analysis.Report  `json:"analysis"`
	AnalysisAfter *analysis.Report `json:"analysis_after"`
	OriginalText  string           `json:"original_text"`
	OptimizedText *string          `json:"optimized_text"`
	Diff          *string          `json:"diff"`
	Flags         []analysis.Flag  `json:"flags"`
	Drafts        analysis.Drafts  `json:"drafts"`
	Source        Source           `json:"source"`
	Engine        *string          `json:"engine"`
	Charges       []Charge         `json:"charges"`
	// BudgetExhausted: the budget did not cover StoppedBefore's worst
	// case, so the request completed without it.
	BudgetExhausted bool     `json:"budget_exhausted"`
	StoppedBefore   *string  `json:"stopped_before"`
	Notes           []string `json:"notes"`
}

// Source is what was analysed.
type Source struct {
	Kind      string  `json:"kind"` // "url" or "content"
	URL       *string `json:"url"`  // after redirects
	Status    int     `json:"status,omitempty"`
	Truncated bool    `json:"truncated"`
	Words     int     `json:"words"`
}

// Charge is one line of what a request spent.
type Charge struct {
	Step         string     `json:"step"`
	Item         string     `json:"item"` // "fetch", "analysis" or "engine"
	Amount       client.USD `json:"amount"`
	InputTokens  int        `json:"input_tokens,omitempty"`
	OutputTokens int        `json:"output_tokens,omitempty"`
}

// work is what the paid steps produced, kept with the request between
// steps so that a resumed request pays for none twice.
type work struct {
	Doc         *analysis.Doc `json:"doc"`
	Result      Result        `json:"result"`
	Rewritten   bool          `json:"rewritten"`
	Drafted     bool          `json:"drafted"`
	EngineError bool          `json:"engine_error"`
}

func (w *work) note(format string, args ...any) {
	w.Result.Notes = append(w.Result.Notes, fmt.Sprintf(format, args...))
}

func usd(micro int64) string { return "$" + client.USD(micro).String() }

// process runs a claimed request's remaining steps and ends it.
func (e *Engine) process(ctx context.Context, cr *store.ContentRequest) error {
	var w work
	if cr.Work != nil {
		if err := json.Unmarshal(cr.Work, &w); err != nil {
			return e.fail(ctx, cr, "its saved progress is unreadable")
		}
	}
	opts := analysis.Options{Domain: cr.Domain, Queries: cr.TargetQueries}
	if w.Doc == nil {
		done, err := e.analyze(ctx, cr, &w, opts)
		if err != nil || done {
			return err
		}
	}
	if cr.Type == client.TypeOptimize && e.AI != nil {
		if !w.Rewritten && !w.EngineError && w.Result.StoppedBefore == nil {
			if err := e.rewrite(ctx, cr, &w, opts); err != nil {
				return err
			}
		}
		if !w.Drafted && !w.EngineError && w.Result.StoppedBefore == nil {
			if err := e.draft(ctx, cr, &w, opts); err != nil {
				return err
			}
		}
	}
	return e.finish(ctx, cr, &w, opts)
}

// analyze is the first step: the page (or the content), the rubric and
// the drafts from the page. done: the request ended (it failed).
func (e *Engine) analyze(ctx context.Context, cr *store.ContentRequest, w *work, opts analysis.Options) (done bool, err error) {
	if cr.URL == "" && strings.TrimSpace(cr.Content) == "" {
		return true, e.fail(ctx, cr, "the request has neither a url nor content: there is nothing to analyse; nothing was spent")
	}
	first := e.Prices.Analysis
	if cr.URL != "" {
		first += e.Prices.Fetch
	}
	if first > cr.Budget-cr.Spent {
		return true, e.fail(ctx, cr, fmt.Sprintf("the budget (%s) does not cover the first step, %s (%s): nothing was spent",
			usd(cr.Budget-cr.Spent), firstStepName(cr), usd(first)))
	}
	if cr.URL != "" {
		if err := e.setStep(ctx, cr, StepAnalyze); err != nil {
			return false, err
		}
	}
	var d analysis.Doc
	var charges []Charge
	switch {
	case cr.URL != "":
		page, ferr := e.Fetcher.Fetch(ctx, cr.URL)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if ferr == nil && page.Status != http.StatusOK {
			ferr = fmt.Errorf("%s answered %d", page.URL, page.Status)
		}
		if ferr != nil {
			if cr.Content == "" {
				return true, e.fail(ctx, cr, fmt.Sprintf("fetching %s failed: %s; nothing was spent", cr.URL, netguard.Describe(ferr)))
			}
			w.note("Fetching %s failed (%s): the content given with the request was analysed instead.", cr.URL, netguard.Describe(ferr))
			d = analysis.ParseText("", cr.Content)
			w.Result.Source = Source{Kind: "content"}
			break
		}
		charges = append(charges, Charge{Step: StepAnalyze, Item: "fetch", Amount: client.USD(e.Prices.Fetch)})
		if page.HTML {
			d = analysis.ParseHTML(page.URL, page.Body)
		} else {
			d = analysis.ParseText(page.URL, string(page.Body))
		}
		w.Result.Source = Source{Kind: "url", URL: &page.URL, Status: page.Status, Truncated: page.Truncated}
		if page.Truncated {
			w.note("The page was cut at the fetch's size cap: the analysis covers its beginning only.")
		}
	default:
		d = analysis.ParseText("", cr.Content)
		w.Result.Source = Source{Kind: "content"}
	}
	charges = append(charges, Charge{Step: StepAnalyze, Item: "analysis", Amount: client.USD(e.Prices.Analysis)})
	report := analysis.Analyze(d, opts)
	w.Doc = &d
	w.Result.Source.Words = report.Words
	w.Result.Analysis = report
	w.Result.ScoreBefore, w.Result.ScoreAfter = report.Score, report.Score
	w.Result.OriginalText = d.Markdown()
	w.Result.Drafts = analysis.DraftFromPage(d, opts)
	w.Result.Charges = append(w.Result.Charges, charges...)
	if report.Words == 0 {
		w.note("The page has no text in its HTML (a page rendered by JavaScript shows AI crawlers nothing).")
	}
	var cost int64
	for _, c := range charges {
		cost += int64(c.Amount)
	}
	return false, e.save(ctx, cr, StepAnalyze, cost, w)
}

func firstStepName(cr *store.ContentRequest) string {
	if cr.URL != "" {
		return "fetching and analysing the page"
	}
	return "analysing the content"
}

// save charges a step with the work so far.
func (e *Engine) save(ctx context.Context, cr *store.ContentRequest, step string, cost int64, w *work) error {
	b, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("content: save work: %w", err)
	}
	if err := e.charge(ctx, cr, step, cost, b); err != nil {
		return err
	}
	e.Metrics.Spent(cost)
	return nil
}

// tokenBound is an upper bound of a text's tokens: tokenizers of the
// byte-pair kind make at least one byte a token, and a message's framing
// takes a few more.
func tokenBound(s string) int { return len(s) + 8 }

// engineCost prices tokens at the engine's prices (dollars per million
// tokens are micro-dollars per token), rounded up to the micro-dollar.
func (e *Engine) engineCost(in, out int) int64 {
	return int64(math.Ceil(float64(in)*e.AI.InputPricePerMTok + float64(out)*e.AI.OutputPricePerMTok - 1e-9))
}

// ask makes one engine call within its worst case: it returns ok false,
// having asked nothing, when the remaining budget does not cover worst +
// extra (a fixed charge that follows the call). The charge is what the
// engine reports at its prices, never above the worst case checked.
func (e *Engine) ask(ctx context.Context, cr *store.ContentRequest, w *work, step string, r probe.Request, extra int64) (probe.Answer, int64, bool, error) {
	r.MaxTokens = e.MaxTokens
	inBound := tokenBound(r.System) + tokenBound(r.Prompt)
	worst := e.engineCost(inBound, r.MaxTokens)
	if worst+extra > cr.Budget-cr.Spent {
		w.Result.BudgetExhausted = true
		w.Result.StoppedBefore = &step
		w.note("The budget left (%s) does not cover the %s step's worst case (%s): the request completed without it.",
			usd(cr.Budget-cr.Spent), step, usd(worst+extra))
		return probe.Answer{}, 0, false, nil
	}
	if err := e.setStep(ctx, cr, step); err != nil {
		return probe.Answer{}, 0, false, err
	}
	a, err := e.Client.Complete(ctx, *e.AI, r)
	if ctx.Err() != nil {
		return a, 0, false, ctx.Err()
	}
	if err != nil {
		// The error names the operator's engine (its address, its answer):
		// the log has it, the customer's result only what it means to them.
		e.Log.Warn("content: AI engine call failed", "request", cr.ID, "step", step, "engine", e.AI.Label, "err", err)
		w.EngineError = true
		w.note("The AI engine %s failed at the %s step: nothing was charged for it, and the result holds what was done before.",
			e.AI.Label, step)
		return a, 0, false, nil
	}
	in, out := a.InputTokens, min(a.OutputTokens, r.MaxTokens)
	if in == 0 && out == 0 {
		// An engine that reports no usage is charged the bounds.
		in, out = inBound, min(tokenBound(a.Text), r.MaxTokens)
	}
	cost := min(e.engineCost(in, out), worst)
	w.Result.Charges = append(w.Result.Charges, Charge{Step: step, Item: "engine", Amount: client.USD(cost), InputTokens: in, OutputTokens: out})
	return a, cost, true, nil
}

const rules = `Rules you must follow:
- Never invent facts, numbers, statistics, dates, names, quotations or sources: use only what the original text says.
- Where a statistic, a quotation or a source would help and the original has none, write a visible placeholder for the author instead: [STATISTIC NEEDED: what to measure], [QUOTE NEEDED: whom to quote], [SOURCE NEEDED: what to cite].
- Keep the links of the original text.`

// rewrite asks the engine for the text rewritten toward the target
// queries, checks it against the original, and scores it.
func (e *Engine) rewrite(ctx context.Context, cr *store.ContentRequest, w *work, opts analysis.Options) error {
	text, rest := engineText(w.Result.OriginalText)
	var fixes []string
	for _, f := range w.Result.Analysis.Findings {
		fixes = append(fixes, "- "+f.Title+": "+f.Fix)
	}
	r := probe.Request{Temperature: 0.2,
		System: "You rewrite web content so that AI assistants can find, understand and quote it accurately.\n" + rules + `
- Open with a direct answer of 40 to 60 words; start each section with its answer; make every paragraph understandable on its own.
- Use subheadings worded like the target queries, and end with a short FAQ section answered from the text.
- Do not repeat keywords unnaturally.
Answer with the rewritten text in Markdown and nothing else.`,
		Prompt: "Target queries:\n" + bullets(opts.Queries) + "\n\nWhat to fix:\n" + strings.Join(fixes, "\n") +
			"\n\nOriginal text (Markdown):\n\n" + text}
	a, cost, ok, err := e.ask(ctx, cr, w, StepRewrite, r, e.Prices.Analysis)
	if err != nil || !ok {
		return err
	}
	out, flags := analysis.NewChecker(w.Result.OriginalText, opts.Queries).Check(stripFence(a.Text))
	if rest != "" {
		// The page as it would be: its rewritten beginning, then the rest
		// as it was, so that the diff and score_after cover the whole page.
		out = strings.TrimRight(out, "\n") + "\n\n" + strings.TrimLeft(rest, "\n")
		w.note("%s", noteCut)
	}
	w.Rewritten = true
	w.Result.OptimizedText = &out
	w.Result.Flags = append(w.Result.Flags, flags...)
	w.Result.Charges = append(w.Result.Charges, Charge{Step: StepRewrite, Item: "analysis", Amount: client.USD(e.Prices.Analysis)})
	e.scoreAfter(w, opts)
	return e.save(ctx, cr, StepRewrite, cost+e.Prices.Analysis, w)
}

// draft asks the engine for the FAQ and the llms.txt summary, checked
// against the original like the rewrite.
func (e *Engine) draft(ctx context.Context, cr *store.ContentRequest, w *work, opts analysis.Options) error {
	text := w.Result.OriginalText
	if w.Result.OptimizedText != nil {
		text = *w.Result.OptimizedText
	}
	text, _ = engineText(text)
	r := probe.Request{Temperature: 0.2,
		System: "You draft structured data for a web page from its text.\n" + rules + `
Answer with JSON only, in this shape: {"faq":[{"question":"...","answer":"..."}],"summary":"..."}
- faq: up to 6 questions a reader asks that the text answers (the target queries first), each answered in one to three sentences taken from the text.
- summary: one sentence that says what the page offers, for the site's llms.txt.`,
		Prompt: "Target queries:\n" + bullets(opts.Queries) + "\n\nText:\n\n" + text}
	a, cost, ok, err := e.ask(ctx, cr, w, StepDrafts, r, 0)
	if err != nil || !ok {
		return err
	}
	w.Drafted = true
	var got struct {
		FAQ     []analysis.QA `json:"faq"`
		Summary string        `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stripFence(a.Text)), &got); err != nil || (len(got.FAQ) == 0 && got.Summary == "") {
		w.note("The AI engine's drafts were not the JSON asked for: the drafts from the page are kept.")
	} else {
		faq := []analysis.QA{}
		checker := analysis.NewChecker(w.Result.OriginalText, opts.Queries)
		for _, qa := range got.FAQ {
			q, f1 := checker.Check(strings.TrimSpace(qa.Question))
			ans, f2 := checker.Check(strings.TrimSpace(qa.Answer))
			if q == "" || ans == "" {
				continue
			}
			w.Result.Flags = append(append(w.Result.Flags, f1...), f2...)
			faq = append(faq, analysis.QA{Question: q, Answer: ans})
		}
		if len(faq) > analysis.MaxFAQ {
			faq = faq[:analysis.MaxFAQ]
		}
		summary, f := checker.Check(strings.TrimSpace(got.Summary))
		w.Result.Flags = append(w.Result.Flags, f...)
		w.Result.Drafts = analysis.Drafts{FAQ: faq, FAQJSONLD: analysis.FAQJSONLD(faq),
			LLMsTxtLine: analysis.LLMsTxtEntry(*w.Doc, opts.Domain, summary), Source: "engine"}
		if w.Rewritten {
			e.scoreAfter(w, opts)
		}
	}
	return e.save(ctx, cr, StepDrafts, cost, w)
}

// scoreAfter applies the rubric to the optimized text, with the page's
// JSON-LD and the drafted FAQPage: the page as it would be with the
// changes made.
func (e *Engine) scoreAfter(w *work, opts analysis.Options) {
	d := analysis.ParseText(w.Doc.URL, *w.Result.OptimizedText)
	d.Title, d.Description = w.Doc.Title, w.Doc.Description
	d.JSONLDTypes = slices.Clone(w.Doc.JSONLDTypes)
	if w.Result.Drafts.FAQJSONLD != nil && !slices.Contains(d.JSONLDTypes, "FAQPage") {
		d.JSONLDTypes = append(d.JSONLDTypes, "FAQPage")
	}
	after := analysis.Analyze(d, opts)
	w.Result.AnalysisAfter = &after
	w.Result.ScoreAfter = after.Score
}

// finish ends the request with its result.
func (e *Engine) finish(ctx context.Context, cr *store.ContentRequest, w *work, opts analysis.Options) error {
	res := w.Result
	if e.AI != nil && cr.Type == client.TypeOptimize {
		res.Engine = &e.AI.Label
	} else if cr.Type == client.TypeOptimize {
		res.Notes = append(res.Notes, "No AI engine is configured: the result is the analysis, its fixes and the drafts from the page.")
	}
	if res.OptimizedText != nil {
		d := analysis.Diff(res.OriginalText, *res.OptimizedText)
		res.Diff = &d
	}
	if res.Flags == nil {
		res.Flags = []analysis.Flag{}
	}
	if res.Notes == nil {
		res.Notes = []string{}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("content: result: %w", err)
	}
	return e.complete(ctx, cr, b, res.ScoreBefore, res.ScoreAfter)
}

// engineText is a text as sent to the engine, cut at MaxEngineText on a
// line boundary, and the rest the engine is not given.
func engineText(t string) (string, string) {
	if len(t) <= MaxEngineText {
		return t, ""
	}
	cut := strings.LastIndexByte(t[:MaxEngineText], '\n')
	if cut <= 0 {
		cut = MaxEngineText
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
	}
	return t[:cut], t[cut:]
}

var noteCut = fmt.Sprintf("The text is longer than %d KB: the AI engine rewrote its beginning, and the optimized text keeps the rest as it was.", MaxEngineText>>10)

func bullets(qs []string) string {
	if len(qs) == 0 {
		return "(none given: use the questions the text answers)"
	}
	return "- " + strings.Join(qs, "\n- ")
}

// stripFence removes a Markdown code fence around a whole answer.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
}
