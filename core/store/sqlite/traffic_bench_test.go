package sqlite_test

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

// trafficDomain makes a monitored domain of acct_1 with an id as the
// service makes them.
func trafficDomain(b *testing.B, db *sqlite.DB) string {
	b.Helper()
	d := store.MonitoredDomain{ID: randid.New("dom"), AccountID: "acct_1", Domain: randid.New("d") + ".example", CreatedAt: t0, UpdatedAt: t0}
	must(b, db.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) }))
	return d.ID
}

// trafficAggregates are n distinct aggregates of a day, four in five
// crawler hits, as a busy site's batch gives them: pages of 30 to 40
// bytes, a handful of agents.
func trafficAggregates(day time.Time, n int) ([]store.CrawlerHits, []store.ReferralVisits) {
	agents := []string{"GPTBot", "ClaudeBot", "PerplexityBot", "OAI-SearchBot", "Google-Extended", "Bytespider", "CCBot", "Amazonbot"}
	verdicts := []string{"verified", "unverified", "spoofed"}
	assistants := []string{"chatgpt", "perplexity", "claude", "gemini", "copilot"}
	var hits []store.CrawlerHits
	var refs []store.ReferralVisits
	for i := range n {
		page := fmt.Sprintf("/blog/2026/11/an-article-about-%d", i/len(agents))
		if i%5 == 4 {
			refs = append(refs, store.ReferralVisits{Day: day, Page: page, Assistant: assistants[i%len(assistants)], Visits: int64(i%7 + 1)})
			continue
		}
		hits = append(hits, store.CrawlerHits{Day: day, Page: page, Agent: agents[i%len(agents)], Verification: verdicts[i%len(verdicts)],
			Hits: 12, Status: [5]int64{9, 1, 1, 0, 1}, Bytes: 12 * 24_000})
	}
	return hits, refs
}

func trafficBatch(domainID string, i int) store.TrafficBatch {
	h := sha256.Sum256(fmt.Appendf(nil, "batch %s %d", domainID, i))
	return store.TrafficBatch{ID: randid.New("tb"), AccountID: "acct_1", DomainID: domainID, Source: store.TrafficCloudflare, Hash: h[:],
		Lines: 20_000, ReceivedAt: t0}
}

// BenchmarkAddTrafficBatch adds batches of 5,000 aggregates: of keys the
// domain has not (new) and of keys it has (merged into, as most are).
func BenchmarkAddTrafficBatch(b *testing.B) {
	for _, same := range []bool{false, true} {
		name := "new keys"
		if same {
			name = "same keys"
		}
		b.Run(name, func(b *testing.B) {
			db := open(b, filepath.Join(b.TempDir(), "aivis.db"))
			must(b, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "Account", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
			dom := trafficDomain(b, db)
			i := 0
			for b.Loop() {
				day := t0.Truncate(24 * time.Hour)
				if !same {
					day = day.AddDate(0, 0, i)
				}
				hits, refs := trafficAggregates(day, 5000)
				if _, err := db.AddTrafficBatch(ctx, trafficBatch(dom, i), hits, refs); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(i)/5000, "µs/aggregate")
		})
	}
}

// BenchmarkTrafficRowBytes adds 100,000 aggregates (20 batches of 5,000)
// and reports what each aggregate table grew by a row: the pages the
// file holds more (PRAGMA page_count), each table apart.
func BenchmarkTrafficRowBytes(b *testing.B) {
	db := open(b, filepath.Join(b.TempDir(), "aivis.db"))
	must(b, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "Account", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
	_, r := db.Pools()
	size := func() int64 {
		var pages, size int64
		must(b, r.QueryRow(`PRAGMA page_count`).Scan(&pages))
		must(b, r.QueryRow(`PRAGMA page_size`).Scan(&size))
		return pages * size
	}
	for b.Loop() {
		dom := trafficDomain(b, db)
		before := size()
		var nh, nr int
		for i := range 20 {
			hits, _ := trafficAggregates(t0.Truncate(24*time.Hour).AddDate(0, 0, i), 5000)
			nh += len(hits)
			if _, err := db.AddTrafficBatch(ctx, trafficBatch(dom, i), hits, nil); err != nil {
				b.Fatal(err)
			}
		}
		mid := size()
		for i := range 20 {
			_, refs := trafficAggregates(t0.Truncate(24*time.Hour).AddDate(0, 0, i), 25000)
			nr += len(refs)
			if _, err := db.AddTrafficBatch(ctx, trafficBatch(dom, 100+i), nil, refs); err != nil {
				b.Fatal(err)
			}
		}
		after := size()
		b.ReportMetric(float64(mid-before)/float64(nh), "B/crawler_hit")
		b.ReportMetric(float64(after-mid)/float64(nr), "B/referral_visit")
	}
}
