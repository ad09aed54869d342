package content_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/content/analysis"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/readiness"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/syncbuf"
	_ "github.com/mattn/go-sqlite3"
)

// defectivePage is the page of the analysis package's hand-checked test:
// score 32 for "best widgets for home", nine findings.
var defectivePage = func() string {
	b, err := os.ReadFile("analysis/testdata/defective.html")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// site serves the defective page and counts its fetches.
type site struct {
	*httptest.Server
	hits atomic.Int64
}

func newSite(t *testing.T) *site {
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/widgets" {
			http.NotFound(w, r)
			return
		}
		s.hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, defectivePage)
	}))
	t.Cleanup(s.Close)
	return s
}

// fetcher reads pages through the outbound guard, here opened to
// loopback only, with the name acme.test resolved to 127.0.0.1: the guard
// checks the address dialled.
func fetcher(p netguard.Policy) *readiness.Auditor {
	tr := p.Transport()
	dial := p.Dialer(5 * time.Second).DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dial(ctx, network, strings.Replace(addr, "acme.test:", "127.0.0.1:", 1))
	}
	return &readiness.Auditor{Client: &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var loopback = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

// pageURL is the test page's URL on the name acme.test.
func (s *site) pageURL() string {
	return strings.Replace(s.URL, "127.0.0.1", "acme.test", 1) + "/widgets"
}

func pageRequest(s *site, budget client.USD, typ string) client.CreateContentRequest {
	return client.CreateContentRequest{Domain: "acme.test", URL: s.pageURL(), Budget: budget, Type: typ,
		TargetQueries: []string{"best widgets for home"}}
}

func (e *env) engine(ai *probe.Engine) *content.Engine {
	return &content.Engine{Store: e.db, Fetcher: fetcher(loopback), Client: &probe.Client{HTTP: &http.Client{}, Backoff: time.Millisecond},
		AI: ai, Prices: content.DefaultPrices, Now: time.Now, Workers: 2, Poll: 20 * time.Millisecond,
		CancelPoll: 20 * time.Millisecond, Lease: 3 * time.Second}
}

// start runs an engine until the test ends (or stop is called).
func start(t *testing.T, en *content.Engine) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { en.Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// waitEnded waits for a request to end and returns it.
func (e *env) waitEnded(t *testing.T, p auth.Principal, id string) store.ContentRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cr, err := e.svc.Get(ctx, p, id)
		must(t, err)
		if content.Ended(cr.Status) {
			return cr
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s still %s (step %q) after 30 s", id, cr.Status, cr.Step)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// evs reads the events published, in order, as kind and data.
type ev struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

func (e *env) events(t *testing.T) []ev {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+e.path+"?mode=ro")
	must(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT payload FROM bus_messages ORDER BY seq`)
	must(t, err)
	defer rows.Close()
	var out []ev
	for rows.Next() {
		var b []byte
		must(t, rows.Scan(&b))
		var v ev
		must(t, json.Unmarshal(b, &v))
		out = append(out, v)
	}
	must(t, rows.Err())
	return out
}

func (e *env) eventsOf(t *testing.T, id string) []string {
	var kinds []string
	for _, v := range e.events(t) {
		var d struct {
			ID string `json:"id"`
		}
		json.Unmarshal(v.Data, &d)
		if d.ID == id {
			kinds = append(kinds, v.Event)
		}
	}
	return kinds
}

func result(t *testing.T, cr store.ContentRequest) content.Result {
	t.Helper()
	var r content.Result
	if err := json.Unmarshal(cr.Result, &r); err != nil {
		t.Fatalf("result %s: %v", cr.Result, err)
	}
	return r
}

func findingIDs(fs []analysis.Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	return ids
}

var base = content.DefaultPrices.Fetch + content.DefaultPrices.Analysis

func TestEngineAnalyzesPageWithoutAI(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	start(t, e.engine(nil))
	cr := e.create(t, e.starter, pageRequest(s, client.Dollars(1), client.TypeOptimize))
	cr = e.waitEnded(t, e.starter, cr.ID)
	if cr.Status != client.StatusCompleted || cr.Spent != base || cr.Step != content.StepDone || cr.Attempts != 1 {
		t.Fatalf("ended %s, spent %d, step %q, attempts %d; want completed, %d, done, 1 (%s)", cr.Status, cr.Spent, cr.Step, cr.Attempts, base, cr.FailureReason)
	}
	r := result(t, cr)
	want := []string{"answer_first", "self_contained", "headings_queries", "statistics_sources", "sources", "quotations", "definitions", "faq", "json_ld"}
	if r.ScoreBefore != 32 || r.ScoreAfter != 32 || strings.Join(findingIDs(r.Analysis.Findings), ",") != strings.Join(want, ",") {
		t.Errorf("scores %d -> %d, findings %v", r.ScoreBefore, r.ScoreAfter, findingIDs(r.Analysis.Findings))
	}
	if r.OptimizedText != nil || r.Diff != nil || r.Engine != nil || r.Drafts.Source != "page" || len(r.Drafts.FAQ) != 1 ||
		r.Drafts.LLMsTxtLine != "- [Widgets guide]("+s.pageURL()+"): Welcome to our blog!" {
		t.Errorf("result without an engine: %+v", r)
	}
	if r.Source.Kind != "url" || *r.Source.URL != s.pageURL() || r.Source.Status != 200 || r.Source.Words != 102 {
		t.Errorf("source %+v", r.Source)
	}
	if len(r.Charges) != 2 || r.Charges[0].Item != "fetch" || r.Charges[1].Item != "analysis" {
		t.Errorf("charges %+v", r.Charges)
	}
	// The unspent budget is back in the month.
	b, active := e.ledger(t, "acct_starter", cr.BudgetMonth)
	if b.Spent != base || b.Reserved != 0 || active != 0 {
		t.Errorf("ledger %+v, active %d", b, active)
	}
	kinds := e.eventsOf(t, cr.ID)
	if strings.Join(kinds, ",") != "content_request_created,content_optimized" {
		t.Errorf("events %v", kinds)
	}
	var data struct {
		Spent       client.USD `json:"spent"`
		ScoreBefore int        `json:"score_before"`
		ScoreAfter  int        `json:"score_after"`
		URL         string     `json:"url"`
		Domain      string     `json:"domain"`
	}
	for _, v := range e.events(t) {
		if v.Event == "content_optimized" {
			json.Unmarshal(v.Data, &data)
		}
	}
	if data.Spent != client.USD(base) || data.ScoreBefore != 32 || data.ScoreAfter != 32 || data.URL != s.pageURL() || data.Domain != "acme.test" {
		t.Errorf("content_optimized data %+v", data)
	}
}

func TestEngineContentAndAnalyzeType(t *testing.T) {
	e := newEnv(t)
	fake := probefake.New()
	defer fake.Close()
	ai := &probe.Engine{Label: "fake", BaseURL: fake.URL(), Model: "m"}
	start(t, e.engine(ai))
	in := req(client.Dollars(1))
	in.Type, in.Content = client.TypeAnalyze, "# Widgets\n\nA widget is a small device that automates one chore at home."
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, in).ID)
	r := result(t, cr)
	// analyze never calls the engine, and content costs no fetch.
	if cr.Status != client.StatusCompleted || cr.Spent != content.DefaultPrices.Analysis || fake.Requests() != 0 || r.Source.Kind != "content" || r.Engine != nil {
		t.Errorf("%s spent %d, engine requests %d, result %+v", cr.Status, cr.Spent, fake.Requests(), r)
	}
}

func TestEngineNothingToAnalyse(t *testing.T) {
	e := newEnv(t)
	start(t, e.engine(nil))
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, req(client.Dollars(1))).ID)
	if cr.Status != client.StatusFailed || cr.Spent != 0 || !strings.HasPrefix(cr.FailureReason, "the request has neither a url nor content") {
		t.Errorf("%s, spent %d, %q", cr.Status, cr.Spent, cr.FailureReason)
	}
	if b, _ := e.ledger(t, "acct_starter", cr.BudgetMonth); b.Spent != 0 || b.Reserved != 0 {
		t.Errorf("ledger %+v", b)
	}
}

func TestEngineBudgetBelowFirstStep(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	start(t, e.engine(nil))
	cr := e.create(t, e.starter, pageRequest(s, client.USD(base-1), client.TypeOptimize))
	cr = e.waitEnded(t, e.starter, cr.ID)
	if cr.Status != client.StatusFailed || cr.Spent != 0 || cr.Result != nil ||
		cr.FailureReason != "the budget ($0.002999) does not cover the first step, fetching and analysing the page ($0.003): nothing was spent" {
		t.Errorf("%s, spent %d, reason %q", cr.Status, cr.Spent, cr.FailureReason)
	}
	if s.hits.Load() != 0 {
		t.Errorf("the page was fetched %d times", s.hits.Load())
	}
	if b, _ := e.ledger(t, "acct_starter", cr.BudgetMonth); b.Spent != 0 || b.Reserved != 0 {
		t.Errorf("ledger %+v", b)
	}
	if kinds := e.eventsOf(t, cr.ID); strings.Join(kinds, ",") != "content_request_created,content_request_failed" {
		t.Errorf("events %v", kinds)
	}
}

func TestEngineRefusesPrivateAddresses(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	en := e.engine(nil)
	en.Fetcher = fetcher(netguard.Policy{}) // the strict guard
	start(t, en)
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, pageRequest(s, client.Dollars(1), client.TypeOptimize)).ID)
	if cr.Status != client.StatusFailed || cr.Spent != 0 || !strings.Contains(cr.FailureReason, "address is not allowed") ||
		strings.Contains(cr.FailureReason, "127.0.0.1") || s.hits.Load() != 0 {
		t.Errorf("%s, spent %d, reason %q, hits %d", cr.Status, cr.Spent, cr.FailureReason, s.hits.Load())
	}
}

// rewriteAnswer invents a figure (45%) and a quotation: both must come
// back as placeholders.
const rewriteAnswer = "# Best widgets for home\n\nThe best widgets for home are Acme widgets: they last 3 times longer than other widgets and 87% of buyers come back.\n\n" +
	"## Best widgets for home\n\nAcme widgets suit homes of every size, and 45% of owners use two.\n\n" +
	"> \"These widgets changed how I clean my kitchen\" — a customer\n\n## Why choose Acme widgets?\n\nAcme widgets last 3 times longer than other widgets. [SOURCE NEEDED: a test of widget lifetimes]"

const draftsAnswer = "```json\n{\"faq\":[{\"question\":\"Why choose Acme widgets?\",\"answer\":\"They last 3 times longer than other widgets.\"}," +
	"{\"question\":\"Do buyers come back?\",\"answer\":\"Yes: 87% of buyers come back, and 99% recommend them.\"}],\"summary\":\"Acme's guide to widgets that last.\"}\n```"

// aiEngine is the fake at prices where a call costs its input tokens
// plus twice its output tokens, in micro-dollars.
func aiEngine(fake *probefake.Fake) *probe.Engine {
	return &probe.Engine{Label: "fake", BaseURL: fake.URL(), Model: "m", InputPricePerMTok: 1, OutputPricePerMTok: 2}
}

func words(s string) int64 { return int64(len(strings.Fields(s))) }

func TestEngineOptimizesWithAI(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	fake := probefake.New()
	defer fake.Close()
	fake.Answer("m", rewriteAnswer, draftsAnswer)
	start(t, e.engine(aiEngine(fake)))
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, pageRequest(s, client.Dollars(1), client.TypeOptimize)).ID)
	if cr.Status != client.StatusCompleted {
		t.Fatalf("%s: %s", cr.Status, cr.FailureReason)
	}
	r := result(t, cr)
	prompts := fake.Prompts()
	if len(prompts) != 2 || !strings.Contains(prompts[0], "- best widgets for home") || !strings.Contains(prompts[0], "Welcome to our blog!") {
		t.Fatalf("prompts %q", prompts)
	}
	// spent is exact: the fixed prices and each call's tokens at the engine's prices.
	want := base + content.DefaultPrices.Analysis + (words(prompts[0]) + 2*words(rewriteAnswer)) + (words(prompts[1]) + 2*words(draftsAnswer))
	if cr.Spent != want {
		t.Errorf("spent %d, want %d (charges %+v)", cr.Spent, want, r.Charges)
	}
	var sum client.USD
	for _, c := range r.Charges {
		sum += c.Amount
	}
	if sum != client.USD(cr.Spent) {
		t.Errorf("charges add up to %d, spent %d", sum, cr.Spent)
	}
	if r.OptimizedText == nil || !strings.Contains(*r.OptimizedText, "[FACT NEEDED: 45 is not in the original]%") ||
		!strings.Contains(*r.OptimizedText, "[QUOTE NEEDED: a real quotation;") ||
		!strings.Contains(*r.OptimizedText, "[SOURCE NEEDED: a test of widget lifetimes]") ||
		!strings.Contains(*r.OptimizedText, "87% of buyers") {
		t.Errorf("optimized text:\n%v", *r.OptimizedText)
	}
	var flagged []string
	for _, f := range r.Flags {
		flagged = append(flagged, f.Kind+":"+f.Value)
	}
	if strings.Join(flagged, ",") != "quotation:These widgets changed how I clean my kitchen,number:45,number:99" {
		t.Errorf("flags %v", flagged)
	}
	if r.Diff == nil || !strings.HasPrefix(*r.Diff, "--- original\n+++ optimized\n@@ ") || !strings.Contains(*r.Diff, "\n-Welcome to our blog!") {
		t.Errorf("diff %v", r.Diff)
	}
	if r.Drafts.Source != "engine" || len(r.Drafts.FAQ) != 2 || r.Drafts.FAQ[1].Answer != "Yes: 87% of buyers come back, and [FACT NEEDED: 99 is not in the original]% recommend them." ||
		r.Drafts.LLMsTxtLine != "- [Widgets guide]("+s.pageURL()+"): Acme's guide to widgets that last." {
		t.Errorf("drafts %+v", r.Drafts)
	}
	if r.AnalysisAfter == nil || r.ScoreAfter != r.AnalysisAfter.Score || r.ScoreAfter <= r.ScoreBefore || r.Engine == nil || *r.Engine != "fake" {
		t.Errorf("scores %d -> %d", r.ScoreBefore, r.ScoreAfter)
	}
	// The rewrite's headings now match the query: that finding is gone.
	for _, id := range findingIDs(r.AnalysisAfter.Findings) {
		if id == "headings_queries" {
			t.Errorf("after: %v", findingIDs(r.AnalysisAfter.Findings))
		}
	}
}

func TestEngineBudgetRunsOut(t *testing.T) {
	// Prices where an engine call's worst case is its output cap: 1000
	// tokens at $1 per million, 1000 µ$.
	setup := func(t *testing.T, budget client.USD) (*env, *probefake.Fake, store.ContentRequest) {
		e := newEnv(t)
		s := newSite(t)
		fake := probefake.New()
		t.Cleanup(fake.Close)
		fake.Answer("m", rewriteAnswer, draftsAnswer)
		en := e.engine(&probe.Engine{Label: "fake", BaseURL: fake.URL(), Model: "m", OutputPricePerMTok: 1})
		en.MaxTokens = 1000
		start(t, en)
		cr := e.waitEnded(t, e.starter, e.create(t, e.starter, pageRequest(s, budget, client.TypeOptimize)).ID)
		if cr.Status != client.StatusCompleted {
			t.Fatalf("%s: %s", cr.Status, cr.FailureReason)
		}
		return e, fake, cr
	}
	t.Run("before the rewrite", func(t *testing.T) {
		// The first step is covered; the rewrite's worst case (1000 + the
		// analysis of the rewrite) is not, by one micro-dollar.
		e, fake, cr := setup(t, client.USD(base+1000+content.DefaultPrices.Analysis-1))
		r := result(t, cr)
		if cr.Spent != base || fake.Requests() != 0 || !r.BudgetExhausted || r.StoppedBefore == nil || *r.StoppedBefore != "rewrite" || r.OptimizedText != nil {
			t.Errorf("spent %d, engine requests %d, result %+v", cr.Spent, fake.Requests(), r)
		}
		if b, _ := e.ledger(t, "acct_starter", cr.BudgetMonth); b.Spent != base || b.Reserved != 0 {
			t.Errorf("ledger %+v", b)
		}
	})
	t.Run("before the drafts", func(t *testing.T) {
		// The rewrite is covered; what it leaves (its worst case less what
		// it cost) is one micro-dollar short of the drafts' worst case.
		rewrite := words(rewriteAnswer)
		e, fake, cr := setup(t, client.USD(base+1000+content.DefaultPrices.Analysis+rewrite-1))
		r := result(t, cr)
		want := base + content.DefaultPrices.Analysis + rewrite
		if cr.Spent != want || fake.Requests() != 1 || !r.BudgetExhausted || *r.StoppedBefore != "drafts" || r.OptimizedText == nil || r.Drafts.Source != "page" {
			t.Errorf("spent %d (want %d), engine requests %d, result %+v", cr.Spent, want, fake.Requests(), r)
		}
		if cr.Budget-cr.Spent != 999 {
			t.Errorf("left %d, want 999", cr.Budget-cr.Spent)
		}
		if b, _ := e.ledger(t, "acct_starter", cr.BudgetMonth); b.Spent != want || b.Reserved != 0 {
			t.Errorf("ledger %+v", b)
		}
	})
}

// waitRewrite waits until the starter's request is at the rewrite step
// (and, unless attempts is 0, in that claim).
func (e *env) waitRewrite(t *testing.T, id string, attempts int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		cur, err := e.svc.Get(ctx, e.starter, id)
		must(t, err)
		if cur.Step == content.StepRewrite && (attempts == 0 || cur.Attempts == attempts) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never reached the rewrite (attempt %d): %s %q, attempts %d", attempts, cur.Status, cur.Step, cur.Attempts)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEngineCancelDuringProcessing(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	fake := probefake.New()
	defer fake.Close()
	fake.Answer("m", rewriteAnswer, draftsAnswer)
	fake.Delay = 3 * time.Second
	en := e.engine(aiEngine(fake))
	var logged syncbuf.Buffer
	en.Log = slog.New(slog.NewTextHandler(&logged, nil))
	start(t, en)
	cr := e.create(t, e.starter, pageRequest(s, client.Dollars(1), client.TypeOptimize))
	e.waitRewrite(t, cr.ID, 0)
	cancelled, _, err := e.svc.Cancel(ctx, e.starter, cr.ID, nil)
	must(t, err)
	if cancelled.Status != client.StatusCancelled || cancelled.Spent != base {
		t.Fatalf("cancel: %s, spent %d", cancelled.Status, cancelled.Spent)
	}
	// The worker notices and leaves it, and says so once it is done with
	// it: nothing more is charged, the request never completes.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logged.String(), `msg="content: request left" request=`+cr.ID); {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not leave the cancelled request in 10 s: %s", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cur, err := e.svc.Get(ctx, e.starter, cr.ID)
	must(t, err)
	if cur.Status != client.StatusCancelled || cur.Spent != base || cur.Result != nil {
		t.Errorf("after the engine's answer: %s, spent %d, result %s", cur.Status, cur.Spent, cur.Result)
	}
	if b, _ := e.ledger(t, "acct_starter", cur.BudgetMonth); b.Spent != base || b.Reserved != 0 {
		t.Errorf("ledger %+v", b)
	}
	if kinds := e.eventsOf(t, cr.ID); strings.Join(kinds, ",") != "content_request_created,content_request_cancelled" {
		t.Errorf("events %v", kinds)
	}
	if fake.Requests() != 1 {
		t.Errorf("engine requests %d, want 1", fake.Requests())
	}
	// A cancel is no processing error: the worker says it left the request.
	if l := logged.String(); strings.Contains(l, "level=ERROR") || !strings.Contains(l, "content: request left") {
		t.Errorf("log: %s", l)
	}
}

// TestEngineResumesWithoutPayingTwice: servers stopped gracefully while the
// engine rewrites, more times than MaxAttempts, hand the request back each
// time without counting the claim; the next one finishes it without
// fetching or analysing again.
func TestEngineResumesWithoutPayingTwice(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	fake := probefake.New()
	defer fake.Close()
	fake.Answer("m", rewriteAnswer, draftsAnswer)
	fake.Delay = 2 * time.Second
	cr := e.create(t, e.starter, pageRequest(s, client.Dollars(1), client.TypeOptimize))
	for i := range 4 {
		en := e.engine(aiEngine(fake))
		en.MaxAttempts = 3
		stop := start(t, en)
		e.waitRewrite(t, cr.ID, i+1)
		// The process stops mid-call: the request stays processing, its
		// analysis paid for and saved, its lease ended and the claim
		// counted as handed back.
		stop()
		cur, err := e.svc.Get(ctx, e.starter, cr.ID)
		must(t, err)
		if cur.Status != client.StatusProcessing || cur.Spent != base || cur.Attempts != i+1 || cur.HandBacks != i+1 || cur.LeaseUntil.After(time.Now()) {
			t.Fatalf("after stop %d: %s, spent %d, attempts %d, hand-backs %d, lease until %v", i, cur.Status, cur.Spent, cur.Attempts, cur.HandBacks, cur.LeaseUntil)
		}
	}
	// The stop handed it back: a new engine claims it and finishes it without
	// fetching or analysing again.
	fast := probefake.New()
	defer fast.Close()
	fast.Answer("m", rewriteAnswer, draftsAnswer)
	start(t, e.engine(aiEngine(fast)))
	cur := e.waitEnded(t, e.starter, cr.ID)
	r := result(t, cur)
	if cur.Status != client.StatusCompleted || cur.Attempts != 5 || cur.HandBacks != 4 || s.hits.Load() != 1 {
		t.Fatalf("%s, attempts %d, page fetched %d times", cur.Status, cur.Attempts, s.hits.Load())
	}
	analyses := 0
	for _, c := range r.Charges {
		if c.Item == "fetch" || (c.Item == "analysis" && c.Step == content.StepAnalyze) {
			analyses++
		}
	}
	var sum client.USD
	for _, c := range r.Charges {
		sum += c.Amount
	}
	if analyses != 2 || sum != client.USD(cur.Spent) {
		t.Errorf("charges %+v, spent %d", r.Charges, cur.Spent)
	}
	if kinds := e.eventsOf(t, cr.ID); strings.Join(kinds, ",") != "content_request_created,content_optimized" {
		t.Errorf("events %v", kinds)
	}
}

func TestEngineFailsAfterMaxAttempts(t *testing.T) {
	e := newEnv(t)
	in := req(client.Dollars(1))
	in.Content = "Widgets."
	cr := e.create(t, e.starter, in)
	// Three claims whose workers died: each lease ended at once.
	for range 3 {
		must(t, e.db.Update(ctx, func(tx store.Tx) error {
			now := time.Now()
			_, err := tx.ClaimContentRequest("proc_test", now, now.Add(-time.Millisecond))
			return err
		}))
	}
	start(t, e.engine(nil))
	cur := e.waitEnded(t, e.starter, cr.ID)
	if cur.Status != client.StatusFailed || cur.Spent != 0 || !strings.Contains(cur.FailureReason, "processing stopped 3 times") {
		t.Errorf("%s, spent %d, %q", cur.Status, cur.Spent, cur.FailureReason)
	}
	if b, _ := e.ledger(t, "acct_starter", cur.BudgetMonth); b.Reserved != 0 {
		t.Errorf("ledger %+v", b)
	}
}

// TestEngineThousandRequests: 1,000 requests of four owners (an agency's
// two clients among them), created one owner after another, are all
// processed exactly once by two engines sharing the file, never more at
// once than their workers, and the owners take turns from the start.
func TestEngineThousandRequests(t *testing.T) {
	e := newEnv(t)
	owners := []struct {
		account, client string
		n               int
	}{{"acct_starter", "", 400}, {"acct_pro", "", 300}, {"acct_agency", "cli_a", 150}, {"acct_agency", "cli_b", 150}}
	created := map[string]bool{}
	for _, o := range owners {
		must(t, e.db.Update(ctx, func(tx store.Tx) error {
			for i := range o.n {
				cr := store.ContentRequest{ID: fmt.Sprintf("cr_%s_%s_%04d", o.account, o.client, i), AccountID: o.account, ClientID: o.client,
					Type: client.TypeAnalyze, Status: client.StatusQueued, Domain: "example.com",
					Content: fmt.Sprintf("# Widgets %d\n\nA widget is a small device that automates one chore at home.", i),
					Budget:  dollar, BudgetMonth: "2025-06", CreatedAt: t0.Add(time.Duration(len(created)) * time.Millisecond), UpdatedAt: t0}
				if err := tx.InsertContentRequest(cr); err != nil {
					return err
				}
				created[cr.ID] = true
				if err := tx.AddToBudgetMonth(o.account, "2025-06", 0, cr.Budget); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	// Two engines on two connections to the file, as two servers sharing
	// a data directory would be, two workers each.
	other, err := sqlite.Open(ctx, e.path)
	must(t, err)
	defer other.Close()
	began := time.Now()
	// Leases long enough that a loaded machine's late renewal never hands
	// a request to the other engine: this test counts first attempts.
	first := e.engine(nil)
	first.Lease = 30 * time.Second
	start(t, first)
	second := e.engine(nil)
	second.Store, second.Lease = other, 30*time.Second
	start(t, second)
	db, err := sql.Open("sqlite3", "file:"+e.path+"?mode=ro")
	must(t, err)
	defer db.Close()
	peak := 0
	for {
		var left, processing int
		must(t, db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE status = 'processing') FROM content_requests
			WHERE status IN ('queued', 'processing')`).Scan(&left, &processing))
		peak = max(peak, processing)
		if left == 0 {
			break
		}
		if time.Since(began) > 3*time.Minute {
			t.Fatalf("%d requests left after 3 minutes", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("1,000 requests in %v, at most %d processing at once", time.Since(began), peak)
	if peak > 4 {
		t.Errorf("%d requests processing at once; 4 workers in all", peak)
	}
	var completed, once int
	must(t, db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE attempts = 1) FROM content_requests WHERE status = 'completed' AND spent = ?`,
		content.DefaultPrices.Analysis).Scan(&completed, &once))
	if completed != 1000 || once != 1000 {
		t.Errorf("%d completed at the analysis's price, %d on the first attempt; want 1000", completed, once)
	}
	optimized := map[string]int{}
	for _, v := range e.events(t) {
		var d struct {
			ID string `json:"id"`
		}
		json.Unmarshal(v.Data, &d)
		if v.Event == "content_optimized" {
			optimized[d.ID]++
		}
	}
	for id := range created {
		if optimized[id] != 1 {
			t.Errorf("%s: %d content_optimized events", id, optimized[id])
		}
	}
	for _, o := range owners[:2] {
		b, _ := e.ledger(t, o.account, "2025-06")
		if b.Reserved != 0 || b.Spent != int64(o.n)*content.DefaultPrices.Analysis {
			t.Errorf("%s ledger %+v", o.account, b)
		}
	}
	// Fair shares, as far as they do not hang on which request ends first
	// on a loaded machine: the first three starts take the three accounts
	// (a never-started account goes first), and the agency's first two
	// starts take its two clients, although their requests were queued
	// last. TestClaimContentRequestIsFair checks the rule step by step.
	starts := func(where string) []string {
		rows, err := db.Query(`SELECT account_id, coalesce(client_id, '') FROM content_requests ` + where + ` ORDER BY started_at, id`)
		must(t, err)
		defer rows.Close()
		var order []string
		for rows.Next() {
			var a, c string
			must(t, rows.Scan(&a, &c))
			order = append(order, a+"/"+c)
		}
		must(t, rows.Err())
		return order
	}
	order := starts("")[:3]
	firstThree := map[string]bool{}
	for _, o := range order {
		firstThree[strings.Split(o, "/")[0]] = true
	}
	agency := starts("WHERE account_id = 'acct_agency'")[:2]
	if len(firstThree) != 3 || agency[0] == agency[1] {
		t.Errorf("first starts %v, the agency's first two %v", order, agency)
	}
}

func TestEngineFailingAIIsNotCharged(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	fake := probefake.New()
	defer fake.Close()
	fake.Answer("m", rewriteAnswer)
	fake.Fail("m", http.StatusUnauthorized) // permanent: not retried
	en := e.engine(aiEngine(fake))
	var logged syncbuf.Buffer
	en.Log = slog.New(slog.NewTextHandler(&logged, nil))
	start(t, en)
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, pageRequest(s, client.Dollars(1), client.TypeOptimize)).ID)
	r := result(t, cr)
	if cr.Status != client.StatusCompleted || cr.Spent != base || r.OptimizedText != nil || fake.Requests() != 1 ||
		len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], "The AI engine fake failed at the rewrite step") || r.Drafts.Source != "page" {
		t.Errorf("%s, spent %d, engine requests %d, notes %q", cr.Status, cr.Spent, fake.Requests(), r.Notes)
	}
	// The engine is the operator's: its error (its answer, its address)
	// goes to the operator's log, not into the customer's result.
	host := strings.TrimPrefix(fake.URL(), "http://")
	host = host[:strings.IndexByte(host, '/')]
	if strings.Contains(string(cr.Result), "401") || strings.Contains(string(cr.Result), host) {
		t.Errorf("the result shows the engine's error: %q", r.Notes)
	}
	if l := logged.String(); !strings.Contains(l, "AI engine call failed") || !strings.Contains(l, "request="+cr.ID) || !strings.Contains(l, "401") {
		t.Errorf("log: %s", l)
	}
}

func TestEngineFallsBackToContent(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	start(t, e.engine(nil))
	in := pageRequest(s, client.Dollars(1), client.TypeAnalyze)
	in.URL = strings.Replace(in.URL, "/widgets", "/gone", 1)
	in.Content = "# Widgets\n\nA widget is a small device that automates one chore at home."
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, in).ID)
	r := result(t, cr)
	// The fetch got no page: not charged; the content is analysed.
	if cr.Status != client.StatusCompleted || cr.Spent != content.DefaultPrices.Analysis || r.Source.Kind != "content" ||
		len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "answered 404") || r.Analysis.Words != 13 {
		t.Errorf("%s, spent %d, source %+v, notes %q, words %d", cr.Status, cr.Spent, r.Source, r.Notes, r.Analysis.Words)
	}
}

