package storetest

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
)

// The traffic benchmarks' helpers, the same on every engine.

// TrafficBenchDomain makes a monitored domain of accountID with an id as
// the service makes them, and returns its id.
func TrafficBenchDomain(b *testing.B, s store.Store, accountID string, at time.Time) string {
	b.Helper()
	d := store.MonitoredDomain{ID: randid.New("dom"), AccountID: accountID, Domain: randid.New("d") + ".example", CreatedAt: at, UpdatedAt: at}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) }); err != nil {
		b.Fatal(err)
	}
	return d.ID
}

// TrafficAggregates are n distinct aggregates of a day, four in five
// crawler hits, as a busy site's batch gives them: pages of 30 to 40
// bytes, a handful of agents.
func TrafficAggregates(day time.Time, n int) ([]store.CrawlerHits, []store.ReferralVisits) {
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

// TrafficBenchBatch is the i-th batch of a domain of accountID, received
// at.
func TrafficBenchBatch(accountID, domainID string, i int, at time.Time) store.TrafficBatch {
	h := sha256.Sum256(fmt.Appendf(nil, "batch %s %d", domainID, i))
	return store.TrafficBatch{ID: randid.New("tb"), AccountID: accountID, DomainID: domainID, Source: store.TrafficCloudflare, Hash: h[:],
		Lines: 20_000, ReceivedAt: at}
}

// BenchAddTrafficBatch adds batches of 5,000 aggregates to stores that
// open makes (each with an account accountID): of keys the domain has not
// (new) and of keys it has (merged into, as most are).
func BenchAddTrafficBatch(b *testing.B, open func(b *testing.B) store.Store, accountID string, at time.Time) {
	for _, same := range []bool{false, true} {
		name := "new keys"
		if same {
			name = "same keys"
		}
		b.Run(name, func(b *testing.B) {
			s := open(b)
			dom := TrafficBenchDomain(b, s, accountID, at)
			i := 0
			for b.Loop() {
				day := at.Truncate(24 * time.Hour)
				if !same {
					day = day.AddDate(0, 0, i)
				}
				hits, refs := TrafficAggregates(day, 5000)
				if _, err := s.AddTrafficBatch(ctx, TrafficBenchBatch(accountID, dom, i, at), hits, refs); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(i)/5000, "µs/aggregate")
		})
	}
}
