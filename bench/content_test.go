package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/content"
	"github.com/aivis/aivis/core/content/analysis"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/probe/probefake"
	"github.com/aivis/aivis/core/readiness"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// page50KB is an article of about 50 KB: navigation, JSON-LD, sections
// with statistics, links, quotations and questions.
func page50KB() string {
	var sb strings.Builder
	sb.WriteString(`<!doctype html><html lang="en"><head><title>The complete guide to home widgets</title>
<meta name="description" content="Everything about choosing, installing and maintaining home widgets.">
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Article","headline":"Home widgets"}</script>
</head><body><nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/blog">Blog</a></nav><main><h1>The complete guide to home widgets</h1>`)
	for i := 0; sb.Len() < 50<<10; i++ {
		fmt.Fprintf(&sb, `<h2>How do widgets of type %d work?</h2>
<p>A type %d widget is a small device that automates one household chore; it runs on a battery that lasts about %d months.</p>
<p>According to the <a href="https://widgetlab.example/report-%d">Widget Lab report %d</a>, %d%% of owners use their widget daily, and batteries last %d times longer than a decade ago.</p>
<p>This matters because chores take time: an average household spends 1,%03d minutes a month on them, which widgets of this type cut by a third in independent tests.</p>
<blockquote>"Type %d widgets disappear into the routine of a home." — Dana Ruiz, editor at Widget Lab</blockquote>
<ul><li>Install it near a socket.</li><li>Pair it with the app.</li><li>Replace the battery every %d months.</li></ul>
`, i, i, 6+i%12, i, i, 40+i%50, 2+i%4, i%1000, i, 6+i%12)
	}
	sb.WriteString(`</main><footer>© Acme</footer></body></html>`)
	return sb.String()
}

var benchQueries = []string{"how do home widgets work", "best widget battery life"}

// BenchmarkContentAnalysis is the built-in analysis of a 50 KB page
// (parse, rubric, drafts from the page), in one goroutine and in two.
func BenchmarkContentAnalysis(b *testing.B) {
	page := []byte(page50KB())
	opts := analysis.Options{Domain: "acme.example", Queries: benchQueries}
	analyse := func() analysis.Report {
		d := analysis.ParseHTML("https://acme.example/guide", page)
		r := analysis.Analyze(d, opts)
		analysis.DraftFromPage(d, opts)
		return r
	}
	if r := analyse(); r.Words < 5000 {
		b.Fatalf("the page has %d words", r.Words)
	}
	for range b.N {
		const n = 200
		for _, workers := range []int{1, 2} {
			start := time.Now()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := w; i < n; i += workers {
						analyse()
					}
				})
			}
			wg.Wait()
			rate := n / time.Since(start).Seconds()
			b.Logf("%d KB page, %d goroutines: %d analyses in %v, %.0f analyses/s", len(page)>>10, workers, n, time.Since(start).Round(time.Millisecond), rate)
			b.ReportMetric(rate, fmt.Sprintf("analyses/s-%dg", workers))
		}
	}
}

// BenchmarkContentRequests processes content requests through the
// engine's worker pool on a real SQLite file: 200 analyze requests, each
// fetching the 50 KB page over HTTP through the outbound guard; then 100
// optimize requests on the page against the fake engine answering at once
// (two engine calls each). The second is the worker's overhead: all of it
// is aivis (claims, leases, transactions, the engine client, the checks
// and the diff), none of it waiting on an engine.
func BenchmarkContentRequests(b *testing.B) {
	page := page50KB()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	policy := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	tr := policy.Transport()
	dial := policy.Dialer(5 * time.Second).DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dial(ctx, network, strings.Replace(addr, "acme.test:", "127.0.0.1:", 1))
	}
	fetcher := &readiness.Auditor{Client: &http.Client{Transport: tr}}
	pageURL := strings.Replace(srv.URL, "127.0.0.1", "acme.test", 1) + "/guide"

	fake := probefake.New()
	defer fake.Close()
	rewrite := "# Home widgets\n\nA home widget is a small device that automates one chore.\n\n## How do home widgets work?\n\nThey run on a battery. [SOURCE NEEDED: battery tests]"
	fake.Answer("m", rewrite, `{"faq":[{"question":"How do home widgets work?","answer":"They run on a battery."}],"summary":"A guide to home widgets."}`)

	for range b.N {
		db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "aivis.db"))
		if err != nil {
			b.Fatal(err)
		}
		if err := db.CreateAccount(context.Background(), store.Account{ID: "acct_bench", Name: "B", Tier: "enterprise", Type: store.AccountStandard, CreatedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
		run := func(what string, n int, typ string, ai *probe.Engine) {
			month := time.Now().UTC().Format("2006-01")
			err := db.Update(context.Background(), func(tx store.Tx) error {
				for i := range n {
					now := time.Now().UTC()
					cr := store.ContentRequest{ID: fmt.Sprintf("cr_%s_%04d", typ, i), AccountID: "acct_bench", Type: typ, Status: client.StatusQueued,
						Domain: "acme.test", URL: pageURL, TargetQueries: benchQueries, Budget: 10_000_000, BudgetMonth: month, CreatedAt: now, UpdatedAt: now}
					if err := tx.InsertContentRequest(cr); err != nil {
						return err
					}
					if err := tx.AddToBudgetMonth(cr.AccountID, month, 0, cr.Budget); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			en := &content.Engine{Store: db, Fetcher: fetcher, Client: &probe.Client{HTTP: &http.Client{}}, AI: ai,
				Prices: content.DefaultPrices, Workers: 2, Poll: 5 * time.Millisecond}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			start := time.Now()
			go func() { en.Run(ctx); close(done) }()
			for {
				var left int
				items, _, err := db.ListContentRequests(context.Background(), store.ContentFilter{AccountID: "acct_bench", Status: client.StatusQueued, Limit: 1})
				if err != nil {
					b.Fatal(err)
				}
				left = len(items)
				if left == 0 {
					items, _, err = db.ListContentRequests(context.Background(), store.ContentFilter{AccountID: "acct_bench", Status: client.StatusProcessing, Limit: 1})
					if err != nil {
						b.Fatal(err)
					}
					left = len(items)
				}
				if left == 0 {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			wall := time.Since(start)
			cancel()
			<-done
			completed, _, err := db.ListContentRequests(context.Background(), store.ContentFilter{AccountID: "acct_bench", Status: client.StatusCompleted, Limit: 1000})
			if err != nil {
				b.Fatal(err)
			}
			want := n
			if typ == client.TypeOptimize {
				want += 200
			}
			if len(completed) != want {
				b.Fatalf("%d completed, want %d", len(completed), want)
			}
			rate := float64(n) / wall.Seconds()
			b.Logf("%s: %d requests in %v, %.0f requests/s, %.2f ms each", what, n, wall.Round(time.Millisecond), rate, wall.Seconds()*1000/float64(n))
			b.ReportMetric(rate, what+"-requests/s")
		}
		run("analyze", 200, client.TypeAnalyze, nil)
		run("optimize", 100, client.TypeOptimize, &probe.Engine{Label: "fake", BaseURL: fake.URL(), Model: "m"})
		db.Close()
	}
}
