package postgres_test

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/postgres"
	"github.com/aivis/aivis/internal/testsvc"
)

// trafficDomain makes a monitored domain of acct_1 with an id as the
// service makes them.
func trafficDomain(b *testing.B, db *postgres.DB) string {
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
			db := open(b, testsvc.Postgres(b), box(b))
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
// to each aggregate table and reports what the table grew by a row, its
// indexes and TOAST included (pg_total_relation_size), after a VACUUM.
func BenchmarkTrafficRowBytes(b *testing.B) {
	db := open(b, testsvc.Postgres(b), box(b))
	must(b, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "Account", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
	size := func(table string) int64 {
		_, err := db.Pool().Exec(ctx, `VACUUM ANALYZE `+table)
		must(b, err)
		var n int64
		must(b, db.Pool().QueryRow(ctx, `SELECT pg_total_relation_size($1)`, table).Scan(&n))
		return n
	}
	for b.Loop() {
		dom := trafficDomain(b, db)
		hb, rb := size("crawler_hits"), size("referral_visits")
		var nh, nr int
		for i := range 20 {
			day := t0.Truncate(24*time.Hour).AddDate(0, 0, i)
			hits, _ := trafficAggregates(day, 5000)
			_, refs := trafficAggregates(day, 25000)
			nh, nr = nh+len(hits), nr+len(refs)
			if _, err := db.AddTrafficBatch(ctx, trafficBatch(dom, i), hits, refs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(size("crawler_hits")-hb)/float64(nh), "B/crawler_hit")
		b.ReportMetric(float64(size("referral_visits")-rb)/float64(nr), "B/referral_visit")
		// A day's keys merged into 20 times more, as batches do all day,
		// and the table's size then, before any VACUUM.
		day := t0.Truncate(24*time.Hour).AddDate(0, 0, 19)
		hits, refs := trafficAggregates(day, 5000)
		for i := range 20 {
			if _, err := db.AddTrafficBatch(ctx, trafficBatch(dom, 200+i), hits, refs); err != nil {
				b.Fatal(err)
			}
		}
		var n int64
		must(b, db.Pool().QueryRow(ctx, `SELECT pg_total_relation_size('crawler_hits')`).Scan(&n))
		b.ReportMetric(float64(n-hb)/float64(nh), "B/crawler_hit_after_merges")
	}
}
