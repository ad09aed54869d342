package changes_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/changes"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/core/store/sqlite"
	"github.com/aivis/aivis/internal/testsvc"
)

var ctx = context.Background()

// t0 is when the scripted changes go live: 1 June 2026, midnight UTC.
var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// engines are the stores the tests run on; each opens a fresh one, and
// another handle on it.
var engines = []struct {
	name string
	open func(t testing.TB) (s store.Store, reopen func(t testing.TB) store.Store)
}{
	{"sqlite", func(t testing.TB) (store.Store, func(testing.TB) store.Store) {
		path := filepath.Join(t.TempDir(), "aivis.db")
		open := func(t testing.TB) store.Store {
			db, err := sqlite.Open(ctx, path)
			must(t, err)
			t.Cleanup(func() { db.Close() })
			return db
		}
		return open(t), open
	}},
	{"postgres", func(t testing.TB) (store.Store, func(testing.TB) store.Store) {
		url := testsvc.Postgres(t)
		key := make([]byte, 32)
		rand.Read(key)
		box, err := secrets.New(key)
		must(t, err)
		open := func(t testing.TB) store.Store {
			db, err := postgres.Open(ctx, url, box)
			must(t, err)
			t.Cleanup(func() { db.Close() })
			return db
		}
		return open(t), open
	}},
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env is a store with an agency account, its client and another account,
// a monitored domain of the client's with its own prompts, and the
// service on it.
type env struct {
	s     store.Store
	clock *clock
	svc   *changes.Service
	d     store.MonitoredDomain
}

const domainName = "acme.example"

func newEnv(t testing.TB, s store.Store, prompts int) *env {
	t.Helper()
	for _, a := range []store.Account{
		{ID: "acct_1", Name: "Agency", Tier: "enterprise", Type: store.AccountAgency, CreatedAt: t0},
		{ID: "acct_2", Name: "Other", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: t0},
	} {
		must(t, s.CreateAccount(ctx, a))
	}
	must(t, s.CreateClient(ctx, store.Client{ID: "cli_1", AccountID: "acct_1", Name: "Acme", CreatedAt: t0}))
	d := store.MonitoredDomain{ID: "dom_1", AccountID: "acct_1", ClientID: "cli_1", Domain: domainName, Brands: []string{"Acme"},
		Competitors: []string{"Roadrunner Inc", "Coyote Co", "Wile Gear"}, Topics: []string{"rocket skates"},
		CreatedAt: t0.AddDate(-2, 0, 0), UpdatedAt: t0.AddDate(-2, 0, 0)}
	for i := range prompts {
		d.Prompts = append(d.Prompts, store.Prompt{Text: promptText(i), Intent: "custom"})
	}
	must(t, s.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) }))
	c := &clock{t: t0}
	return &env{s: s, clock: c, d: d, svc: &changes.Service{Store: s, Now: c.Now}}
}

func promptText(i int) string {
	return fmt.Sprintf("Which rocket skates are best for terrain %02d?", i)
}

// world scripts a domain's daily scans around t0: each of prompts asked
// samples times of each engine in a scan that ends at 06:00 of its day;
// before and after are the scans on each side. The first targeted
// prompts are cited at rate cite before the change and citeTargeted
// after, the others at cite and citeOthers. Every answer also names the
// brand half the time (first to third), some of the competitors, and,
// for engines that report sources, some source domains, the domain's
// among them.
type world struct {
	prompts, targeted, samples int
	engines                    []string
	before, after              int
	cite, citeTargeted         float64
	citeOthers                 float64
	seed                       uint64
	textBytes                  int // the length of each answer's text
	// shift moves every scan by days; prefix goes before each scan's id.
	shift  int
	prefix string
}

// tally is what the test counts itself of the answers it stored, by arm
// (0 targeted, 1 the others) and side (0 before, 1 after), within the
// windows of n scans.
type tally struct {
	answers, cited [2][2]int
	voice, voiceOf [2][2]int
	src, srcOf     [2][2]int
}

