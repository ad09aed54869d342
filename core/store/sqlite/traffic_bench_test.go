package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/storetest"
)

// BenchmarkAddTrafficBatch adds batches of 5,000 aggregates: of keys the
// domain has not (new) and of keys it has (merged into, as most are).
func BenchmarkAddTrafficBatch(b *testing.B) {
	storetest.BenchAddTrafficBatch(b, func(b *testing.B) store.Store {
		db := open(b, filepath.Join(b.TempDir(), "aivis.db"))
		must(b, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "Account", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
		return db
	}, "acct_1", t0)
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
		dom := storetest.TrafficBenchDomain(b, db, "acct_1", t0)
		before := size()
		var nh, nr int
		for i := range 20 {
			hits, _ := storetest.TrafficAggregates(t0.Truncate(24*time.Hour).AddDate(0, 0, i), 5000)
			nh += len(hits)
			if _, err := db.AddTrafficBatch(ctx, storetest.TrafficBenchBatch("acct_1", dom, i, t0), hits, nil); err != nil {
				b.Fatal(err)
			}
		}
		mid := size()
		for i := range 20 {
			_, refs := storetest.TrafficAggregates(t0.Truncate(24*time.Hour).AddDate(0, 0, i), 25000)
			nr += len(refs)
			if _, err := db.AddTrafficBatch(ctx, storetest.TrafficBenchBatch("acct_1", dom, 100+i, t0), nil, refs); err != nil {
				b.Fatal(err)
			}
		}
		after := size()
		b.ReportMetric(float64(mid-before)/float64(nh), "B/crawler_hit")
		b.ReportMetric(float64(after-mid)/float64(nr), "B/referral_visit")
	}
}