// TestEngineLongTextKeepsItsRest: a text longer than the engine is given
// is rewritten at its beginning; the optimized text keeps the rest as it
// was, so the diff does not show the rest deleted and score_after is the
// whole page's.
func TestEngineLongTextKeepsItsRest(t *testing.T) {
	e := newEnv(t)
	fake := probefake.New()
	defer fake.Close()
	fake.Answer("m", rewriteAnswer, draftsAnswer)
	start(t, e.engine(aiEngine(fake)))
	var b strings.Builder
	b.WriteString("# Widgets\n\nWelcome to our blog! Acme widgets last 3 times longer than other widgets and 87% of buyers come back.")
	for i := 0; b.Len() < 2*content.MaxEngineText; i++ {
		fmt.Fprintf(&b, "\n\nAcme widget model %d keeps one chore at home done for years.", i)
	}
	b.WriteString("\n\nThe last paragraph of a long page about widgets.")
	in := req(client.Dollars(1))
	in.Content, in.TargetQueries = b.String(), []string{"best widgets for home"}
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, in).ID)
	r := result(t, cr)
	if cr.Status != client.StatusCompleted || r.OptimizedText == nil || r.Diff == nil {
		t.Fatalf("%s: %s, result %+v", cr.Status, cr.FailureReason, r)
	}
	prompts := fake.Prompts()
	if len(prompts) != 2 || strings.Contains(prompts[0], "last paragraph") || len(prompts[0]) > content.MaxEngineText+4096 {
		t.Errorf("the engine was given %d bytes", len(prompts[0]))
	}
	opt := *r.OptimizedText
	if !strings.HasPrefix(opt, "# Best widgets for home\n") || !strings.HasSuffix(opt, "\n\nThe last paragraph of a long page about widgets.") {
		t.Errorf("optimized text: %.200q ... %.200q", opt, opt[max(0, len(opt)-200):])
	}
	// The rest is the original's, unchanged: no line of it is removed.
	given := r.OriginalText[:content.MaxEngineText]
	for _, l := range strings.Split(*r.Diff, "\n") {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") && !strings.Contains(given, l[1:]) {
			t.Fatalf("the diff removes a line of the rest: %q", l)
		}
	}
	rest := len(strings.Fields(r.OriginalText[content.MaxEngineText:]))
	if r.AnalysisAfter == nil || r.AnalysisAfter.Words < rest || r.AnalysisAfter.Words >= r.Analysis.Words {
		t.Errorf("score_after covers %d words; the rest has %d, the original %d", r.AnalysisAfter.Words, rest, r.Analysis.Words)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "keeps the rest as it was") }) {
		t.Errorf("notes %q", r.Notes)
	}

	// A budget that does not cover the rewrite: no rewrite, and no note
	// that says the engine rewrote the beginning.
	in.Budget = client.USD(content.DefaultPrices.Analysis + 1)
	cr = e.waitEnded(t, e.starter, e.create(t, e.starter, in).ID)
	r = result(t, cr)
	if cr.Status != client.StatusCompleted || r.OptimizedText != nil || !r.BudgetExhausted || len(r.Notes) != 1 ||
		!strings.HasPrefix(r.Notes[0], "The budget left") {
		t.Errorf("%s, budget exhausted %v, notes %q", cr.Status, r.BudgetExhausted, r.Notes)
	}
}

// A page whose host does not resolve fails the request saying so, without
// the address of the server's own resolver in the customer's reason.
func TestEngineUnresolvedHostHidesTheResolver(t *testing.T) {
	e := newEnv(t)
	s := newSite(t)
	en := e.engine(nil)
	en.Fetcher = &readiness.Auditor{Client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "acme.test",
				Server: "10.255.255.53:53", IsNotFound: true}}
		}}}}
	start(t, en)
	cr := e.waitEnded(t, e.starter, e.create(t, e.starter, pageRequest(s, client.Dollars(1), client.TypeAnalyze)).ID)
	if cr.Status != client.StatusFailed || cr.Spent != 0 || !strings.Contains(cr.FailureReason, "the host name acme.test does not resolve") ||
		strings.Contains(cr.FailureReason, "10.255.255.53") {
		t.Errorf("%s, spent %d, reason %q", cr.Status, cr.Spent, cr.FailureReason)
	}
}