// answer is one scripted answer: its columns and its detail as the scans
// keep them (visibility's answerDetail, under the API's names).
func (w world) answer(r *mrand.Rand, scanID string, seq, prompt, run int, engine string, p float64, at time.Time) (store.ScanAnswer, [3]int) {
	a := store.ScanAnswer{ScanID: scanID, Seq: seq, PromptIndex: prompt, Prompt: promptText(prompt), Intent: "custom", Run: run,
		Engine: engine, Kind: "openai-chat", RecordedAt: at, SourcesReported: engine != "gpt"}
	a.Cited = r.Float64() < p
	a.Mentioned = r.Float64() < 0.5
	competitors := []string{"Roadrunner Inc", "Coyote Co", "Wile Gear"}[:r.IntN(4)]
	if a.Mentioned {
		a.Position = 1 + r.IntN(len(competitors)+1)
	}
	type link struct {
		URL    string `json:"url"`
		Title  string `json:"title"`
		Domain string `json:"domain"`
	}
	var sources, citations []link
	own := 0
	if a.SourcesReported {
		for _, dom := range []string{"www.acme.example", "blog.acme.example", "skates.example", "reviews.example", "skates.example"}[:r.IntN(6)] {
			sources = append(sources, link{"https://" + dom + "/page", "A page", dom})
		}
		if a.Cited {
			citations = append(citations, link{"https://acme.example/pricing", "Pricing", "acme.example"})
		}
	}
	seen := map[string]bool{}
	for _, l := range append(append([]link{}, sources...), citations...) {
		if !seen[l.Domain] {
			seen[l.Domain] = true
			if strings.HasSuffix(l.Domain, "acme.example") {
				own++
			}
		}
	}
	detail := map[string]any{"sources": nonNil(sources), "citations": nonNil(citations), "queries": []string{"rocket skates"},
		"competitors": competitors, "sentences": []map[string]any{{"text": "Acme makes rocket skates.", "sentiment": 0.4}}, "surface": "model"}
	a.Detail, _ = json.Marshal(detail)
	a.Text = strings.Repeat("Acme rocket skates are sold at https://acme.example/pricing and reviewed widely. ", max(w.textBytes/80, 1))
	return a, [3]int{len(competitors), own, len(seen)}
}

func nonNil[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

// store writes the world's scans and answers for the domain (one Update
// a scan, as a scan's end writes them), failing one probe in ten, and
// tallies the answers of the n scans on each side of t0.
func (w world) store(t testing.TB, s store.Store, d store.MonitoredDomain, n int) tally {
	t.Helper()
	r := mrand.New(mrand.NewPCG(w.seed, 11))
	var tl tally
	for sc := -w.before; sc < w.after; sc++ {
		at := t0.Add(time.Duration(sc+w.shift)*24*time.Hour + 6*time.Hour)
		id := fmt.Sprintf("%sscan_%04d", w.prefix, sc+w.before)
		side := 0
		if sc >= 0 {
			side = 1
		}
		inWindow := (side == 0 && sc >= -n) || (side == 1 && sc < n)
		var answers []store.ScanAnswer
		for _, e := range w.engines {
			for p := range w.prompts {
				arm, rate := 1, w.cite
				if p < w.targeted {
					arm = 0
				}
				switch {
				case side == 1 && arm == 0:
					rate = w.citeTargeted
				case side == 1:
					rate = w.citeOthers
				}
				for run := range w.samples {
					a, counts := w.answer(r, id, len(answers), p, run, e, rate, at)
					if r.IntN(10) == 0 {
						a.Error, a.Text, a.Cited, a.Mentioned, a.Position = "engine unreachable", "", false, false, 0
						answers = append(answers, a)
						continue
					}
					answers = append(answers, a)
					if !inWindow {
						continue
					}
					tl.answers[arm][side]++
					if a.Cited {
						tl.cited[arm][side]++
					}
					m := 0
					if a.Mentioned {
						m = 1
					}
					tl.voice[arm][side] += m
					tl.voiceOf[arm][side] += m + counts[0]
					if a.SourcesReported {
						tl.src[arm][side] += counts[1]
						tl.srcOf[arm][side] += counts[2]
					}
				}
			}
		}
		scan := store.Scan{ID: id, AccountID: d.AccountID, ClientID: d.ClientID, DomainID: d.ID, Domain: d.Domain, Trigger: store.ScanScheduled,
			Status: store.ScanCompleted, Attempts: 1, Result: json.RawMessage(`{"score":50}`), CreatedAt: at.Add(-time.Minute),
			StartedAt: at.Add(-time.Minute), FinishedAt: at}
		must(t, s.Update(ctx, func(tx store.Tx) error {
			if err := tx.InsertScan(scan); err != nil {
				return err
			}
			return tx.InsertScanAnswers(answers)
		}))
	}
	return tl
}
