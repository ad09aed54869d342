package postgres_test

import (
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/storetest"
	"github.com/aivis/aivis/internal/testsvc"
)

// BenchmarkAddTrafficBatch adds batches of 5,000 aggregates: of keys the
// domain has not (new) and of keys it has (merged into, as most are).
func BenchmarkAddTrafficBatch(b *testing.B) {
	storetest.BenchAddTrafficBatch(b, func(b *testing.B) store.Store {
		db := open(b, testsvc.Postgres(b), box(b))
		must(b, db.CreateAccount(ctx, store.Account{ID: "acct_1", Name: "Account", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}))
		return db
	}, "acct_1", t0)
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
		dom := storetest.TrafficBenchDomain(b, db, "acct_1", t0)
		hb, rb := size("crawler_hits"), size("referral_visits")
		var nh, nr int
		for i := range 20 {
			day := t0.Truncate(24*time.Hour).AddDate(0, 0, i)
			hits, _ := storetest.TrafficAggregates(day, 5000)
			_, refs := storetest.TrafficAggregates(day, 25000)
			nh, nr = nh+len(hits), nr+len(refs)
			if _, err := db.AddTrafficBatch(ctx, storetest.TrafficBenchBatch("acct_1", dom, i, t0), hits, refs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(size("crawler_hits")-hb)/float64(nh), "B/crawler_hit")
		b.ReportMetric(float64(size("referral_visits")-rb)/float64(nr), "B/referral_visit")
		// A day's keys merged into 20 times more, as batches do all day,
		// and the table's size then, before any VACUUM.
		day := t0.Truncate(24*time.Hour).AddDate(0, 0, 19)
		hits, refs := storetest.TrafficAggregates(day, 5000)
		for i := range 20 {
			if _, err := db.AddTrafficBatch(ctx, storetest.TrafficBenchBatch("acct_1", dom, 200+i, t0), hits, refs); err != nil {
				b.Fatal(err)
			}
		}
		var n int64
		must(b, db.Pool().QueryRow(ctx, `SELECT pg_total_relation_size('crawler_hits')`).Scan(&n))
		b.ReportMetric(float64(n-hb)/float64(nh), "B/crawler_hit_after_merges")
	}
}
